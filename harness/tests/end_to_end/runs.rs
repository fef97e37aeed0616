//! Whole runs of the `splitbrain` binary against real containers: a correct lock is judged
//! valid, and a run that is interrupted or killed leaves a readable history and, with no
//! command run, nothing behind.

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use splitbrain_checker::OpType;
use support::{docker, docker_skipped, leftovers, results_dir, run_splitbrain, splitbrain};

#[test]
fn a_single_instance_lock_without_faults_is_valid_for_every_seed() {
    if docker_skipped() {
        return;
    }
    support::node_image();
    let (_keep, results) = results_dir();
    for seed in ["1", "2", "3"] {
        let out = run_splitbrain(&[
            "run",
            "--deployment",
            "single",
            "--client",
            "set-nx-px",
            "--nemesis",
            "none",
            "--time-limit",
            "4s",
            "--ttl",
            "500ms",
            "--seed",
            seed,
            "--results",
            results.to_str().unwrap(),
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "seed {seed}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("verdict  valid"), "{stdout}");
        let latest = results.join("latest");
        let index = results.join("index.html");
        let results = support::results_of(&latest);
        assert_eq!(results["valid"], serde_json::json!(true));
        assert!(
            results["lock-safety"]["holds"].as_u64().unwrap() >= 3,
            "clients really took the lock: {results}"
        );
        let test = std::fs::read_to_string(latest.join("test.json")).unwrap();
        assert!(
            test.contains(&format!("\"seed\": {seed}")) && test.contains("\"server\": \"redis 7."),
            "{test}"
        );
        assert!(latest.join("nodes/n1/redis.log").is_file());
        let report = std::fs::read_to_string(latest.join("report.html")).expect("report.html");
        assert!(report.contains("id=\"timeline\""));
        let index = std::fs::read_to_string(index).expect("index.html");
        assert!(
            index.contains("/report.html"),
            "the index links the run's report"
        );
    }
}

/// A run in the background, with its stderr lines arriving on a channel.
struct Background {
    child: Child,
    lines: mpsc::Receiver<String>,
    run_id: String,
    run_dir: PathBuf,
}

impl Background {
    /// Starts a Redlock run under kills and waits until its clients are running.
    fn start(results: &std::path::Path) -> Background {
        let run = Background::spawn(results, &["--time-limit", "2m"]);
        run.wait_for("running 5 clients");
        std::thread::sleep(Duration::from_secs(3));
        run
    }

    /// Starts `splitbrain run` with `args` and waits for its first line, which names the run.
    fn spawn(results: &std::path::Path, args: &[&str]) -> Background {
        let mut child = splitbrain()
            .args(["run", "--results", results.to_str().unwrap()])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (send, lines) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        let first = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("a first line");
        // "[   0.0s] <test> (seed N, run ID) -> DIR"
        let run_id = first
            .split("run ")
            .nth(1)
            .unwrap()
            .split(')')
            .next()
            .unwrap()
            .to_string();
        let run_dir = PathBuf::from(first.split("-> ").nth(1).unwrap().trim());
        Background {
            child,
            lines,
            run_id,
            run_dir,
        }
    }

    /// Waits for a line of the run's progress that holds `needle`.
    fn wait_for(&self, needle: &str) {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(300))
                .unwrap_or_else(|_| panic!("the run never said {needle:?}"));
            if line.contains(needle) {
                return;
            }
        }
    }

    fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
        let rc = unsafe { libc::kill(self.child.id() as i32, signal) };
        assert_eq!(rc, 0);
    }
}

fn history_len(run_dir: &std::path::Path) -> usize {
    support::read_ops(run_dir).len()
}

#[tokio::test]
async fn ctrl_c_cleans_up_and_keeps_the_history() {
    if docker_skipped() {
        return;
    }
    let (docker, _) = docker().await;
    let (_keep, results) = results_dir();
    let mut run = tokio::task::spawn_blocking(move || {
        let run = Background::start(&results);
        run.signal(libc::SIGINT);
        run
    })
    .await
    .unwrap();
    let status = tokio::task::spawn_blocking(move || {
        let status = run.child.wait().unwrap();
        let rest: Vec<String> = run.lines.try_iter().collect();
        (status, run, rest)
    })
    .await
    .unwrap();
    let (status, run, rest) = status;
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("interrupted")), "{rest:?}");
    assert_eq!(
        leftovers(&docker, &run.run_id).await,
        0,
        "containers left behind"
    );
    assert!(history_len(&run.run_dir) > 10);
    let results = support::results_of(&run.run_dir);
    assert_eq!(results["interrupted"], serde_json::json!(true));
}

