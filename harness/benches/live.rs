//! Benchmarks against real containers, each measured side by side in one run:
//!
//! 1. bringing up the 5-node redlock deployment (images already built);
//! 2. the harness's own op rate (set-nx-px lock cycles with hold time 0, one key per client,
//!    concurrency 5, history recorded) next to `redis-benchmark` sending `SET key v NX PX 2000`
//!    at the same concurrency against the same server, alternated to share the machine's noise.
//!
//! Needs Docker and `redis-benchmark` (Debian's redis-tools) on this machine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use splitbrain_checker::{read_history, OpType};
use splitbrain_compose::{topology, Deployment, System, TopologyOptions};
use splitbrain_workloads::workload::lock::{LockWorkload, Shared};
use splitbrain_workloads::workload::Workload;
use splitbrain_workloads::{find_client, ClientConfig, ClientCrashes, ClientPauses, Recorder};
use tokio_util::sync::CancellationToken;

const CONCURRENCY: usize = 5;
const ROUNDS: usize = 3;
const HARNESS_SECONDS: u64 = 8;
const BENCHMARK_REQUESTS: usize = 200_000;

#[tokio::main]
async fn main() {
    let docker = splitbrain_compose::connect().await.expect("Docker");
    let image = splitbrain_compose::image::ensure(
        &docker,
        splitbrain_compose::system::REDIS.image(),
        &mut |l| eprintln!("  {l}"),
    )
    .await
    .expect("the node image");

    let mut bring_ups = Vec::new();
    for round in 0..ROUNDS {
        let run_id = format!("bench-up-{round}-{:04x}", rand::random::<u16>());
        let started = Instant::now();
        let redlock = topology::find("redlock").unwrap();
        let deployment = Deployment::up(
            &docker,
            &run_id,
            (redlock, redlock.system()),
            &TopologyOptions::default(),
            &image,
        )
        .await
        .expect("bring-up");
        bring_ups.push(started.elapsed().as_secs_f64());
        deployment.teardown().await.expect("teardown");
    }
    println!("redlock 5-node bring-up: {}", seconds(&bring_ups));

    let run_id = format!("bench-rate-{:04x}", rand::random::<u16>());
    let single = topology::find("single").unwrap();
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
    let mut redis = Vec::new();
    for _ in 0..ROUNDS {
        harness.push(harness_rate(&node).await);
        redis.push(redis_benchmark_rate(&node));
    }
    deployment.teardown().await.expect("teardown");

    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    println!(
        "harness, Redis commands/s (acquire + release, history recorded): {}",
        rates(&harness)
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

/// Redis commands per second the lock workload drives, from its recorded history.
async fn harness_rate(node: &splitbrain_compose::Node) -> f64 {
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
    };
    let config = ClientConfig::new(vec![(node.name.clone(), node.addr)], workload.ttl);
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
    workload
        .run(&[config], &shared, stop)
        .await
        .expect("the workload");
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
    commands as f64 / elapsed
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

fn seconds(values: &[f64]) -> String {
    let shown: Vec<String> = values.iter().map(|v| format!("{v:.2} s")).collect();
    shown.join(", ")
}

fn rates(values: &[f64]) -> String {
    let shown: Vec<String> = values.iter().map(|v| format!("{v:.0}")).collect();
    shown.join(", ")
}
