//! `splitbrain run`: bring up, run, heal, tear down, check, report.
//!
//! The run's work happens in a spawned task so that an error or a panic anywhere in it still
//! comes back here, where the run's containers are removed and the history written so far is
//! checked and kept.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use splitbrain_checker::stream::RunFacts;
use splitbrain_compose::{image, Deployment};
use splitbrain_nemesis::links::{toxiproxy, LinkState, Links, Toxics};
use splitbrain_nemesis::{Nemesis, Target};
use splitbrain_systems::Reach;
use splitbrain_workloads::workload::lock::{Shared, WorkloadError};
use splitbrain_workloads::{ClientConfig, ClientCrashes, ClientPauses, Recorder};
use tokio_util::sync::CancellationToken;

use crate::check::history::{causes_so_far, check_history};
use crate::error::{Exit, HarnessError};
use crate::progress;
use crate::spec::{Causes, TestSpec};
use crate::store::{RunDir, TestRecord, Versions, FORMAT};
use crate::summary;

/// A run done: how it ended, and its folder.
pub struct Ran {
    pub exit: Exit,
    pub dir: std::path::PathBuf,
}

/// Runs one test. `interrupt` is cancelled on Ctrl-C or SIGTERM.
pub async fn run(spec: TestSpec, interrupt: CancellationToken) -> Result<Ran, HarnessError> {
    let docker = splitbrain_compose::connect()
        .await
        .map_err(anyhow::Error::from)?;
    let started = chrono::Utc::now();
    let unwritable = |e: anyhow::Error| {
        HarnessError::BadInput(format!(
            "{e:#}: choose a results folder this user can write, with --results"
        ))
    };
    crate::library::install_for(&spec, &interrupt).await?;
    let dir = RunDir::create(&spec.results, &spec.name, started).map_err(unwritable)?;
    crate::logging::to_file(&dir.log()).map_err(unwritable)?;
    let run_id = format!("{}-{:04x}", started.format("%H%M%S"), rand::random::<u16>());
    let mut record = TestRecord {
        format: FORMAT,
        spec: &spec,
        run_id: &run_id,
        started: started.to_rfc3339(),
        command: spec.command_line(),
        versions: Versions {
            splitbrain: env!("CARGO_PKG_VERSION"),
            ..Versions::default()
        },
    };
    dir.write_test(&record).map_err(unwritable)?;
    progress::step(&format!(
        "{} (seed {}, run {run_id}) -> {}",
        spec.name,
        spec.seed(),
        dir.path.display()
    ));
    crate::reaper::mention_abandoned(&docker).await;

    let core = tokio::spawn(run_core(
        spec.clone(),
        docker.clone(),
        run_id.clone(),
        dir.path.clone(),
        interrupt.clone(),
    ));
    let Ended {
        versions,
        error,
        unsupported,
        broken_client,
    } = ended(core.await);
    // Whatever happened above, nothing of this run may stay behind.
    remove_left(&docker, &run_id).await;
    if let Some(why) = unsupported {
        return Err(HarnessError::BadInput(why));
    }
    if let Some(versions) = versions {
        record.versions = versions;
        dir.write_test(&record)?;
    }

    let interrupted = interrupt.is_cancelled();
    let mut results = check_history(&dir.history(), interrupted, error, spec.run_facts())?;
    results.pace = spec.pace.as_ref().map(|pace| pace.line());
    let title = format!(
        "{} (seed {}) in {:.1} s -> {}",
        spec.name,
        spec.seed(),
        (chrono::Utc::now() - started).num_milliseconds() as f64 / 1000.0,
        dir.path.display()
    );
    // The verdict is printed before anything more is written: a full disk loses files, never
    // the verdict.
    if progress::summaries() {
        stdout!(
            "{}",
            summary::render(&title, &results, progress::findings_shown())
        );
    }
    dir.write_results(&results)?;
    dir.link_latest(&spec.results)?;
    crate::report::write_after_run(&dir.path, &spec.results);
    let report = dir.path.join("report.html");
    if progress::summaries() && report.is_file() {
        stdoutln!("  report   {}", report.display());
    }
    if let Some(why) = broken_client {
        return Err(HarnessError::BadInput(format!(
            "{why}; the history so far is in {}",
            dir.history().display()
        )));
    }
    let exit = if results.error.is_some() {
        Exit::Crash
    } else if interrupted {
        Exit::Interrupted
    } else {
        Exit::Verdict(results.valid)
    };
    Ok(Ran {
        exit,
        dir: dir.path,
    })
}

