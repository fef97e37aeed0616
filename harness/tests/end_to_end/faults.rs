//! Each node fault, observed against real containers: its effect while it is on, and no trace
//! of it once healed.

use crate::support;

use std::time::Duration;

use splitbrain_compose::topology::setting::Value;
use splitbrain_compose::{Deployment, TopologyOptions};
use splitbrain_nemesis::links::Links;
use splitbrain_nemesis::{find_fault, heal, Action, Target};
use splitbrain_systems::{find_client, find_topology};
use splitbrain_workloads::{ClientConfig, Outcome};
use support::{docker, docker_skipped, Fixture};

/// Whether `from` gets a PONG from `to` within a second, asked from inside `from`.
async fn reaches(fx: &Fixture, from: &str, to: &str) -> bool {
    let ip = fx.deployment.node(to).unwrap().addr.ip().to_string();
    let out = fx
        .deployment
        .exec(from, &["timeout", "1", "redis-cli", "-h", &ip, "ping"])
        .await
        .unwrap();
    out.exit_code == 0 && out.output.contains("PONG")
}

async fn redis(fx: &Fixture, node: &str, args: &[&str]) -> String {
    let mut cmd = vec!["redis-cli"];
    cmd.extend_from_slice(args);
    fx.deployment
        .exec_ok(node, &cmd)
        .await
        .unwrap()
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_pair_cannot_talk_while_the_others_can() {
    if docker_skipped() {
        return;
    }
    let fx = Fixture::up("redlock", Some(3)).await;
    let partition = find_fault("partition-isolate").unwrap();
    let grudge = serde_json::json!({ "n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"] });
    let action = Action {
        targets: vec!["n1".into(), "n2".into(), "n3".into()],
        params: serde_json::json!({ "shape": "isolate", "grudge": grudge }),
    };
    assert!(
        reaches(&fx, "n1", "n2").await,
        "connected before the partition"
    );

    partition.start(&fx.target(), &action).await.unwrap();
    assert!(!reaches(&fx, "n1", "n2").await, "n1 is cut off from n2");
    assert!(!reaches(&fx, "n3", "n1").await, "and n3 from n1");
    assert!(reaches(&fx, "n2", "n3").await, "n2 and n3 still talk");
    assert!(!partition.leftovers(&fx.target()).await.unwrap().is_empty());

    // Packet loss beside it, as a script may overlap them: each heals only its own rules.
    let loss = find_fault("packet-loss").unwrap();
    let lossy = Action {
        targets: vec!["n3".into()],
        params: serde_json::json!({ "probability": 1.0 }),
    };
    loss.start(&fx.target(), &lossy).await.unwrap();
    partition.stop(&fx.target(), &action).await.unwrap();
    assert!(reaches(&fx, "n1", "n2").await, "healed");
    assert!(partition.leftovers(&fx.target()).await.unwrap().is_empty());
    assert!(
        !reaches(&fx, "n2", "n3").await,
        "the loss outlives the partition"
    );
    loss.stop(&fx.target(), &lossy).await.unwrap();
    assert!(reaches(&fx, "n2", "n3").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bumped_clock_moves_time_on_its_node_only_and_expires_keys() {
    if docker_skipped() {
        return;
    }
    let fx = Fixture::up("redlock", Some(3)).await;
    redis(&fx, "n1", &["set", "lease", "a", "PX", "10000"]).await;
    let bump = find_fault("clock-bump").unwrap();
    let action = Action {
        targets: vec!["n1".into()],
        params: serde_json::json!({ "offset_ms": 20_000 }),
    };
    let started = bump.start(&fx.target(), &action).await.unwrap();
    let measured = started.measured.unwrap()["skew_ms"]["n1"].as_f64().unwrap();
    assert!(
        (measured - 20_000.0).abs() < 50.0,
        "TIME on n1 is 20 s ahead: {measured}"
    );
    let n1 = fx.deployment.measured_skew_ms("n1").await.unwrap();
    let n2 = fx.deployment.measured_skew_ms("n2").await.unwrap();
    assert!(
        (n1 - 20_000.0).abs() < 50.0 && n2.abs() < 50.0,
        "n1 {n1} ms, n2 {n2} ms"
    );
    assert_eq!(
        redis(&fx, "n1", &["exists", "lease"]).await,
        "0",
        "a 10 s lease is gone"
    );

    bump.stop(&fx.target(), &action).await.unwrap();
    assert!(fx.deployment.measured_skew_ms("n1").await.unwrap().abs() < 50.0);
    assert!(bump.leftovers(&fx.target()).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drifting_clock_runs_at_its_rate() {
    if docker_skipped() {
        return;
    }
    let fx = Fixture::up("single", None).await;
    let drift = find_fault("clock-drift").unwrap();
    let action = Action {
        targets: vec!["n1".into()],
        params: serde_json::json!({ "rate": 2.0 }),
    };
    drift.start(&fx.target(), &action).await.unwrap();
    let before = fx.deployment.measured_skew_ms("n1").await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = fx.deployment.measured_skew_ms("n1").await.unwrap();
    // Twice real speed: one real second adds a second of skew (give or take scheduling).
    assert!(
        (after - before - 1000.0).abs() < 200.0,
        "gained {} ms",
        after - before
    );
    drift.stop(&fx.target(), &action).await.unwrap();
    assert!(drift.leftovers(&fx.target()).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heal_clears_every_fault_at_once() {
    if docker_skipped() {
        return;
    }
    let fx = Fixture::up("redlock", Some(3)).await;
    let deployment = &fx.deployment;
    // The iptables faults first: nothing can exec into a paused node.
    let partition = find_fault("partition-isolate").unwrap();
    let grudge = serde_json::json!({ "n3": ["n1"], "n1": ["n3"] });
    let cut = Action {
        targets: vec!["n1".into(), "n3".into()],
        params: serde_json::json!({ "shape": "isolate", "grudge": grudge }),
    };
    partition.start(&fx.target(), &cut).await.unwrap();
    let loss = find_fault("packet-loss").unwrap();
    let lossy = Action {
        targets: vec!["n3".into()],
        params: serde_json::json!({ "probability": 1.0 }),
    };
    loss.start(&fx.target(), &lossy).await.unwrap();
    deployment.pause("n1").await.unwrap();
    deployment.kill("n2").await.unwrap();
    deployment
        .set_clock(
            "n3",
            splitbrain_compose::clock::ClockSkew::offset(5_000_000_000),
        )
        .await
        .unwrap();
    heal(&fx.target()).await.expect("everything healed");
    for (node, state) in deployment.health().await.unwrap() {
        assert!(state.running && !state.paused, "{node}: {state:?}");
    }
    assert!(reaches(&fx, "n2", "n3").await, "no loss rule is left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_keeps_what_the_persistence_policy_promises() {
    if docker_skipped() {
        return;
    }
    let (docker, image) = docker().await;
    let (_, single) = find_topology("single").unwrap();
    let persistence = single
        .settings()
        .iter()
        .find(|s| s.id == "persistence")
        .expect("single takes --persistence");
    for (policy, survives) in [("none", false), ("everysec", true)] {
        let run_id = format!("test-aof-{:08x}", rand::random::<u32>());
        let mut options = TopologyOptions::default();
        options.settings.set(persistence, Value::Choice(policy));
        let deployment = Deployment::up(
            &docker,
            &run_id,
            (single, single.system()),
            &options,
            &image,
        )
        .await
        .unwrap();
        deployment
            .exec_ok("n1", &["redis-cli", "set", "k", "v"])
            .await
            .unwrap();
        // everysec: the write reaches the disk within a second.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        deployment.kill("n1").await.unwrap();
        deployment.restart("n1").await.unwrap();
        let kept = deployment
            .exec_ok("n1", &["redis-cli", "exists", "k"])
            .await
            .unwrap();
        deployment.teardown().await.unwrap();
        assert_eq!(kept.trim() == "1", survives, "{policy}");
    }
}

async fn redis_del(fx: &Fixture, key: &str) {
    redis(fx, "n1", &["del", key]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blackholed_link_times_out_while_another_groups_link_works() {
    if docker_skipped() {
        return;
    }
    let fx = Fixture::up("single", None).await;
    let node = fx.deployment.node("n1").unwrap().clone();
    let links = Links::start(2, &[(node.name.clone(), node.addr)])
        .await
        .unwrap();
    let target = Target {
        links: links.clone(),
        ..fx.target()
    };
    let ttl = Duration::from_secs(2);
    let client_of = |group: usize| {
        let config = ClientConfig {
            nodes: vec![(node.name.clone(), links.address(group, "n1").unwrap())],
            ..fx.client_config(ttl)
        };
        (find_client("set-nx-px").unwrap().build)(&config).unwrap()
    };
    let (mut cut, mut clean) = (client_of(0), client_of(1));
    // Both connections are up before the fault, as in a running system.
    for client in [&mut cut, &mut clean] {
        assert!(matches!(
            client.acquire("warm-up", ttl).await,
            Outcome::Ok(_)
        ));
        redis_del(&fx, "warm-up").await;
    }
    let blackhole = find_fault("link-blackhole").unwrap();
    let action = Action {
        targets: vec!["g0->n1".into()],
        params: serde_json::json!({ "direction": "upstream" }),
    };
    blackhole.start(&target, &action).await.unwrap();
    let lost = cut.acquire("k0", ttl).await;
    assert!(
        matches!(lost, Outcome::Info(_)),
        "group 0's request vanishes, its outcome unknown: {lost:?}"
    );
    assert!(
        matches!(clean.acquire("k1", ttl).await, Outcome::Ok(_)),
        "group 1 still reaches n1"
    );
    assert_eq!(blackhole.leftovers(&target).await.unwrap().len(), 1);
    blackhole.stop(&target, &action).await.unwrap();
    assert!(blackhole.leftovers(&target).await.unwrap().is_empty());
    assert!(
        matches!(cut.acquire("k2", ttl).await, Outcome::Ok(_)),
        "healed"
    );
    links.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packet_loss_drops_what_it_is_told_to() {
    if docker_skipped() {
        return;
    }
    let fx = Fixture::up("redlock", Some(3)).await;
    let loss = find_fault("packet-loss").unwrap();
    let action = Action {
        targets: vec!["n1".into()],
        params: serde_json::json!({ "probability": 1.0 }),
    };
    loss.start(&fx.target(), &action).await.unwrap();
    assert!(
        !reaches(&fx, "n2", "n1").await,
        "every packet into n1 from n2 is dropped"
    );
    assert!(reaches(&fx, "n2", "n3").await);
    loss.stop(&fx.target(), &action).await.unwrap();
    assert!(reaches(&fx, "n2", "n1").await);
    heal(&fx.target()).await.expect("no rule left");
}

/// netem where the kernel has it; a plain refusal, naming the alternatives, where it has not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn netem_runs_or_says_clearly_why_it_cannot() {
    if docker_skipped() {
        return;
    }
    let fx = Fixture::up("redlock", Some(3)).await;
    let netem = find_fault("packet-netem").unwrap();
    match netem.preflight(&fx.target()).await {
        Err(why) => {
            assert!(
                why.contains("netem") && why.contains("packet-loss"),
                "{why}"
            );
            let out = support::run_splitbrain(&[
                "run",
                "--nemesis",
                "packet-netem",
                "--time-limit",
                "2s",
                "--results",
                fx.dir.path().join("results").to_str().unwrap(),
            ]);
            assert_eq!(out.status.code(), Some(254));
        }
        Ok(()) => {
            let action = Action::on(vec!["n1".into()]);
            netem.start(&fx.target(), &action).await.unwrap();
            assert_eq!(netem.leftovers(&fx.target()).await.unwrap().len(), 1);
            netem.stop(&fx.target(), &action).await.unwrap();
            assert!(netem.leftovers(&fx.target()).await.unwrap().is_empty());
        }
    }
}
