//! PostgreSQL, the article's third alternative: its server comes up and back after a crash,
//! its advisory locks are valid without faults, a holder cut off at the network is a zombie
//! once the server's keepalive ends its session, and a transaction-level lock's write cannot
//! land after its session ended (so docs/running.md's example of it loses no write).

use crate::support;

use std::time::Duration;

use splitbrain_workloads::storage::{Storage, StorageConfig};
use splitbrain_workloads::Outcome;
use support::{docker_skipped, granted, printed, CutOff, Fixture, StoredRun};

const TTL: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_server_comes_back_after_a_crash_even_when_restarted_at_once() {
    if docker_skipped() {
        return;
    }
    let fixture = Fixture::up("postgres", None).await;
    let deployment = &fixture.deployment;
    assert_eq!(deployment.node_names(), ["n1"]);
    let version = deployment.server_version().await.expect("a version");
    assert!(version.starts_with("postgres 15."), "{version}");
    // A restart asked for while the crash is still under way (a short kill fault) is kept,
    // and the postmaster's backends die with it, so the new one can start.
    for _ in 0..3 {
        deployment.kill("n1").await.expect("crashing the server");
        deployment.restart("n1").await.expect("the server restarts");
    }
    let mut client = fixture.client("pg-advisory", TTL);
    client.prepare().await.unwrap();
    assert!(matches!(client.acquire("lock", TTL).await, Outcome::Ok(_)));
}

#[test]
fn postgres_advisory_locks_are_valid_without_faults() {
    if docker_skipped() {
        return;
    }
    support::postgres_image();
    for (client, fencing) in [("pg-advisory", true), ("pg-advisory-xact", false)] {
        let mut args = vec![
            "--deployment",
            "postgres",
            "--client",
            client,
            "--workload",
            "lock-set",
            "--nemesis",
            "none",
            "--time-limit",
            "8s",
        ];
        if fencing {
            args.push("--fencing");
        }
        let run = StoredRun::new(&args);
        run.assert_exit(0);
        let results = run.results();
        let acknowledged = results["lost-writes"]["acknowledged"].as_u64().unwrap_or(0);
        assert!(acknowledged >= 2, "{client}: {}", printed(&run.out));
        assert!(run.dir.join("nodes/n1/postgres.log").is_file());
    }
}

/// The transaction lock in the `lock` workload, which has no document: the lock's transaction
/// holds it until the release, and nothing is read in it (a read of a document the workload
/// never made once failed there, its rollback freed the lock under its holder, and the run
/// reported 206 double grants with no fault).
#[test]
fn the_transaction_lock_without_a_write_is_valid_without_faults() {
    if docker_skipped() {
        return;
    }
    support::postgres_image();
    let run = StoredRun::new(&[
        "--deployment",
        "postgres",
        "--client",
        "pg-advisory-xact",
        "--nemesis",
        "none",
        "--time-limit",
        "8s",
    ]);
    run.assert_exit(0);
    let results = run.results();
    assert!(
        results["lock-safety"]["holds"].as_u64().unwrap() >= 2,
        "{results}"
    );
    assert!(
        !run.ops().iter().any(|op| op.f == "read"),
        "the lock workload reads nothing"
    );
}

/// Cuts group 0 off until the server's keepalive has ended its sessions (the TTL, and some
/// to spare on a busy machine), then runs `while_cut`, then heals.
async fn while_group_0_is_cut<T>(
    cut: &CutOff,
    while_cut: impl std::future::Future<Output = T>,
) -> T {
    cut.cut().await;
    tokio::time::sleep(TTL * 3).await;
    let result = while_cut.await;
    cut.heal().await;
    result
}