/// How a run's core ended: the versions it found, or the error that ended it, a fault this
/// machine cannot inject, or a client that broke the protocol (bad input, not a crash).
struct Ended {
    versions: Option<Versions>,
    error: Option<String>,
    unsupported: Option<String>,
    broken_client: Option<String>,
}

fn ended(joined: Result<anyhow::Result<Versions>, tokio::task::JoinError>) -> Ended {
    let mut unsupported = None;
    let mut broken_client = None;
    let (versions, error) = match joined {
        Ok(Ok(versions)) => (Some(versions), None),
        Ok(Err(e)) => match e.downcast::<Unsupported>() {
            Ok(Unsupported(why)) => {
                unsupported = Some(why);
                (None, None)
            }
            Err(e) => match e.downcast_ref::<WorkloadError>() {
                Some(WorkloadError::Broken(why)) => {
                    broken_client = Some(why.clone());
                    (None, Some(why.clone()))
                }
                _ => (None, Some(format!("{e:#}"))),
            },
        },
        Err(e) if e.is_panic() => (None, Some(format!("the harness panicked: {e}"))),
        Err(e) => (None, Some(format!("the run was cancelled: {e}"))),
    };
    Ended {
        versions,
        error,
        unsupported,
        broken_client,
    }
}

/// Removes whatever of the run is left in Docker, saying what it removed.
async fn remove_left(docker: &splitbrain_compose::Docker, run_id: &str) {
    match splitbrain_compose::remove_run(docker, run_id).await {
        Ok(left) if !left.containers.is_empty() => {
            progress::step(&format!("removed {} container(s)", left.containers.len()))
        }
        Ok(_) => {}
        Err(e) => progress::step(&format!(
            "could not remove the run's containers ({e}); run `splitbrain clean`"
        )),
    }
}

/// A fault this machine cannot inject (a kernel feature it lacks): the run stops before any
/// client starts, and the user is told what to use instead.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Unsupported(String);

/// Image, bring-up, workload under faults, heal, logs, teardown.
async fn run_core(
    spec: TestSpec,
    docker: splitbrain_compose::Docker,
    run_id: String,
    dir: std::path::PathBuf,
    interrupt: CancellationToken,
) -> anyhow::Result<Versions> {
    let dir = RunDir::at(&dir);
    // A missing image is built once, in a minute or so: one step says so and where its
    // output goes, and the output itself goes there (a terminal shows its latest line).
    let mut announced = false;
    let mut show = |line: &str| {
        if !std::mem::replace(&mut announced, true) {
            progress::step(&format!(
                "building a missing image, once; its output goes to {}",
                dir.path.join("splitbrain.log").display()
            ));
        }
        progress::tool_output(line);
    };
    let images = async {
        let node = image::ensure(&docker, spec.server().image(), &mut show).await?;
        let storage = if spec.needs_storage() && !spec.server().serves_storage() {
            Some(image::ensure(&docker, &image::STORAGE, &mut show).await?)
        } else {
            None
        };
        anyhow::Ok((node, storage))
    };
    let (image, storage_image) = tokio::select! {
        images = images => images?,
        () = interrupt.cancelled() => anyhow::bail!("interrupted while building images"),
    };
    let topology = spec.deployment();
    let bring_up = Instant::now();
    let options = spec.topology_options();
    let mut deployment = tokio::select! {
        d = Deployment::up(&docker, &run_id, (topology, spec.server()), &options, &image) => d?,
        () = interrupt.cancelled() => anyhow::bail!("interrupted during bring-up"),
    };
    let storage = match &storage_image {
        Some(storage_image) => Some(tokio::select! {
            s = deployment.start_storage(storage_image) => s?.addr,
            () = interrupt.cancelled() => anyhow::bail!("interrupted during bring-up"),
        }),
        // The server is the database itself: the document lives beside the locks, reached
        // directly, not through the client groups' links.
        None if spec.needs_storage() => deployment.nodes().first().map(|node| node.addr),
        None => None,
    };
    progress::step(&format!(
        "{} node(s) up in {:.2} s on {}",
        deployment.nodes().len(),
        bring_up.elapsed().as_secs_f64(),
        deployment.network()
    ));
    let versions = Versions {
        splitbrain: env!("CARGO_PKG_VERSION"),
        server: deployment.server_version().await,
        node_image: Some(image),
        storage_image,
    };

    let outcome = exercise(&spec, &deployment, storage, &dir, &interrupt).await;
    if let Err(e) = deployment.save_logs(&dir.nodes()).await {
        progress::step(&format!("could not save node logs: {e}"));
    }
    deployment.teardown().await?;
    outcome?;
    Ok(versions)
}

