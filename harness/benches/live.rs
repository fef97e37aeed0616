//! Benchmarks against real containers, each measured side by side in one run:
//!
//! 1. bringing up the redlock, sentinel and cluster deployments (images already built), next
//!    to the anchor: Docker starting as many containers of the same image at once, created
//!    and started in parallel through the same API, until each answers PING. Sentinel and
//!    Cluster then form (Sentinels discover each other, slots are assigned), which no anchor
//!    of Docker's can include: their ratio is of the time until every node answered, and the
//!    time to form is printed beside it;
//! 2. the harness's own op rate (set-nx-px lock cycles with hold time 0, one key per client,
//!    concurrency 5, history recorded) next to `redis-benchmark` sending `SET key v NX PX 2000`
//!    at the same concurrency against the same server, alternated to share the machine's noise.
//!
//! Needs Docker and `redis-benchmark` (Debian's redis-tools) on this machine.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::models::ContainerCreateBody;
use bollard::query_parameters::CreateContainerOptions;
use futures_util::future::try_join_all;
use splitbrain_checker::{read_history, OpType};
use splitbrain_compose::{Deployment, Docker, TopologyOptions, RUN_LABEL};
use splitbrain_systems::{find_client, find_topology, Reach};
use splitbrain_workloads::workload::lock::{LockWorkload, Shared};
use splitbrain_workloads::workload::Workload;
use splitbrain_workloads::{ClientConfig, ClientCrashes, ClientPauses, Recorder};
use tokio_util::sync::CancellationToken;

const CONCURRENCY: usize = 5;

/// The single Redis deployment's server.
fn single_server() -> &'static dyn splitbrain_compose::System {
    find_topology("single").unwrap().1.system()
}
const ROUNDS: usize = 3;
const HARNESS_SECONDS: u64 = 8;
const BENCHMARK_REQUESTS: usize = 200_000;

#[tokio::main]
async fn main() {
    let docker = splitbrain_compose::connect().await.expect("Docker");
    let image = splitbrain_compose::image::ensure(&docker, single_server().image(), &mut |l| {
        eprintln!("  {l}")
    })
    .await
    .expect("the node image");

    for deployment in ["redlock", "sentinel", "cluster"] {
        let (mut ready, mut formed, mut anchor) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            let run_id = format!("bench-up-{round}-{:04x}", rand::random::<u16>());
            let (_, topology) = find_topology(deployment).unwrap();
            let started = Instant::now();
            let up = Deployment::up(
                &docker,
                &run_id,
                (topology, topology.system()),
                &TopologyOptions::default(),
                &image,
            )
            .await
            .expect("bring-up");
            let total = started.elapsed().as_secs_f64();
            ready.push(up.bring_up().ready.as_secs_f64());
            formed.push(total);
            let nodes = up.nodes().len();
            up.teardown().await.expect("teardown");
            anchor.push(docker_anchor(&docker, &image, nodes).await);
        }
        let ratio = mean(&ready) / mean(&anchor);
        println!(
            "{deployment} bring-up, every node answering: {}",
            seconds(&ready)
        );
        if deployment != "redlock" {
            println!(
                "{deployment} bring-up, formed:               {}",
                seconds(&formed)
            );
        }
        println!(
            "anchor, the same containers in parallel:  {}",
            seconds(&anchor)
        );
        println!("ratio {deployment} / anchor: {ratio:.2}");
    }

    let run_id = format!("bench-rate-{:04x}", rand::random::<u16>());
    let (_, single) = find_topology("single").unwrap();
    let deployment = Deployment::up(
        &docker,
        &run_id,
        (single, single.system()),
        &TopologyOptions::default(),
        &image,
    )
    .await
    .expect("bring-up");
    let node = deployment.nodes()[0].clone();
    let mut harness = Vec::new();
    let mut cpu_per_command = Vec::new();
    let mut redis = Vec::new();
    for _ in 0..ROUNDS {
        let (rate, cpu) = harness_rate(&node).await;
        harness.push(rate);
        cpu_per_command.push(cpu);
        redis.push(redis_benchmark_rate(&node));
    }
    deployment.teardown().await.expect("teardown");

    println!(
        "harness, Redis commands/s (acquire + release, history recorded): {}",
        rates(&harness)
    );
    println!(
        "harness CPU per command, microseconds:                            {}",
        cpu_per_command
            .iter()
            .map(|us| format!("{us:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "redis-benchmark SET NX PX, requests/s:                            {}",
        rates(&redis)
    );
    println!(
        "ratio harness / redis-benchmark: {:.2}",
        mean(&harness) / mean(&redis)
    );
}

/// Redis commands per second the lock workload drives, from its recorded history, and the
/// harness's CPU time per command in microseconds (its clients, recorder and runtime).
async fn harness_rate(node: &splitbrain_compose::Node) -> (f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.jsonl");
    let recorder = Arc::new(Recorder::create(&path).unwrap());
    let workload = LockWorkload {
        client: find_client("set-nx-px").unwrap(),
        concurrency: CONCURRENCY,
        ttl: Duration::from_secs(2),
        hold: Some(Duration::ZERO),
        resources: CONCURRENCY,
        hash_tag: None,
        storage: None,
        lease_check: true,
    };
    let (redis, single) = find_topology("single").unwrap();
    let config = ClientConfig::new(
        vec![(node.name.clone(), node.addr)],
        redis.connection(single, Reach::default()),
        workload.ttl,
    );
    let shared = Shared {
        recorder,
        pauses: ClientPauses::new(CONCURRENCY),
        crashes: ClientCrashes::new(CONCURRENCY),
    };
    let stop = CancellationToken::new();
    let timer = {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(HARNESS_SECONDS)).await;
            stop.cancel();
        })
    };
    let started = Instant::now();
    let cpu_before = cpu_seconds();
    workload
        .run(&[config], &shared, stop)
        .await
        .expect("the workload");
    let cpu = cpu_seconds() - cpu_before;
    let elapsed = started.elapsed().as_secs_f64();
    timer.await.unwrap();
    let ops = read_history(std::io::BufReader::new(std::fs::File::open(&path).unwrap()))
        .unwrap()
        .ops;
    let commands = ops.iter().filter(|op| op.kind == OpType::Invoke).count();
    let failed = ops
        .iter()
        .filter(|op| op.kind != OpType::Invoke && op.kind != OpType::Ok)
        .count();
    assert_eq!(
        failed, 0,
        "with one key per client every operation succeeds"
    );
    (commands as f64 / elapsed, cpu / commands as f64 * 1e6)
}