/// The PostgreSQL server's address, where the storage table lives.
fn storage(cut: &CutOff) -> StorageConfig {
    StorageConfig {
        addr: cut.fixture.deployment.node("n1").unwrap().addr,
        fencing: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pg_advisory_holder_cut_off_past_its_keepalive_loses_its_lock_without_knowing() {
    if docker_skipped() {
        return;
    }
    let cut = CutOff::up("postgres").await;
    let mut holder = cut.client("pg-advisory", 0, TTL);
    let mut other = cut.client("pg-advisory", 1, TTL);
    let held = granted(&mut holder, TTL).await;
    // Held: the other group waits out the lock wait and is refused.
    other.prepare().await.unwrap();
    assert!(matches!(other.acquire("lock", TTL).await, Outcome::Fail(_)));

    let taken = while_group_0_is_cut(&cut, async { other.acquire("lock", TTL).await }).await;
    let Outcome::Ok(taken) = taken else {
        panic!("the server should have ended the cut-off session and freed its lock: {taken:?}");
    };
    // The fencing token of the new grant is above the zombie's.
    assert!(taken.fence > held.fence, "{taken:?} after {held:?}");
    // The zombie learns only when it tries to give the lock back.
    assert!(
        !matches!(holder.release("lock", &held).await, Outcome::Ok(())),
        "the cut-off holder's lock was no longer its own"
    );
    let _ = other.release("lock", &taken).await;
    cut.links.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pg_advisory_xact_holder_cut_off_cannot_commit_its_write() {
    if docker_skipped() {
        return;
    }
    let cut = CutOff::up("postgres").await;
    let storage = Storage::connect(storage(&cut)).await.unwrap();
    storage.create_document().await.unwrap();
    let mut holder = cut.client("pg-advisory-xact", 0, TTL);
    let mut other = cut.client("pg-advisory-xact", 1, TTL);
    granted(&mut holder, TTL).await;
    let in_lock = holder
        .storage_in_lock(false)
        .expect("the lock's transaction is open");
    let Outcome::Ok(doc) = in_lock.read(None).await else {
        panic!("the holder reads the document inside its transaction");
    };

    let taken = while_group_0_is_cut(&cut, async { other.acquire("lock", TTL).await }).await;
    assert!(matches!(taken, Outcome::Ok(_)), "{taken:?}");
    // The zombie's write goes into a transaction the server has rolled back.
    let mut written = doc.clone();
    written.push(1);
    let write = in_lock.write(&written, None).await;
    assert!(!matches!(write, Outcome::Ok(())), "{write:?}");
    let Outcome::Ok(after) = storage.read(None).await else {
        panic!("the document reads");
    };
    assert_eq!(after, doc, "the cut-off holder's write never landed");
    cut.links.shutdown();
}

/// `link-drop-holder` cuts the group of the holder it found, each time: the cut-off holder's
/// session ends, the other group takes the lock, and the zombie, which does not watch its
/// session, writes (a `stale` double
/// grant); coverage counts the grants the cuts reached.
#[test]
fn link_drop_holder_cuts_the_holders_own_group_and_makes_a_zombie() {
    if docker_skipped() {
        return;
    }
    support::postgres_image();
    let (workers, groups) = (4, 2);
    let run = support::cut_off_holder_run(
        "postgres",
        "pg-advisory",
        &[
            "--concurrency",
            &workers.to_string(),
            "--client-groups",
            &groups.to_string(),
            "--no-lease-check",
        ],
    );
    run.assert_exit(1);
    let cuts: Vec<_> = run
        .ops()
        .into_iter()
        .filter(|op| op.f == "start" && op.fault.as_deref() == Some("link-drop-holder"))
        .filter_map(|op| {
            let holder = op.measured.as_ref()?["holder"].as_u64()?;
            Some((holder, op.node.unwrap_or_default()))
        })
        .collect();
    assert!(
        !cuts.is_empty(),
        "no cut found a holder: {}",
        printed(&run.out)
    );
    for (holder, links) in &cuts {
        let group = holder % workers % groups;
        assert_eq!(links, &[format!("g{group}->n1")], "holder {holder}");
    }
    let results = run.results();
    let stale = results["lock-safety"]["stale_double_grant_count"].as_u64();
    assert!(stale >= Some(1), "{}", printed(&run.out));
    assert!(results["coverage"]["grants_faulted"].as_u64() >= Some(1));
}

/// docs/running.md's `pg-advisory-xact` example, run as printed there: invalid on its double
/// grants, each a cut-off holder, and not one write lost, as the page says.
#[test]
fn the_transaction_lock_example_of_the_docs_loses_no_write() {
    if docker_skipped() {
        return;
    }
    support::postgres_image();
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/running.md"))
        .unwrap();
    let example = docs
        .lines()
        .find(|line| {
            line.starts_with("splitbrain run --deployment postgres --client pg-advisory-xact")
        })
        .expect("docs/running.md has its pg-advisory-xact example");
    let args: Vec<&str> = example.split_whitespace().skip(2).collect();
    let run = StoredRun::new(&args);
    run.assert_exit(1);
    let results = run.results();
    let grants = results["lock-safety"]["double_grants"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!grants.is_empty(), "{}", printed(&run.out));
    for grant in &grants {
        assert_eq!(
            grant["explanation"]["cause"],
            "cut-off-holder",
            "{grant}\n{}",
            printed(&run.out)
        );
    }
    assert_eq!(
        results["lost-writes"]["lost_count"],
        0,
        "{}",
        printed(&run.out)
    );
}