/// The workload and the nemesis side by side until the time limit, then heal.
async fn exercise(
    spec: &TestSpec,
    deployment: &Deployment,
    storage: Option<std::net::SocketAddr>,
    dir: &RunDir,
    interrupt: &CancellationToken,
) -> anyhow::Result<()> {
    let recorder = Arc::new(Recorder::create(&dir.history()).context("creating history.jsonl")?);
    let (links, api) = client_links(spec, deployment).await?;
    let configs = client_configs(spec, deployment, &links);
    let shared = Shared {
        recorder: recorder.clone(),
        pauses: ClientPauses::new(spec.concurrency()),
        crashes: ClientCrashes::new(spec.concurrency()),
    };
    let workload = spec.workload(storage)?;
    workload.prepare().await?;
    let target = Target {
        deployment: deployment.clone(),
        clients: shared.pauses.clone(),
        crashes: shared.crashes.clone(),
        links: links.clone(),
        key: workload.key(),
        grants: shared.recorder.grants(),
    };
    let nemesis = nemesis(spec, &target).await?;
    let stop = interrupt.child_token();
    progress::step(&format!(
        "running {} clients for {} with faults: {}",
        spec.concurrency(),
        humantime::format_duration(spec.time_limit()),
        if nemesis.faults.is_empty() {
            "none".to_string()
        } else {
            // What runs, after the faults this machine cannot inject were skipped.
            let names: Vec<&str> = nemesis.faults.iter().map(|f| f.name()).collect();
            names.join(",")
        }
    ));
    let clients = async {
        let result = workload.run(&configs, &shared, stop.clone()).await;
        stop.cancel();
        result.map_err(anyhow::Error::from)
    };
    let faults = async {
        if nemesis.faults.is_empty() {
            return Ok(());
        }
        let result = nemesis.run(&target, &recorder, stop.clone()).await;
        if result.is_err() {
            stop.cancel();
        }
        result.map(|_| ()).map_err(anyhow::Error::from)
    };
    let stopped_at_first = std::sync::OnceLock::new();
    let watcher = async {
        if let Some(causes) = &spec.limits.stop_at_first {
            let history = (dir.history(), recorder.started());
            let found = first_of(history, causes, spec.run_facts(), &stop).await;
            if let Some(found) = found {
                let _ = stopped_at_first.set(found);
                stop.cancel();
            }
        }
    };
    let timer = keep_time(spec, &recorder, &stop, interrupt, &stopped_at_first);
    let roles = async {
        if deployment.replication().fails_over() {
            let watching = stop.clone();
            let (deployment, key) = (deployment.clone(), target.key.clone());
            splitbrain_nemesis::roles::watch_master(deployment, &key, &recorder, watching).await;
        }
    };
    let (clients, faults, (), (), ()) = tokio::join!(clients, faults, watcher, timer, roles);
    // The faults are healed by now: what the storage holds is what stays.
    let final_read = workload.final_read(&configs, &recorder).await;
    links.shutdown();
    if let Some(api) = api {
        api.abort();
    }
    if let Some(e) = recorder.take_error() {
        anyhow::bail!("writing the history failed: {e}");
    }
    progress::step(&format!("{} ops recorded", recorder.len()));
    clients?;
    faults?;
    final_read?;
    Ok(())
}

