//! The Redlock spec's node-restart hazard, scripted step by step against real containers:
//! a node that restarts without persistence before the TTL has passed forgets the lock it
//! granted, and a second client gets a majority that includes it. Restarting only after the
//! TTL (the spec's remedy) keeps the lock safe. And a whole run whose kills are aimed at the
//! holder's nodes (`kill-holder`) finds it.

use crate::support;

use std::time::{Duration, Instant};

use splitbrain_checker::{lock_safety, Process, Valid};
use splitbrain_workloads::{Grant, LockClient};
use support::{docker_skipped, Fixture};

const KEY: &str = "lock";
/// Long enough that a slow restart of n3 still falls well inside A's lease.
const TTL: Duration = Duration::from_secs(5);

/// Client A takes the lock on exactly n1, n2, n3 (n4 and n5 frozen while it asks).
async fn a_holds_a_bare_majority(fx: &Fixture, a: &mut Box<dyn LockClient>) -> Grant {
    for node in ["n4", "n5"] {
        fx.deployment.pause(node).await.unwrap();
    }
    fx.fault("start", "pause", &["n4", "n5"]);
    let grant = fx
        .acquire(0, a, KEY, TTL)
        .await
        .expect("A gets a majority of three");
    for node in ["n4", "n5"] {
        fx.deployment.resume(node).await.unwrap();
    }
    fx.fault("stop", "pause", &["n4", "n5"]);
    assert_eq!(grant.nodes, ["n1", "n2", "n3"]);
    grant
}

/// The script: A holds n1-n3, n3 is killed and restarted after `restart_delay`, and B tries
/// for the lock every 200 ms until it gets it. Returns the checker's result and B's failures.
async fn restart_hazard(restart_delay: Duration) -> (lock_safety::LockSafety, u32) {
    let fx = Fixture::up("redlock", None).await;
    let mut a = fx.client("redlock", TTL);
    let mut b = fx.client("redlock", TTL);
    a_holds_a_bare_majority(&fx, &mut a).await;

    fx.deployment.kill("n3").await.unwrap();
    fx.fault("start", "kill", &["n3"]);
    let restart_at = Instant::now() + restart_delay;
    let mut restarted = false;
    let mut b_failures = 0;
    let b_grant = loop {
        if !restarted && Instant::now() >= restart_at {
            fx.deployment.restart("n3").await.unwrap();
            fx.fault("stop", "kill", &["n3"]);
            restarted = true;
        }
        if let Some(grant) = fx.acquire(1, &mut b, KEY, TTL).await {
            break grant;
        }
        b_failures += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // A, a correct client, acts under the lock only while its lease lasts and never releases
    // in this script; B gives the lock back.
    fx.release(1, &mut b, KEY, &b_grant).await;
    if !restarted {
        fx.deployment.restart("n3").await.unwrap();
        fx.fault("stop", "kill", &["n3"]);
    }
    (lock_safety::check(&fx.history()), b_failures)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_immediate_restart_gives_a_double_grant() {
    if docker_skipped() {
        return;
    }
    let (result, b_failures) = restart_hazard(Duration::ZERO).await;
    assert_eq!(b_failures, 0, "B gets n3, n4 and n5 at its first try");
    assert_eq!(result.valid, Valid::False);
    assert_eq!(result.double_grant_count, 1);
    let grant = &result.double_grants[0];
    assert_eq!(
        (grant.first.process, grant.second.process),
        (Process::Client(0), Process::Client(1))
    );
    assert_eq!(
        grant.second.nodes.as_deref(),
        Some(&["n3", "n4", "n5"].map(String::from)[..])
    );
    assert!(grant.overlap_ms > 0.0);
    assert!(
        grant
            .faults
            .iter()
            .any(|f| f.fault == "kill" && f.nodes == ["n3"]),
        "the kill of n3 is named: {:?}",
        grant.faults
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_delayed_past_the_ttl_keeps_the_lock_safe() {
    if docker_skipped() {
        return;
    }
    let (result, b_failures) = restart_hazard(TTL + Duration::from_millis(500)).await;
    assert!(b_failures > 0, "B is refused while A's lease is live");
    assert_eq!(result.valid, Valid::True, "{:?}", result.double_grants);
    assert_eq!(result.holds, 2);
}

/// `--nemesis kill-holder` makes the hazard happen in a whole run: each kill hits nodes of the
/// grant just made, exactly as many as another client needs, they come back empty inside the
/// holder's lease, and another client takes the lock.
#[test]
fn kill_holder_aims_at_the_grant_and_finds_the_hazard() {
    if docker_skipped() {
        return;
    }
    support::a_fault_on_the_holder_finds_double_grants("kill-holder");
}