/// User and system CPU time of this process (every thread) so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

fn redis_benchmark_rate(node: &splitbrain_compose::Node) -> f64 {
    let out = std::process::Command::new("redis-benchmark")
        .args([
            "-h",
            &node.addr.ip().to_string(),
            "-p",
            &node.addr.port().to_string(),
        ])
        .args([
            "-c",
            &CONCURRENCY.to_string(),
            "-n",
            &BENCHMARK_REQUESTS.to_string(),
        ])
        .args([
            "-r",
            "1000000",
            "-q",
            "SET",
            "key:__rand_int__",
            "v",
            "NX",
            "PX",
            "2000",
        ])
        .output()
        .expect("redis-benchmark (apt-get install redis-tools)");
    let text = String::from_utf8_lossy(&out.stdout);
    // "SET key:__rand_int__ v NX PX 2000: 41841.00 requests per second, p50=0.095 msec"
    let last = text.rsplit('\r').next().unwrap_or(&text);
    last.split(": ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("cannot read redis-benchmark's output: {text}"))
}

/// Docker's own time to start `count` containers of `image` at once (created and started in
/// parallel through its API, on the default bridge) until each one's Redis answers PING.
async fn docker_anchor(docker: &Docker, image: &str, count: usize) -> f64 {
    let run_id = format!("bench-anchor-{:04x}", rand::random::<u16>());
    let labels = HashMap::from([(RUN_LABEL.to_string(), run_id.clone())]);
    let started = Instant::now();
    let addresses = try_join_all((1..=count).map(|n| {
        let name = format!("splitbrain-{run_id}-n{n}");
        let body = ContainerCreateBody {
            image: Some(image.to_string()),
            cmd: Some(single_server().command(Vec::new())),
            labels: Some(labels.clone()),
            ..Default::default()
        };
        async move {
            let options = CreateContainerOptions {
                name: Some(name.clone()),
                ..Default::default()
            };
            docker.create_container(Some(options), body).await?;
            docker.start_container(&name, None).await?;
            let inspected = docker.inspect_container(&name, None).await?;
            let ip = inspected
                .network_settings
                .and_then(|settings| settings.networks?.get("bridge")?.ip_address.clone())
                .expect("an address on the default bridge");
            Ok::<SocketAddr, bollard::errors::Error>(SocketAddr::new(
                ip.parse().unwrap(),
                single_server().port(),
            ))
        }
    }))
    .await
    .expect("starting the anchor's containers");
    try_join_all(addresses.into_iter().map(|addr| async move {
        while single_server().probe(addr).await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok::<(), ()>(())
    }))
    .await
    .unwrap();
    let elapsed = started.elapsed().as_secs_f64();
    splitbrain_compose::remove_run(docker, &run_id)
        .await
        .expect("removing the anchor's containers");
    elapsed
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn seconds(values: &[f64]) -> String {
    let shown: Vec<String> = values.iter().map(|v| format!("{v:.2} s")).collect();
    shown.join(", ")
}

fn rates(values: &[f64]) -> String {
    let shown: Vec<String> = values.iter().map(|v| format!("{v:.0}")).collect();
    shown.join(", ")
}
