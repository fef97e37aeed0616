//! ZooKeeper, the article's other alternative: its ensemble comes up with one leader, elects
//! another when its leader is killed and takes the old one back as a follower, and its lock
//! recipe is valid without faults, held by a crashed holder until its session expires, a
//! zombie when its holder sleeps past the session, and fenced by the lock node's czxid.

use crate::support;

use std::time::{Duration, Instant};

use splitbrain_workloads::Outcome;
use support::{docker_skipped, printed, Fixture, StoredRun};

/// The one leader of the ensemble, waiting up to `patience` for exactly one.
async fn one_leader(fixture: &Fixture, patience: Duration) -> Vec<String> {
    let started = Instant::now();
    loop {
        let leaders = fixture.deployment.masters_of("lock").await;
        if leaders.len() == 1 || started.elapsed() > patience {
            return leaders;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_zookeeper_ensemble_elects_again_when_its_leader_dies_and_takes_it_back() {
    if docker_skipped() {
        return;
    }
    let fixture = Fixture::up("zookeeper", None).await;
    let deployment = &fixture.deployment;
    assert_eq!(deployment.node_names(), ["n1", "n2", "n3"]);
    let version = deployment.server_version().await.expect("a version");
    assert_eq!(version, "zookeeper 3.8.0");

    // Bring-up waited for one leader and two followers.
    let leaders = deployment.masters_of("lock").await;
    assert_eq!(leaders.len(), 1, "{leaders:?}");
    let old = leaders[0].clone();

    deployment.kill(&old).await.expect("killing the leader");
    let started = Instant::now();
    let new = loop {
        let leaders = deployment.masters_of("lock").await;
        if let [leader] = leaders.as_slice() {
            if *leader != old {
                break leader.clone();
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "no new leader 15 s after {old} died: {leaders:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!(
        "{new} leads {} ms after {old} died",
        started.elapsed().as_millis()
    );

    // The restarted member keeps its data directory and rejoins as a follower: the ensemble
    // is formed again, under the same leader.
    let members: Vec<_> = deployment
        .nodes()
        .iter()
        .map(|n| (n.name.clone(), n.addr))
        .collect();
    let rejoined = Instant::now();
    deployment
        .restart(&old)
        .await
        .expect("restarting the old leader");
    while let Err(e) = deployment.system().formed(members.clone()).await {
        assert!(
            rejoined.elapsed() < Duration::from_secs(20),
            "{old} had not rejoined 20 s after its restart: {e}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "{old} follows again {} ms after its restart",
        rejoined.elapsed().as_millis()
    );
    assert_eq!(one_leader(&fixture, Duration::from_secs(5)).await, [new]);
}

/// The recipe step by step, on one ensemble: a second client waits its turn and gives up
/// with a definite failure; a holder frozen past its session (its pings frozen with it) loses
/// the lock to the next client, with a higher fence, and learns so only when it releases.
#[tokio::test]
async fn a_frozen_holder_loses_its_session_and_the_next_grant_fences_higher() {
    if docker_skipped() {
        return;
    }
    let fixture = Fixture::up("zookeeper", None).await;
    let ttl = Duration::from_secs(2);
    let mut holder = fixture.client("zk-recipe", ttl);
    let mut other = fixture.client("zk-recipe", ttl);
    for client in [&mut holder, &mut other] {
        client.prepare().await.expect("a session");
    }
    let Outcome::Ok(first) = holder.acquire("lock", ttl).await else {
        panic!("the first acquire of a free lock was refused");
    };
    // Queued behind a live holder: after half the lease it deletes its node and fails.
    let waited = Instant::now();
    match other.acquire("lock", ttl).await {
        Outcome::Fail(e) => assert!(e.starts_with("held"), "{e}"),
        outcome => panic!("a held lock was not refused: {outcome:?}"),
    }
    assert!(waited.elapsed() >= ttl / 2, "{:?}", waited.elapsed());

    // Frozen longer than the session (plus a tick of the server's expiry rounding).
    holder.suspend(true);
    tokio::time::sleep(ttl + Duration::from_secs(2)).await;
    // A loaded machine may let one request time out (the client waits 800 ms); a refusal
    // because the lock is held is the failure this test looks for.
    let mut second = None;
    for _ in 0..3 {
        match other.acquire("lock", ttl).await {
            Outcome::Ok(grant) => {
                second = Some(grant);
                break;
            }
            Outcome::Fail(e) if e.starts_with("held") => {
                panic!("the frozen holder's session still held the lock: {e}")
            }
            _ => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    let second = second.expect("the lock was granted within three tries");
    holder.suspend(false);
    assert!(
        second.fence > first.fence,
        "{:?} after {:?}",
        second.fence,
        first.fence
    );
    match holder.release("lock", &first).await {
        Outcome::Fail(e) => assert!(e.contains("no longer ours"), "{e}"),
        outcome => panic!("the zombie released a lock it had lost: {outcome:?}"),
    }
    assert_eq!(other.release("lock", &second).await, Outcome::Ok(()));
    // The zombie's next acquire runs on a new session.
    assert!(matches!(holder.acquire("lock", ttl).await, Outcome::Ok(_)));
}

/// A holder that crashes leaves its session to expire, as a killed process does: the next
/// client is granted the lock only once the servers expire the session, a session timeout
/// later (a crash that closed the session would free the lock at once).
#[tokio::test(flavor = "multi_thread")]
async fn a_crashed_holder_keeps_the_lock_until_its_session_expires() {
    if docker_skipped() {
        return;
    }
    let fixture = Fixture::up("zookeeper", None).await;
    let ttl = Duration::from_secs(2);
    let (_, waited) = fixture.crash_then_contend("zk-recipe", ttl).await;
    // The servers expire sessions a tick (500 ms) at a time, and last heard from the
    // crashed client during its acquire, just before the crash.
    assert!(
        waited >= ttl - Duration::from_millis(500),
        "the lock was granted again {waited:?} after its holder crashed, within its {ttl:?} session"
    );
    assert!(
        waited < ttl * 3,
        "the lock was never granted again after its holder's session expired"
    );
}

#[test]
fn zookeeper_locks_are_valid_without_faults() {
    if docker_skipped() {
        return;
    }
    support::zookeeper_image();
    for workload in ["lock", "lock-set"] {
        let mut args = vec![
            "--deployment",
            "zookeeper",
            "--client",
            "zk-recipe",
            "--workload",
            workload,
            "--nemesis",
            "none",
            "--time-limit",
            "8s",
        ];
        if workload == "lock-set" {
            args.push("--fencing");
            support::storage_image();
        }
        let run = StoredRun::new(&args);
        run.assert_exit(0);
        let results = run.results();
        let granted = results["stats"]["by_f"]["acquire"]["ok"]
            .as_u64()
            .unwrap_or(0);
        assert!(granted >= 2, "{workload}: {}", printed(&run.out));
        // Each grant's fence is its node's czxid, which rises with every grant.
        let fences: Vec<u64> = run
            .ops()
            .iter()
            .filter(|op| op.kind == splitbrain_checker::OpType::Ok && op.f == "acquire")
            .map(|op| op.fence.expect("a fenced grant"))
            .collect();
        assert!(fences.windows(2).all(|w| w[0] < w[1]), "{fences:?}");
        assert!(run.dir.join("nodes/n1/zookeeper.log").is_file());
    }
}

/// Two clients under pauses longer than the 2 s session: the server expires the paused
/// holder's session, deletes its node and hands the lock to the next in line, while the
/// holder still thinks it holds it.
fn lock_set_with_zombies(fencing: bool) -> StoredRun {
    support::zookeeper_image();
    support::lock_set_with_zombies("zookeeper", "zk-recipe", fencing)
}

#[test]
fn a_zk_recipe_holder_paused_past_its_session_loses_writes_and_its_czxid_fences_it() {
    if docker_skipped() {
        return;
    }
    let unfenced = lock_set_with_zombies(false);
    unfenced.assert_exit(1);
    let results = unfenced.results();
    let grants = results["lock-safety"]["double_grants"].as_array().unwrap();
    // The server kept its promise (the session had expired): every double grant is a
    // zombie's, none two live leases.
    assert!(!grants.is_empty(), "{}", printed(&unfenced.out));
    assert!(
        grants.iter().all(|g| g["kind"] == "stale"),
        "{}",
        printed(&unfenced.out)
    );
    let lost = results["lost-writes"]["lost_count"].as_u64().unwrap();
    assert!(lost >= 1, "{}", printed(&unfenced.out));

    let fenced = lock_set_with_zombies(true);
    fenced.assert_exit(0);
    let results = fenced.results();
    assert_eq!(
        results["lost-writes"]["lost_count"],
        0,
        "{}",
        printed(&fenced.out)
    );
    let refused = results["fencing"]["rejected_storage_accesses"]
        .as_u64()
        .unwrap_or(0);
    assert!(refused >= 1, "{}", printed(&fenced.out));
}