/// Polls until no container or network of `run_id` is left, for at most `within`; the count
/// left at the end.
async fn leftovers_after(
    docker: &splitbrain_compose::Docker,
    run_id: &str,
    within: Duration,
) -> usize {
    let deadline = std::time::Instant::now() + within;
    loop {
        let left = leftovers(docker, run_id).await;
        if left == 0 || std::time::Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A client program that answers `hello`, then hangs with a child of its own that outlives
/// any one request, named like the program so that `pgrep -f` finds every copy.
fn hanging_client(dir: &std::path::Path) -> PathBuf {
    let program = dir.join("hangs-after-hello.sh");
    std::fs::write(
        &program,
        "#!/bin/sh\n[ \"$1\" = child ] && { sleep 600; exit; }\nread hello\n\
         echo '{\"type\":\"ok\"}'\nsh \"$0\" child &\nwait\n",
    )
    .unwrap();
    program
}

fn programs_running(program: &std::path::Path) -> String {
    let left = std::process::Command::new("pgrep")
        .args(["-f", &program.display().to_string()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&left.stdout).into_owned()
}

/// `kill -9` of the harness during bring-up, mid-run, during the heal and during the check:
/// within 10 s, with no command run, the reaper has removed the run's containers and network
/// and killed its client programs, and the history written so far checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigkill_at_any_stage_the_reaper_leaves_nothing_and_the_history_checks() {
    if docker_skipped() {
        return;
    }
    let (docker, _) = docker().await;
    let (keep, results) = results_dir();
    let program = hanging_client(keep.path());
    let client = format!("exec:sh {}", program.display());
    // (stage, the line that says the run is in it, how long after it the kill lands)
    let stages = [
        ("bring-up", None, Duration::from_millis(800)),
        ("mid-run", Some("running 2 clients"), Duration::from_secs(3)),
        ("heal", Some("time limit reached"), Duration::ZERO),
        ("check", Some("ops recorded"), Duration::ZERO),
    ];
    for (stage, line, after) in stages {
        let (results, client) = (results.clone(), client.clone());
        let run = tokio::task::spawn_blocking(move || {
            let mut run = Background::spawn(
                &results,
                &[
                    "--client",
                    &client,
                    "--nemesis",
                    "kill",
                    "--concurrency",
                    "2",
                    "--time-limit",
                    "6s",
                ],
            );
            if let Some(line) = line {
                run.wait_for(line);
            }
            std::thread::sleep(after);
            run.signal(libc::SIGKILL);
            run.child.wait().unwrap();
            run
        })
        .await
        .unwrap();
        let left = leftovers_after(&docker, &run.run_id, Duration::from_secs(10)).await;
        assert_eq!(
            left, 0,
            "killed during {stage}: containers or networks left"
        );
        assert_eq!(
            programs_running(&program),
            "",
            "killed during {stage}: client programs left"
        );
        if stage != "bring-up" {
            let out = run_splitbrain(&["check", run.run_dir.to_str().unwrap()]);
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                matches!(out.status.code(), Some(0..=2)),
                "{stage}: {stdout}"
            );
            assert!(history_len(&run.run_dir) > 0, "{stage}");
        }
    }
}

/// `splitbrain clean` while a run is going leaves it alone, says so, and the run completes;
/// `--run` still removes one run's leftovers on demand.
#[tokio::test]
async fn clean_leaves_a_live_run_alone() {
    if docker_skipped() {
        return;
    }
    let (docker, _) = docker().await;
    let (_keep, results) = results_dir();
    let run = tokio::task::spawn_blocking(move || Background::start(&results))
        .await
        .unwrap();
    let out = run_splitbrain(&["clean"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{}", support::printed(&out));
    assert!(
        stdout.contains(&format!("left run {} alone", run.run_id)),
        "{stdout}"
    );
    assert!(leftovers(&docker, &run.run_id).await > 0, "{stdout}");
    run.signal(libc::SIGINT);
    let (status, run) = tokio::task::spawn_blocking(move || {
        let mut run = run;
        (run.child.wait().unwrap(), run)
    })
    .await
    .unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "the run completes after the clean"
    );
    assert_eq!(leftovers(&docker, &run.run_id).await, 0);
}

/// A run killed together with its reaper (`kill -9` of both) leaves its containers behind: the
/// next matrix and the next run say so, naming it, and `splitbrain clean` removes them.
#[tokio::test]
async fn what_a_run_killed_with_its_reaper_left_is_mentioned_then_cleaned() {
    if docker_skipped() {
        return;
    }
    let (docker, _) = docker().await;
    let (_keep, results) = results_dir();
    let single = ["--deployment", "single", "--client", "set-nx-px"];
    let at = results.clone();
    let run = tokio::task::spawn_blocking(move || {
        let run = Background::spawn(&at, &[&single[..], &["--time-limit", "1m"]].concat());
        run.wait_for("running");
        let reaper = reaper_of(run.child.id()).expect("the run's reaper");
        // SAFETY: kill(2) on a pid this test found; no memory-safety preconditions.
        assert_eq!(unsafe { libc::kill(reaper as i32, libc::SIGKILL) }, 0);
        run.signal(libc::SIGKILL);
        let mut run = run;
        run.child.wait().unwrap();
        run
    })
    .await
    .unwrap();
    assert!(
        leftovers_after(&docker, &run.run_id, Duration::from_secs(3)).await > 0,
        "with its reaper killed first, nothing removes the run's containers"
    );
    let mentioned = |said: &str| {
        said.contains("note: earlier runs whose harness is gone left")
            && said.contains(&run.run_id)
            && said.contains("`splitbrain clean` removes them")
    };
    // A matrix says it too, though each of its cells writes its stderr to a log.
    let matrix = results.join("one-cell.toml");
    std::fs::write(
        &matrix,
        "[defaults]\ntime-limit = \"1s\"\n\n[[group]]\ndeployments = [\"single\"]\n\
         clients = [\"set-nx-px\"]\nfaults = [\"none\"]\nseeds = [1]\nexpect = \"valid\"\n",
    )
    .unwrap();
    let results = results.to_str().unwrap();
    let next = run_splitbrain(&["matrix", matrix.to_str().unwrap(), "--results", results]);
    let said = String::from_utf8_lossy(&next.stderr);
    assert!(mentioned(&said), "{}", support::printed(&next));
    let next = run_splitbrain(
        &[
            &["run", "--results", results][..],
            &single,
            &["--time-limit", "1s"],
        ]
        .concat(),
    );
    let said = String::from_utf8_lossy(&next.stderr);
    assert!(mentioned(&said), "{said}");
    let out = run_splitbrain(&["clean"]);
    assert_eq!(out.status.code(), Some(0), "{}", support::printed(&out));
    assert_eq!(
        leftovers(&docker, &run.run_id).await,
        0,
        "{}",
        support::printed(&out)
    );
}

/// The pid of the reaper (`splitbrain reap --owner HOST/PID/START`) of the harness `pid`.
fn reaper_of(pid: u32) -> Option<u32> {
    let marker = format!("/{pid}/");
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|candidate| {
            let cmdline = std::fs::read(format!("/proc/{candidate}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            args.windows(3).any(|w| {
                w[0] == b"reap"
                    && w[1] == b"--owner"
                    && String::from_utf8_lossy(w[2]).contains(&marker)
            })
        })
}

/// The nemesis ops of a run: `f`, fault, targets and parameters. A fault aimed at a holder
/// picks its targets from whoever holds (or next takes) the lock when it starts, which the
/// seed does not fix: its targets are left out.
fn nemesis_ops(run_dir: &std::path::Path) -> Vec<(String, String, Vec<String>, String)> {
    support::read_ops(run_dir)
        .into_iter()
        .filter(|op| op.process.is_nemesis())
        .map(|op| {
            let value = op.value.map(|v| v.to_string()).unwrap_or_default();
            let fault = op.fault.unwrap_or_default();
            let aims =
                splitbrain_nemesis::find_fault(&fault).is_some_and(|f| f.aims_when_started());
            let targets = if aims {
                Vec::new()
            } else {
                op.node.unwrap_or_default()
            };
            (op.f, fault, targets, value)
        })
        .collect()
}

#[test]
fn every_fault_kind_is_recorded_healed_and_reproducible_from_its_seed() {
    if docker_skipped() {
        return;
    }
    support::node_image();
    let (_keep, results) = results_dir();
    let run = |results: &std::path::Path, time_limit: &str| {
        let out = run_splitbrain(&[
            "run",
            "--nemesis",
            "all",
            "--time-limit",
            time_limit,
            "--nemesis-interval",
            "200ms",
            "--client-pause",
            "500ms",
            "--seed",
            "5",
            "--results",
            results.to_str().unwrap(),
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0..=2)),
            "{stdout}\n{stderr}"
        );
        let dir = std::fs::canonicalize(results.join("latest")).unwrap();
        let results_json = support::results_of(&dir);
        assert!(
            results_json.get("error").is_none(),
            "the heal was verified: {results_json}"
        );
        // Faults this machine cannot inject (netem, on some kernels) are skipped, and said so.
        let skipped: Vec<String> = stderr
            .lines()
            .filter_map(|l| l.split("skipping ").nth(1)?.split(':').next())
            .map(String::from)
            .collect();
        (dir, skipped)
    };
    // Every fault runs once before any runs twice; 30 s fits the whole deck of one round with
    // room to spare on a busy machine (20 s fitted 18 of 19 on a CI machine).
    let (first, skipped) = run(&results, "30s");
    let faults: Vec<String> = nemesis_ops(&first)
        .into_iter()
        .map(|(_, fault, ..)| fault)
        .collect();
    // `all` on the default 5-master Redlock: every fault that fits it.
    let redlock = splitbrain_nemesis::Layout {
        nodes: (1..=5).map(|i| format!("n{i}")).collect(),
        clients: 5,
        groups: 2,
        replication: splitbrain_compose::Replication::default(),
        clock_faults: true,
        deployments: Vec::new(),
    };
    for kind in splitbrain_nemesis::all_faults() {
        if kind.fits(&redlock).is_err() {
            continue;
        }
        let kind = kind.name();
        if skipped.iter().any(|s| s == kind) {
            continue;
        }
        assert!(
            faults.iter().any(|f| f == kind),
            "{kind} never ran: {faults:?}"
        );
    }
    let starts = nemesis_ops(&first)
        .iter()
        .filter(|op| op.0 == "start")
        .count();
    let stops = nemesis_ops(&first)
        .iter()
        .filter(|op| op.0 == "stop")
        .count();
    assert_eq!(starts, stops, "every fault started was stopped");

    // The same seed again: the same faults, targets and parameters, in the same order (one
    // run may fit a step more than the other before its time is up, and this one, shorter,
    // fits fewer: its steps are compared with the first run's first ones).
    let (again, _) = run(&results, "12s");
    let (a, b) = (nemesis_ops(&first), nemesis_ops(&again));
    let common = a.len().min(b.len());
    assert!(common >= 10, "{a:?}");
    assert_eq!(a[..common], b[..common]);
}