/// The nemesis of the run: its faults, less those this machine cannot inject where the run
/// asked for every fault (`every`), which are skipped with a word; otherwise such a fault
/// refuses the run.
async fn nemesis(spec: &TestSpec, target: &Target) -> anyhow::Result<Nemesis> {
    let mut faults = spec.faults();
    for fault in spec.faults() {
        if let Err(why) = fault.preflight(target).await {
            if !spec.nemesis.nemesis.every {
                return Err(Unsupported(why).into());
            }
            progress::step(&format!("skipping {}: {why}", fault.name()));
            faults.retain(|f| f.name() != fault.name());
        }
    }
    Ok(Nemesis {
        faults,
        options: spec.nemesis_options(),
        seed: spec.seed(),
        script: spec
            .nemesis
            .script
            .as_ref()
            .map(|script| script.faults.clone()),
    })
}

/// Says how the run goes every few seconds until the time limit, a stop, or the history
/// cannot be written; then stops the clients and the nemesis, says why, and warns where the
/// machine was too busy for the run's timing to be trusted.
async fn keep_time(
    spec: &TestSpec,
    recorder: &Recorder,
    stop: &CancellationToken,
    interrupt: &CancellationToken,
    stopped_at_first: &std::sync::OnceLock<String>,
) {
    let history_lost = recorder.failed();
    let started = tokio::time::Instant::now();
    let deadline = started + spec.time_limit();
    let mut ticks = tokio::time::interval(progress::status_interval());
    ticks.tick().await;
    let mut load = crate::busy::Load::default();
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => break,
            () = stop.cancelled() => break,
            () = history_lost.cancelled() => break,
            _ = ticks.tick() => {
                load.sample();
                let faults = recorder.active_faults();
                progress::status(&format!(
                    "running: {:.0} of {:.0} s, {} ops, faults now: {}",
                    started.elapsed().as_secs_f64(),
                    spec.time_limit().as_secs_f64(),
                    recorder.len(),
                    if faults.is_empty() { "none".to_string() } else { faults.join("; ") }
                ));
            }
        }
    }
    stop.cancel();
    if history_lost.is_cancelled() {
        progress::step("the history cannot be written: stopping clients, healing faults");
    } else if interrupt.is_cancelled() {
        progress::step("interrupted: stopping clients, healing faults, cleaning up");
    } else if let Some(found) = stopped_at_first.get() {
        progress::step(&format!("{found}: stopping clients, healing faults"));
    } else {
        progress::step("time limit reached: stopping clients, healing faults");
    }
    load.sample();
    if let Some(warning) = load.warning() {
        progress::step(&warning);
    }
}

