//! MariaDB's named locks: its server comes up and back after a crash keeping the fencing
//! counter, `GET_LOCK` is valid without faults, a holder cut off past `wait_timeout` loses its
//! lock without knowing, and an acquire whose answer was lost ends the session it ran on.

use crate::support;

use std::time::Duration;

use splitbrain_workloads::Outcome;
use support::{docker_skipped, granted, image_of, printed, server_of, CutOff, Fixture, StoredRun};

const TTL: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_server_comes_back_after_a_crash_and_its_fencing_counter_with_it() {
    if docker_skipped() {
        return;
    }
    let fixture = Fixture::up("mariadb", None).await;
    let deployment = &fixture.deployment;
    assert_eq!(deployment.node_names(), ["n1"]);
    let version = deployment.server_version().await.expect("a version");
    assert!(version.starts_with("mariadb 10.11."), "{version}");
    let mut client = fixture.client("mysql-get-lock", TTL);
    let before = granted(&mut client, TTL).await;
    assert!(matches!(
        client.release("lock", &before).await,
        Outcome::Ok(())
    ));
    for _ in 0..3 {
        deployment.kill("n1").await.expect("crashing the server");
        deployment.restart("n1").await.expect("the server restarts");
    }
    let mut client = fixture.client("mysql-get-lock", TTL);
    let after = granted(&mut client, TTL).await;
    assert!(
        after.fence > before.fence,
        "a token drawn after the crashes is above every earlier one: {after:?} after {before:?}"
    );
}

#[test]
fn mariadb_named_locks_are_valid_without_faults() {
    if docker_skipped() {
        return;
    }
    image_of(server_of("mariadb"));
    let run = StoredRun::new(&[
        "--deployment",
        "mariadb",
        "--workload",
        "lock-set",
        "--nemesis",
        "none",
        "--fencing",
        "--time-limit",
        "8s",
    ]);
    run.assert_exit(0);
    let results = run.results();
    let acknowledged = results["lost-writes"]["acknowledged"].as_u64().unwrap_or(0);
    assert!(acknowledged >= 2, "{}", printed(&run.out));
    assert!(run.dir.join("nodes/n1/mariadb.log").is_file());
    let refused = StoredRun::new(&["--deployment", "mariadb", "--ttl", "2500ms"]);
    refused.assert_exit(254);
    let said = String::from_utf8_lossy(&refused.out.stderr);
    assert!(said.contains("whole seconds"), "{said}");
}

/// Cuts group 0 off for `cut`, running `while_cut` meanwhile, and heals when `cut` is over.
async fn cutting_group_0<T>(
    cut: &CutOff,
    length: Duration,
    while_cut: impl std::future::Future<Output = T>,
) -> T {
    cut.cut().await;
    let (result, ()) = tokio::join!(while_cut, async {
        tokio::time::sleep(length).await;
        cut.heal().await;
    });
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_cut_off_past_wait_timeout_loses_its_lock_without_knowing() {
    if docker_skipped() {
        return;
    }
    let cut = CutOff::up("mariadb").await;
    let mut holder = cut.client("mysql-get-lock", 0, TTL);
    let mut other = cut.client("mysql-get-lock", 1, TTL);
    let held = granted(&mut holder, TTL).await;
    // Held: the other group waits out the lock wait and is refused.
    other.prepare().await.unwrap();
    assert!(matches!(other.acquire("lock", TTL).await, Outcome::Fail(_)));

    let taken = cutting_group_0(&cut, TTL * 3, async {
        tokio::time::sleep(TTL * 2).await;
        other.acquire("lock", TTL).await
    })
    .await;
    let Outcome::Ok(taken) = taken else {
        panic!("the server should have ended the silent session and freed its lock: {taken:?}");
    };
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
async fn an_acquire_whose_answer_is_lost_ends_the_session_it_ran_on() {
    if docker_skipped() {
        return;
    }
    let cut = CutOff::up("mariadb").await;
    let mut holder = cut.client("mysql-get-lock", 1, TTL);
    // A long lease, so that the server still keeps the waiter's session when the link heals,
    // and the waiter must end it itself.
    let lease = Duration::from_secs(10);
    let mut waiter = cut.client("mysql-get-lock", 0, lease);
    let held = granted(&mut holder, TTL).await;
    waiter.prepare().await.unwrap();
    // The waiter's GET_LOCK waits on the server while its link is cut, so its answer never
    // comes; the holder releases meanwhile, and the server grants the waiter's session the
    // lock. Once the link heals, the waiter kills that session from a new one.
    let attempt = cutting_group_0(&cut, Duration::from_secs(9), async {
        let attempt = waiter.acquire("lock", lease);
        let release = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            holder.release("lock", &held).await
        };
        tokio::join!(attempt, release).0
    })
    .await;
    let Outcome::Fail(why) = attempt else {
        panic!("the session that may hold the lock should have been ended: {attempt:?}");
    };
    assert!(why.contains("ended the session"), "{why}");
    // Nothing holds the lock now: another client takes it at once.
    let mut next = cut.client("mysql-get-lock", 1, TTL);
    let taken = granted(&mut next, TTL).await;
    let _ = next.release("lock", &taken).await;
    cut.links.shutdown();
}