/// Kleppmann's second scenario with Redisson's lease watchdog: a client paused inside its
/// critical section stops renewing too, its lease runs out, the other client takes the lock,
/// and the paused one wakes up as a zombie. Each pause freezes the next client to take the
/// lock.
#[test]
fn a_paused_client_and_its_watchdog_wake_up_as_a_zombie() {
    if docker_skipped() {
        return;
    }
    support::node_image();
    let (_keep, results) = results_dir();
    let out = run_splitbrain(&[
        "run",
        "--deployment",
        "single",
        "--client",
        "watchdog",
        "--nemesis",
        "client-pause",
        "--client-pause",
        "3s",
        "--ttl",
        "1s",
        "--time-limit",
        "20s",
        "--concurrency",
        "2",
        "--seed",
        "1",
        "--results",
        results.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let latest = results.join("latest");
    let results = support::results_of(&latest);
    let safety = &results["lock-safety"];
    assert!(
        safety["stale_double_grant_count"].as_u64().unwrap() >= 1,
        "{safety}"
    );
    let first = &safety["double_grants"][0];
    assert_eq!(first["kind"], "stale");
    let faults: Vec<&str> = first["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fault"].as_str().unwrap())
        .collect();
    // Every fault named is a client pause (a hold can span two pause windows).
    assert!(
        !faults.is_empty() && faults.iter().all(|f| *f == "client-pause"),
        "{first}"
    );

    // The watchdog renews while nothing is wrong, and falls silent with its client: some
    // holder of the lock goes without any op for nearly a whole pause.
    let ops = support::read_ops(&latest);
    let renewed = ops
        .iter()
        .filter(|op| op.f == "renew" && op.kind == OpType::Ok)
        .count();
    assert!(renewed > 0, "the watchdog renews");
    let mut last_op: std::collections::HashMap<u64, (u64, bool)> = Default::default();
    let mut longest_silence_while_holding = 0;
    for op in &ops {
        let splitbrain_checker::Process::Client(p) = op.process else {
            continue;
        };
        if let Some((at, holding)) = last_op.get(&p) {
            if *holding {
                longest_silence_while_holding = longest_silence_while_holding.max(op.time - at);
            }
        }
        let holding = (op.f == "acquire" && op.kind == OpType::Ok)
            || (op.f == "renew" && op.kind != OpType::Invoke);
        last_op.insert(p, (op.time, holding));
    }
    assert!(
        longest_silence_while_holding >= 2_000_000_000,
        "a paused holder sent no renewal for {} ms",
        longest_silence_while_holding / 1_000_000
    );
}

/// A lock library that answers `hello` and then hangs on every acquire: each acquire times
/// out, nothing is ever granted, and the run says it tested nothing, never `valid`. Every
/// copy of the program, and what it started, is gone afterwards.
#[test]
fn a_run_that_granted_nothing_is_unknown_and_leaves_no_client_program() {
    if docker_skipped() {
        return;
    }
    support::node_image();
    let (keep, results) = results_dir();
    let program = hanging_client(keep.path());
    let client = format!("exec:sh {}", program.display());
    let out = run_splitbrain(&[
        "run",
        "--deployment",
        "single",
        "--client",
        &client,
        "--nemesis",
        "none",
        "--concurrency",
        "2",
        "--time-limit",
        "8s",
        "--results",
        results.to_str().unwrap(),
    ]);
    let text = support::printed(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("unknown: no acquire succeeded"), "{text}");
    let left = programs_running(&program);
    assert!(left.is_empty(), "client programs left running: {left}");
}

/// A results folder on a full disk: the first op that cannot be written stops the run at once
/// (not at its time limit), its faults are healed and its containers removed, and it exits
/// 255 naming the cause, with the verdict on what was written printed.
#[tokio::test]
async fn a_full_disk_stops_the_run_at_once_and_cleanly() {
    if docker_skipped() {
        return;
    }
    let (docker, _) = docker().await;
    let (_keep, results) = results_dir();
    std::fs::create_dir_all(&results).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&results)
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        mounted,
        "this test mounts a 256 KiB tmpfs as the results folder, which needs root (CI runs as root)"
    );
    let started = std::time::Instant::now();
    let out = run_splitbrain(&[
        "run",
        "--deployment",
        "single",
        "--client",
        "set-nx-px",
        "--time-limit",
        "2m",
        "--results",
        results.to_str().unwrap(),
    ]);
    let took = started.elapsed();
    let _ = std::process::Command::new("umount").arg(&results).status();
    let text = support::printed(&out);
    assert_eq!(out.status.code(), Some(255), "{text}");
    assert!(text.contains("No space left on device"), "{text}");
    assert!(
        took < Duration::from_secs(90),
        "the run went on for {took:?}"
    );
    let run_id = text
        .split("run ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_default()
        .to_string();
    assert!(!run_id.is_empty(), "{text}");
    assert_eq!(leftovers(&docker, &run_id).await, 0);
}

