//! Martin Kleppmann's two Redlock scenarios (2016), scripted step by step against the 5-node
//! Redlock deployment.

use crate::support;

use std::time::Duration;

use splitbrain_checker::{lock_safety, Process, Valid};
use splitbrain_compose::clock::ClockSkew;
use splitbrain_nemesis::{nemesis_op, Action};
use support::{docker_skipped, Fixture};

const KEY: &str = "lock";
const TTL: Duration = Duration::from_secs(5);

/// Cuts every client off from `nodes` (their packets from the gateway are dropped), or heals.
async fn clients_cut_off(fx: &Fixture, nodes: &[&str], cut: bool) {
    let gateway = fx.deployment.gateway().to_string();
    for node in nodes {
        let rule = if cut {
            vec!["iptables", "-A", "INPUT", "-s", &gateway, "-j", "DROP"]
        } else {
            vec!["iptables", "-F", "INPUT"]
        };
        fx.deployment.exec_ok(node, &rule).await.unwrap();
    }
    let action = Action {
        targets: nodes.iter().map(|n| n.to_string()).collect(),
        params: serde_json::json!({ "from": "clients" }),
    };
    let f = if cut { "start" } else { "stop" };
    fx.recorder.record(nemesis_op(f, "partition", &action));
}

/// "Client 1 acquires the lock on nodes A, B, C; D and E cannot be reached. The clock on
/// node C jumps forward, causing the lock to expire. Client 2 acquires the lock on C, D, E.
/// Now clients 1 and 2 both believe they hold the lock."
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_jump_and_a_partition_give_two_holders() {
    if docker_skipped() {
        return;
    }
    let fx = Fixture::up("redlock", None).await;
    let mut a = fx.client("redlock", TTL);
    let mut b = fx.client("redlock", TTL);

    clients_cut_off(&fx, &["n4", "n5"], true).await;
    let a_grant = fx
        .acquire(0, &mut a, KEY, TTL)
        .await
        .expect("A gets n1, n2, n3");
    assert_eq!(a_grant.nodes, ["n1", "n2", "n3"]);
    clients_cut_off(&fx, &["n4", "n5"], false).await;

    let jump = Action {
        targets: vec!["n3".into()],
        params: serde_json::json!({ "offset_ms": TTL.as_millis() as i64 + 1_000 }),
    };
    fx.deployment
        .set_clock(
            "n3",
            ClockSkew::offset((TTL.as_nanos() + 1_000_000_000) as i64),
        )
        .await
        .unwrap();
    fx.recorder.record(nemesis_op("start", "clock-bump", &jump));

    let b_grant = fx
        .acquire(1, &mut b, KEY, TTL)
        .await
        .expect("B gets n3 (its copy of A's key expired), n4 and n5");
    assert_eq!(b_grant.nodes, ["n3", "n4", "n5"]);
    fx.release(0, &mut a, KEY, &a_grant).await;
    fx.release(1, &mut b, KEY, &b_grant).await;
    fx.deployment
        .set_clock("n3", ClockSkew::default())
        .await
        .unwrap();
    fx.recorder.record(nemesis_op("stop", "clock-bump", &jump));

    let result = lock_safety::check(&fx.history());
    assert_eq!(result.valid, Valid::False);
    assert_eq!(result.double_grant_count, 1);
    let grant = &result.double_grants[0];
    assert_eq!(grant.kind, "lease", "both leases were live");
    let faults: Vec<&str> = grant.faults.iter().map(|f| f.fault.as_str()).collect();
    assert!(
        faults.contains(&"clock-bump") && faults.contains(&"partition"),
        "{faults:?}"
    );
}

/// "Client 1 acquires the lock, then pauses (a GC pause) for longer than the lease. The lock
/// expires; client 2 acquires it. Client 1 resumes and still believes it holds the lock."
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_client_wakes_up_as_a_zombie() {
    if docker_skipped() {
        return;
    }
    let fx = Fixture::up("redlock", None).await;
    let ttl = Duration::from_secs(2);
    let mut a = fx.client("redlock", ttl);
    let mut b = fx.client("redlock", ttl);

    let a_grant = fx
        .acquire(0, &mut a, KEY, ttl)
        .await
        .expect("A gets the lock");
    let pause = Action::on(vec!["client-0".into()]);
    fx.recorder
        .record(nemesis_op("start", "client-pause", &pause));
    // A is frozen past its TTL; meanwhile B waits for the lock and gets it.
    let b_grant = loop {
        if let Some(grant) = fx.acquire(1, &mut b, KEY, ttl).await {
            break grant;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    fx.recorder
        .record(nemesis_op("stop", "client-pause", &pause));
    // A carries on as if no time had passed, finishes its work and releases.
    fx.release(0, &mut a, KEY, &a_grant).await;
    fx.release(1, &mut b, KEY, &b_grant).await;

    let result = lock_safety::check(&fx.history());
    assert_eq!(result.valid, Valid::False);
    assert_eq!(result.double_grant_count, 1);
    let grant = &result.double_grants[0];
    assert_eq!(grant.kind, "stale", "Redis kept its promise; A did not");
    assert_eq!(
        (grant.first.process, grant.second.process),
        (Process::Client(0), Process::Client(1))
    );
    assert!(grant.first.end_ms > grant.first.lease_end_ms);
    assert!(
        grant
            .faults
            .iter()
            .any(|f| f.fault == "client-pause" && f.stop_ms.is_some()),
        "the pause is named: {:?}",
        grant.faults
    );
}

/// `--nemesis clock-holder` makes the first scenario's clock jump happen in a whole run: each
/// jump hits nodes of the grant just made, exactly as many as another client needs, their
/// copies of the key expire at once, and another client takes the lock.
#[test]
fn clock_holder_aims_at_the_grant_and_finds_double_grants() {
    if docker_skipped() {
        return;
    }
    support::a_fault_on_the_holder_finds_double_grants("clock-holder");
}
