//! Redis Cluster against real containers: it comes up with every slot covered, and a master cut
//! off on the minority side goes on granting a lock the majority hands out again.

use crate::support;

use std::time::{Duration, Instant};

use splitbrain_checker::{lock_safety, OpType};
use splitbrain_workloads::ClientConfig;
use support::{docker_skipped, Fixture, StoredRun};

const TTL: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread")]
async fn an_isolated_master_grants_the_lock_the_majority_grants_again() {
    if docker_skipped() {
        return;
    }
    let fx = Fixture::up("cluster", None).await;
    let old = fx
        .deployment
        .master_of("lock")
        .await
        .expect("a master for lock");
    let mut others = fx.deployment.node_names();
    others.retain(|n| *n != old);

    // Cut the master off from every other node; the harness still reaches it.
    let ip = |name: &str| fx.deployment.node(name).unwrap().addr.ip().to_string();
    let drops: Vec<String> = others
        .iter()
        .map(|o| format!("iptables -A INPUT -s {} -j DROP", ip(o)))
        .collect();
    fx.deployment
        .exec_ok(&old, &["sh", "-c", &drops.join(" && ")])
        .await
        .unwrap();
    for other in &others {
        let rule = format!("iptables -A INPUT -s {} -j DROP", ip(&old));
        fx.deployment
            .exec_ok(other, &["sh", "-c", &rule])
            .await
            .unwrap();
    }
    fx.fault("start", "partition", &[&old]);

    // A, whose client knows the cluster from before, locks on the old master at once.
    let mut a = fx.client("set-nx-px", TTL);
    assert!(
        fx.acquire(0, &mut a, "lock", TTL).await.is_some(),
        "the isolated master still takes writes within cluster-node-timeout"
    );

    // The majority promotes the old master's replica.
    let started = Instant::now();
    let new = loop {
        // The newest claim to the slot: the one the majority voted for.
        let master = fx.deployment.master_of("lock").await;
        if let Some(master) = master.filter(|m| *m != old) {
            break master;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no failover");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };

    // B knows the cluster only through the majority's nodes.
    let majority: Vec<(String, std::net::SocketAddr)> = fx
        .deployment
        .nodes()
        .iter()
        .filter(|n| n.name != old)
        .map(|n| (n.name.clone(), n.addr))
        .collect();
    let config = ClientConfig {
        nodes: majority,
        ..fx.client_config(TTL)
    };
    let mut b = fx.client_with("set-nx-px", config);
    assert!(
        fx.acquire(1, &mut b, "lock", TTL).await.is_some(),
        "{new}, promoted, never heard of A's lock"
    );
    let result = lock_safety::check(&fx.history());
    assert_eq!(result.double_grant_count, 1, "{:?}", result.double_grants);
    assert_eq!(result.double_grants[0].kind, "lease");

    // After the heal the old master rejoins as a replica, and A's key is gone.
    for node in fx.deployment.nodes() {
        fx.deployment
            .exec_ok(&node.name, &["iptables", "-F", "INPUT"])
            .await
            .unwrap();
    }
    let started = Instant::now();
    loop {
        let role = fx
            .deployment
            .exec_ok(&old, &["redis-cli", "ROLE"])
            .await
            .unwrap();
        if role.starts_with("slave") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{old} never rejoined: {role}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[test]
fn cluster_failover_promotes_replicas_during_a_run() {
    if docker_skipped() {
        return;
    }
    let run = StoredRun::new(&[
        "--deployment",
        "cluster",
        "--client",
        "set-nx-px",
        "--nemesis",
        "failover",
        "--nemesis-interval",
        "2s",
        "--ttl",
        "3s",
        "--time-limit",
        "12s",
        "--seed",
        "1",
    ]);
    let stdout = run.stdout();
    run.assert_verdict();
    let history = std::fs::read_to_string(run.dir.join("history.jsonl")).unwrap();
    let accepted = history
        .lines()
        .filter(|l| l.contains(r#""fault":"failover""#) && l.contains(r#""reply":"OK""#))
        .count();
    assert!(accepted >= 2, "replicas took over: {history:.2000}");
    assert!(stdout.contains("grants checked"), "{stdout}");
}

#[test]
fn killing_the_slot_master_promotes_its_replica_and_fenced_keys_share_a_slot() {
    if docker_skipped() {
        return;
    }
    let run = StoredRun::new(&[
        "--deployment",
        "cluster",
        "--client",
        "fenced",
        "--resources",
        "2",
        "--hash-tag",
        "app",
        "--nemesis",
        "kill-primary",
        // Down for longer than cluster-node-timeout (2 s), so that its replica takes over.
        "--restart-delay",
        "6s",
        "--nemesis-interval",
        "3s",
        "--time-limit",
        "15s",
        "--seed",
        "1",
    ]);
    run.assert_verdict();
    let ops = run.ops();
    let (killed, masters) = support::killed_master_and_masters(&ops);
    assert_eq!(masters[0], vec![killed.clone()], "{masters:?}");
    assert!(
        masters.iter().any(|m| !m.contains(&killed)),
        "the killed master's replica took over its slot: {masters:?}"
    );
    // The lock and its fence counter live in one slot: the script runs, grants carry tokens.
    for key in ["{app}lock-0", "{app}lock-1"] {
        assert!(
            ops.iter().any(|op| op.f == "acquire"
                && op.kind == OpType::Ok
                && op.key.as_deref() == Some(key)
                && op.fence.is_some()),
            "a fenced grant of {key}"
        );
    }
}