/// Nodes start at once: when one of them cannot (its container's name is taken), the
/// bring-up fails naming it and removes every container it started, the others' included;
/// a bring-up that succeeds says how long it took to answer and to form.
#[tokio::test]
async fn a_bring_up_with_a_node_that_cannot_start_leaves_nothing() {
    if docker_skipped() {
        return;
    }
    let (docker, image) = docker().await;
    let (_, redlock) = splitbrain_systems::find_topology("redlock").unwrap();
    let up = |run_id: String| {
        let (docker, image) = (docker.clone(), image.clone());
        async move {
            let options = splitbrain_compose::TopologyOptions::default();
            splitbrain_compose::Deployment::up(
                &docker,
                &run_id,
                (redlock, redlock.system()),
                &options,
                &image,
            )
            .await
        }
    };
    let run_id = format!("test-up-{:08x}", rand::random::<u32>());
    // n3's name is taken by a container of another run, which the failed bring-up must leave.
    let squatter_run = format!("{run_id}-squatter");
    let squatter = format!("splitbrain-{run_id}-n3");
    let created = std::process::Command::new("docker")
        .args(["create", "--name", &squatter, "--label"])
        .arg(format!("{}={squatter_run}", splitbrain_compose::RUN_LABEL))
        .arg(&image)
        .output()
        .expect("the docker command");
    assert!(created.status.success(), "{created:?}");
    let failed = up(run_id.clone()).await;
    let left = leftovers(&docker, &run_id).await;
    let squatter_left = leftovers(&docker, &squatter_run).await;
    splitbrain_compose::remove_run(&docker, &squatter_run)
        .await
        .unwrap();
    let error = failed
        .err()
        .expect("a bring-up whose node cannot start fails");
    assert!(error.to_string().contains("n3"), "{error}");
    assert_eq!(
        left, 0,
        "containers or networks of the failed bring-up left"
    );
    assert_eq!(squatter_left, 1, "another run's container was removed");

    let deployment = up(format!("test-up-{:08x}", rand::random::<u32>()))
        .await
        .unwrap();
    let times = deployment.bring_up();
    deployment.teardown().await.unwrap();
    assert!(
        times.ready > Duration::ZERO && times.ready <= times.formed,
        "{times:?}"
    );
}
