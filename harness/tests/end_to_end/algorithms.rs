//! The article's lock algorithms against real Redis, each failing the way the article says
//! (and the fix not failing under the same timing): SETNX+EXPIRE stuck by a crash, a DEL
//! release hijacking the next holder's lock, lost writes from a zombie stopped by fencing, a
//! lease watchdog holding safely for many TTLs, and any lock library through `exec:`.

use crate::support;

use std::time::Duration;

use splitbrain_checker::{lock_safety, stuck_lock, Process};
use support::{docker_skipped, printed, results_dir, run_splitbrain, Fixture};

/// The newest run's results under a results folder.
fn results_json(results: &std::path::Path) -> serde_json::Value {
    support::results_of(&results.join("latest"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_between_setnx_and_expire_leaves_the_lock_stuck_and_set_nx_px_recovers() {
    if docker_skipped() {
        return;
    }
    let ttl = Duration::from_secs(1);

    let fx = Fixture::up("single", None).await;
    let (history, _) = fx.crash_then_contend("setnx-expire", ttl).await;
    let stuck = stuck_lock::check(&history, ttl, None);
    assert_eq!(stuck.stuck_period_count, 1, "{stuck:?}");
    let period = &stuck.stuck_periods[0];
    assert!(!period.recovered && period.stuck_ms >= 900.0, "{period:?}");
    // Redis agrees: the key is there with no expiry at all.
    let pttl = fx
        .deployment
        .exec_ok("n1", &["redis-cli", "PTTL", "lock"])
        .await
        .unwrap();
    assert_eq!(pttl.trim(), "-1", "the crashed client's key never expires");
    drop(fx);

    let fx = Fixture::up("single", None).await;
    let (history, waited) = fx.crash_then_contend("set-nx-px", ttl).await;
    let stuck = stuck_lock::check(&history, ttl, None);
    assert_eq!(stuck.stuck_period_count, 0, "{stuck:?}");
    assert!(
        waited < ttl + Duration::from_millis(500),
        "the lock came free with its TTL, {waited:?} after the crash"
    );
}

#[test]
fn the_client_crash_fault_sticks_setnx_expire_in_a_whole_run() {
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
        "setnx-expire",
        "--nemesis",
        "client-crash",
        "--concurrency",
        "2",
        "--hold",
        "0s",
        "--ttl",
        "500ms",
        "--time-limit",
        "6s",
        "--seed",
        "1",
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    assert!(printed(&out).contains("lock stuck"), "{}", printed(&out));
    let results = results_json(&results);
    assert!(
        results["stuck-lock"]["stuck_period_count"]
            .as_u64()
            .unwrap()
            >= 1
    );
    assert_eq!(results["lock-safety"]["double_grant_count"], 0);
}

/// A takes the lock and overruns its TTL; B takes it; A releases; C tries. Returns the
/// lock-safety result and whether C got the lock.
async fn overrun_then_release(client: &str) -> (lock_safety::LockSafety, bool) {
    let fx = Fixture::up("single", None).await;
    let ttl = Duration::from_millis(500);
    let (mut a, mut b, mut c) = (
        fx.client(client, ttl),
        fx.client(client, ttl),
        fx.client(client, ttl),
    );
    let a_grant = fx
        .acquire(0, &mut a, "lock", ttl)
        .await
        .expect("A takes it");
    tokio::time::sleep(ttl + Duration::from_millis(200)).await;
    let b_grant = fx
        .acquire(1, &mut b, "lock", ttl)
        .await
        .expect("B after A's TTL");
    fx.release(0, &mut a, "lock", &a_grant).await;
    let c_grant = fx.acquire(2, &mut c, "lock", ttl).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    if let Some(grant) = &c_grant {
        fx.release(2, &mut c, "lock", grant).await;
    }
    fx.release(1, &mut b, "lock", &b_grant).await;
    (lock_safety::check(&fx.history()), c_grant.is_some())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_del_release_past_the_ttl_hijacks_the_next_lock_and_compare_and_delete_does_not() {
    if docker_skipped() {
        return;
    }
    let (hijacked, c_got_it) = overrun_then_release("del-release").await;
    assert!(c_got_it, "A's DEL removed B's key, so C walked in");
    let lease =
        |r: &lock_safety::LockSafety| r.double_grants.iter().filter(|g| g.kind == "lease").count();
    assert_eq!(lease(&hijacked), 1, "{:?}", hijacked.double_grants);
    let pair = &hijacked
        .double_grants
        .iter()
        .find(|g| g.kind == "lease")
        .unwrap();
    assert_eq!(
        (pair.first.process, pair.second.process),
        (Process::Client(1), Process::Client(2)),
        "B and C held live leases at once"
    );

    let (canonical, c_got_it) = overrun_then_release("set-nx-px").await;
    assert!(!c_got_it, "A's compare-and-delete left B's key alone");
    assert_eq!(lease(&canonical), 0, "{:?}", canonical.double_grants);
}

/// Runs lock-set under client pauses (zombies) and returns the run's results.
fn lock_set_with_zombies(extra: &[&str]) -> (std::process::Output, serde_json::Value) {
    support::storage_image();
    let (_keep, results) = results_dir();
    let mut args = vec![
        "run",
        "--deployment",
        "single",
        "--workload",
        "lock-set",
        "--nemesis",
        "client-pause",
        "--client-pause",
        "2s",
        "--ttl",
        "1s",
        // Two clients and many short rounds: a pause lands only on a client that takes the
        // lock while armed, and the more rounds, the surer that is.
        "--concurrency",
        "2",
        "--nemesis-interval",
        "300ms",
        "--time-limit",
        "20s",
        "--seed",
        "3",
        "--results",
        results.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run_splitbrain(&args);
    let json = results_json(&results);
    assert!(
        results.join("latest/nodes/storage/postgres.log").is_file(),
        "the storage's log is kept"
    );
    (out, json)
}

#[test]
fn a_zombie_loses_writes_under_lock_set_and_fencing_stops_it() {
    if docker_skipped() {
        return;
    }
    let (out, unfenced) = lock_set_with_zombies(&["--client", "set-nx-px"]);
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let writes = &unfenced["lost-writes"];
    assert!(writes["lost_count"].as_u64().unwrap() >= 1, "{writes}");
    assert!(
        printed(&out).contains("acknowledged write"),
        "{}",
        printed(&out)
    );

    // A plain DEL turns one zombie into a chain: each release deletes the next holder's key.
    let (out, hijacked) = lock_set_with_zombies(&["--client", "del-release"]);
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let live_leases_at_once = hijacked["lock-safety"]["double_grants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["kind"] == "lease")
        .count();
    assert!(live_leases_at_once >= 1, "{}", hijacked["lock-safety"]);
    assert!(hijacked["lost-writes"]["lost_count"].as_u64().unwrap() >= 1);

    let (out, fenced) = lock_set_with_zombies(&["--client", "fenced", "--fencing"]);
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let writes = &fenced["lost-writes"];
    assert_eq!(writes["lost_count"], 0, "{writes}");
    assert!(writes["acknowledged"].as_u64().unwrap() >= 5, "{writes}");
    let rejected = fenced["fencing"]["rejected_storage_accesses"]
        .as_u64()
        .unwrap();
    assert!(
        rejected >= 1,
        "the zombie's stale access was refused: {fenced}"
    );
    assert!(
        fenced["lock-safety"]["fenced_double_grant_count"]
            .as_u64()
            .unwrap()
            >= 1,
        "{}",
        fenced["lock-safety"]
    );
    assert_eq!(fenced["fencing"]["valid"], true);
}

#[test]
fn a_lease_watchdog_holds_safely_for_several_ttls() {
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
        "none",
        "--ttl",
        "500ms",
        "--hold",
        "2s",
        "--concurrency",
        "3",
        "--time-limit",
        "7s",
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let results = results_json(&results);
    let holds = results["lock-safety"]["holds"].as_u64().unwrap();
    let renewals = results["ops"]["by_f"]["renew"]["ok"].as_u64().unwrap();
    assert!(holds >= 2, "{results}");
    // A 2 s hold renewed every TTL/3 (167 ms) renews about eleven times.
    assert!(renewals >= holds * 8, "{holds} holds, {renewals} renewals");
}

/// A run of `adapters/<adapter>/adapter.py` through the exec protocol on `deployment`; the
/// adapter's Python library (`module`, pinned in its `requirements.txt`) must be
/// installed.
fn exec_adapter(
    adapter: &str,
    module: &str,
    deployment: &str,
    extra: &[&str],
) -> (std::process::Output, serde_json::Value) {
    let python = support::python();
    let adapters = format!("{}/../adapters/{adapter}", env!("CARGO_MANIFEST_DIR"));
    let installed = std::process::Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        installed,
        "this test needs {module} in {python}: {python} -m pip install -r \
         {adapters}/requirements.txt (.ci/run installs it and sets SPLITBRAIN_PYTHON)"
    );
    support::node_image();
    let client = format!("exec:{python} {adapters}/adapter.py");
    let (_keep, results) = results_dir();
    let mut args = vec![
        "run",
        "--deployment",
        deployment,
        "--client",
        &client,
        "--results",
        results.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run_splitbrain(&args);
    let mut json = results_json(&results);
    // The ops too, for the tests that look at their times; the run's folder goes with `_keep`.
    let history = std::fs::read_to_string(results.join("latest/history.jsonl")).unwrap();
    json["history"] = history
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .collect();
    (out, json)
}

/// The causes named for a run's double grants, in order.
fn double_grant_causes(results: &serde_json::Value) -> Vec<String> {
    results["lock-safety"]["double_grants"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            g["explanation"]["cause"]
                .as_str()
                .unwrap_or("none")
                .to_string()
        })
        .collect()
}

/// redis-py's Lock (`adapters/redis-py/adapter.py`) on a single server.
fn redis_py(extra: &[&str]) -> (std::process::Output, serde_json::Value) {
    let mut args = vec!["--ttl", "1s", "--time-limit", "8s"];
    args.extend_from_slice(extra);
    exec_adapter("redis-py", "redis", "single", &args)
}

/// Under kills the adapter meets every error a restart makes (refused connections, timeouts,
/// `NoScriptError` from a server that lost redis-py's cached script) and dies of none; each
/// double grant is the restart hazard (the grants name the single node), and none is blamed on
/// the library's release.
#[test]
fn redis_py_lock_runs_through_exec_and_is_checked_like_any_client() {
    if docker_skipped() {
        return;
    }
    let (out, quiet) = redis_py(&["--nemesis", "none"]);
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert!(
        quiet["lock-safety"]["holds"].as_u64().unwrap() >= 3,
        "{quiet}"
    );

    let (out, killed) = redis_py(&["--nemesis", "kill", "--seed", "2"]);
    assert!(
        matches!(out.status.code(), Some(0..=2)),
        "a verdict, not an error: {}",
        printed(&out)
    );
    assert!(killed["error"].is_null(), "{killed}");
    assert!(killed["faults"].as_array().unwrap().len() >= 2, "{killed}");
    assert!(
        killed["lock-safety"]["holds"].as_u64().unwrap() >= 1,
        "{killed}"
    );
    let causes = double_grant_causes(&killed);
    assert!(
        causes.iter().all(|c| c == "restart-hazard"),
        "{causes:?}: {}",
        printed(&out)
    );
}

/// redis-py's own Sentinel support (`adapters/redis-py-sentinel/adapter.py`), from the
/// Sentinels and master name that `hello` gives: valid with no faults, and under failovers a
/// verdict, with every double grant named a failover though the grants name no nodes.
#[test]
fn redis_py_sentinel_finds_the_master_from_hello_and_its_double_grants_are_failovers() {
    if docker_skipped() {
        return;
    }
    let sentinel = |extra: &[&str]| {
        let mut args = vec!["--time-limit", "12s", "--ttl", "5s"];
        args.extend_from_slice(extra);
        exec_adapter("redis-py-sentinel", "redis", "sentinel", &args)
    };
    let (out, quiet) = sentinel(&["--nemesis", "none"]);
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    assert!(
        quiet["lock-safety"]["holds"].as_u64().unwrap() >= 3,
        "{quiet}"
    );

    let (out, failed_over) = sentinel(&[
        "--nemesis",
        "failover",
        "--nemesis-interval",
        "3s",
        "--seed",
        "1",
    ]);
    assert!(
        matches!(out.status.code(), Some(0..=2)),
        "a verdict, not an error: {}",
        printed(&out)
    );
    assert!(failed_over["error"].is_null(), "{failed_over}");
    let causes = double_grant_causes(&failed_over);
    assert!(
        causes.iter().all(|c| c == "failover"),
        "{causes:?}: {}",
        printed(&out)
    );
}

/// python-redis-lock (`adapters/python-redis-lock/adapter.py`), a real library that renews its
/// lease from a thread of its own and reports each renewal through the exec protocol.
fn python_redis_lock(extra: &[&str]) -> (std::process::Output, serde_json::Value) {
    let mut args = vec!["--ttl", "1s", "--concurrency", "3"];
    args.extend_from_slice(extra);
    exec_adapter("python-redis-lock", "redis_lock", "single", &args)
}

#[test]
fn a_library_renewing_by_itself_holds_for_many_ttls_with_no_faults() {
    if docker_skipped() {
        return;
    }
    let (out, quiet) = python_redis_lock(&["--nemesis", "none", "--time-limit", "8s"]);
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let holds = quiet["lock-safety"]["holds"].as_u64().unwrap();
    let renewals = quiet["ops"]["by_f"]["renew"]["ok"].as_u64().unwrap_or(0);
    assert!(holds >= 2, "{quiet}");
    // Holds of up to two TTLs, renewed every two thirds of one by the library's own thread.
    assert!(
        renewals >= 1,
        "{holds} holds, {renewals} renewals reported: {quiet}"
    );
    // Each renewal is dated when the library began it (its `renewing` report), not when it
    // came back: its invoke comes a Redis round trip before its completion. A round trip on
    // the Docker network can take under 100 µs (82 µs seen in CI); two ops recorded from one
    // report come a few µs apart.
    let history = quiet["history"].as_array().unwrap();
    let renews = history.iter().filter(|op| op["f"] == "renew");
    let (invokes, ends): (Vec<_>, Vec<_>) = renews.partition(|op| op["type"] == "invoke");
    assert!(!ends.is_empty());
    for end in ends {
        let invoke = invokes
            .iter()
            .rev()
            .find(|op| {
                op["process"] == end["process"] && op["index"].as_u64() < end["index"].as_u64()
            })
            .unwrap();
        let took_ns = end["time"].as_u64().unwrap() - invoke["time"].as_u64().unwrap();
        assert!(
            took_ns >= 20_000,
            "a renewal dated when it ended: {invoke} {end}"
        );
    }
}

/// A client pause freezes the whole program, the library's renewal thread with it: the lease
/// runs out, another client takes the lock, and the frozen holder wakes as a zombie. Stale
/// double grants, and never a stuck lock (the key the thread kept alive was held).
#[test]
fn a_library_renewing_by_itself_is_a_zombie_under_client_pause_and_never_stuck() {
    if docker_skipped() {
        return;
    }
    let (out, paused) = python_redis_lock(&[
        "--nemesis",
        "client-pause",
        "--client-pause",
        "3s",
        "--time-limit",
        "20s",
        "--seed",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let safety = &paused["lock-safety"];
    let double = safety["double_grant_count"].as_u64().unwrap();
    assert!(double >= 1, "{paused}");
    assert_eq!(
        safety["stale_double_grant_count"].as_u64(),
        Some(double),
        "the lock service kept its promise; the frozen holder did not: {safety}"
    );
    assert_eq!(paused["stuck-lock"]["valid"], true, "{paused}");
}