/// `--stop-at-first`: looks at the history at `path` (whose time 0 is `started`) as it is
/// written, about once a second (less often where a look takes long), until a violation is
/// explained as one of `causes` or `stop` is cancelled; returns the words that say what was
/// found, and when.
async fn first_of(
    (path, started): (std::path::PathBuf, Instant),
    causes: &Causes,
    facts: RunFacts,
    stop: &CancellationToken,
) -> Option<String> {
    let mut wait = Duration::from_secs(1);
    loop {
        tokio::select! {
            () = stop.cancelled() => return None,
            () = tokio::time::sleep(wait) => {}
        }
        let looked = Instant::now();
        let path = path.clone();
        let named = tokio::task::spawn_blocking(move || causes_so_far(&path, facts)).await;
        // A look should cost the run at most a fifth of the machine.
        wait = wait.max(looked.elapsed() * 4);
        // A line half written or an unreadable moment: look again next time.
        let Ok(Ok(named)) = named else { continue };
        if let Some((cause, _)) = named.into_iter().find(|(c, _)| causes.contains(*c)) {
            return Some(format!(
                "the first violation explained as {} at {:.1} s",
                cause.label(),
                started.elapsed().as_secs_f64()
            ));
        }
    }
}

/// The client groups' links to the nodes through the link proxy (none without client groups),
/// with their baseline jitter, and toxiproxy's API on them where asked for.
async fn client_links(
    spec: &TestSpec,
    deployment: &Deployment,
) -> anyhow::Result<(Links, Option<tokio::task::JoinHandle<std::io::Result<()>>>)> {
    let nodes: Vec<(String, std::net::SocketAddr)> = deployment
        .nodes()
        .iter()
        .map(|n| (n.name.clone(), n.addr))
        .collect();
    let links = if spec.client_groups() > 0 {
        Links::start(spec.client_groups(), &nodes)
            .await
            .context("starting the client link proxies")?
    } else {
        Links::default()
    };
    // A group cut off from a node is cut off from the companion on it too (its Sentinel).
    for node in deployment.nodes() {
        if let Some(companion) = node.companion {
            links
                .carry(&node.name, companion)
                .await
                .context("starting the client link proxies to the nodes' companions")?;
        }
    }
    if !spec.nemesis.link_jitter.is_zero() {
        let jitter = Toxics {
            jitter: spec.nemesis.link_jitter,
            ..Toxics::default()
        };
        links.set_baseline(LinkState {
            upstream: jitter.clone(),
            downstream: jitter,
            reset: false,
        });
    }
    let api = match spec.nemesis.toxiproxy_port {
        Some(port) => {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                .await
                .with_context(|| format!("binding the toxiproxy API to 127.0.0.1:{port}"))?;
            progress::step(&format!(
                "toxiproxy API on http://127.0.0.1:{port}, proxies: {}",
                links.names().join(", ")
            ));
            Some(tokio::spawn(toxiproxy::serve(links.clone(), listener)))
        }
        None => None,
    };
    Ok((links, api))
}

/// Each client group's config: the nodes as that group reaches them (straight, or through its
/// links), and how they relate.
fn client_configs(spec: &TestSpec, deployment: &Deployment, links: &Links) -> Vec<ClientConfig> {
    let announced: Vec<(String, std::net::IpAddr)> = deployment
        .nodes()
        .iter()
        .map(|n| (n.name.clone(), n.addr.ip()))
        .collect();
    let config = |nodes, companions| {
        let reach = Reach {
            companions,
            announced: announced.clone(),
        };
        let connection = spec.service().connection(spec.deployment(), reach);
        ClientConfig {
            options: spec.client_options(),
            ..ClientConfig::new(nodes, connection, spec.workload.ttl)
        }
    };
    let nodes = deployment.nodes();
    if spec.client_groups() == 0 {
        return vec![config(
            nodes.iter().map(|n| (n.name.clone(), n.addr)).collect(),
            nodes
                .iter()
                .filter_map(|n| Some((n.name.clone(), n.companion?)))
                .collect(),
        )];
    }
    (0..spec.client_groups())
        .map(|group| {
            config(
                nodes
                    .iter()
                    .filter_map(|n| Some((n.name.clone(), links.address(group, &n.name)?)))
                    .collect(),
                nodes
                    .iter()
                    .filter_map(|n| {
                        let carried = links.carried_address(group, &n.name, n.companion?)?;
                        Some((n.name.clone(), carried))
                    })
                    .collect(),
            )
        })
        .collect()
}
