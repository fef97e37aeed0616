//! etcd, the first of the article's alternatives: its cluster comes up formed, elects a new
//! leader when its leader is killed and takes the old one back, and its lease locks are valid
//! without faults, zombies under client pauses, and fenced by their revision.

use crate::support;

use std::time::{Duration, Instant};

use support::{docker_skipped, printed, Fixture, StoredRun};

/// The one leader every member names, waiting up to `patience` for them to agree.
async fn agreed_leader(fixture: &Fixture, patience: Duration) -> Vec<String> {
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
async fn an_etcd_cluster_elects_again_when_its_leader_dies_and_takes_it_back() {
    if docker_skipped() {
        return;
    }
    let fixture = Fixture::up("etcd", None).await;
    let deployment = &fixture.deployment;
    assert_eq!(deployment.node_names(), ["n1", "n2", "n3"]);
    let version = deployment.server_version().await.expect("a version");
    assert!(version.starts_with("etcd 3."), "{version}");

    // Bring-up waited for one leader that every member follows.
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

    // The restarted member keeps its data directory and rejoins as a follower.
    deployment
        .restart(&old)
        .await
        .expect("restarting the old leader");
    let leaders = agreed_leader(&fixture, Duration::from_secs(15)).await;
    assert_eq!(leaders, [new], "after {old} rejoined");
}

#[test]
fn etcd_locks_are_valid_without_faults() {
    if docker_skipped() {
        return;
    }
    support::etcd_image();
    for (client, workload) in [("etcd-lease", "lock"), ("etcd-lock", "lock-set")] {
        let mut args = vec![
            "--deployment",
            "etcd",
            "--client",
            client,
            "--workload",
            workload,
            "--nemesis",
            "none",
            "--time-limit",
            "8s",
        ];
        // The lock-set run's holders act to the end of their holds (`--no-lease-check`),
        // which with no fault is valid too.
        if workload == "lock-set" {
            args.extend(["--fencing", "--no-lease-check"]);
            support::storage_image();
        }
        let run = StoredRun::new(&args);
        run.assert_exit(0);
        let results = run.results();
        let granted = results["stats"]["by_f"]["acquire"]["ok"]
            .as_u64()
            .unwrap_or(0);
        assert!(granted >= 2, "{client}: {}", printed(&run.out));
        assert!(run.dir.join("nodes/n1/etcd.log").is_file());
    }
}

/// Two clients under pauses longer than the 2 s lease: the paused holder's lease expires and
/// etcd grants the lock again, as the article says it would not need fencing for.
fn lock_set_with_zombies(fencing: bool) -> StoredRun {
    support::etcd_image();
    support::lock_set_with_zombies("etcd", "etcd-lease", fencing)
}

#[test]
fn an_etcd_lease_holder_paused_past_its_lease_loses_writes_and_its_revision_fences_it() {
    if docker_skipped() {
        return;
    }
    let unfenced = lock_set_with_zombies(false);
    unfenced.assert_exit(1);
    let results = unfenced.results();
    let stale = results["lock-safety"]["double_grants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["kind"] == "stale")
        .count();
    assert!(stale >= 1, "{}", printed(&unfenced.out));
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

/// A holder cut off from the cluster, its keep-alives failing: the harness's own holder stops
/// when the lease it confirmed runs out and writes nothing after it, so etcd grants no lock
/// twice; with `--no-lease-check` it writes on past its lease, a zombie.
#[test]
fn a_cut_off_etcd_holder_writes_only_within_the_lease_it_confirmed() {
    if docker_skipped() {
        return;
    }
    support::etcd_image();
    let run = |more: &[&str]| support::cut_off_holder_run("etcd", "etcd-lease", more);
    let skipped = |run: &StoredRun| {
        run.ops()
            .into_iter()
            .filter(|op| {
                op.f == "add"
                    && op
                        .error
                        .as_deref()
                        .is_some_and(|e| e.starts_with("not written"))
            })
            .count()
    };

    let careful = run(&[]);
    careful.assert_exit(0);
    let results = careful.results();
    assert!(
        results["coverage"]["grants_faulted"].as_u64() >= Some(1),
        "no cut reached a holder: {}",
        printed(&careful.out)
    );
    assert!(skipped(&careful) >= 1, "{}", printed(&careful.out));
    assert_eq!(
        results["lost-writes"]["lost_count"],
        0,
        "{}",
        printed(&careful.out)
    );

    let careless = run(&["--no-lease-check"]);
    careless.assert_exit(1);
    let grants = careless.results()["lock-safety"]["double_grants"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        grants
            .iter()
            .any(|g| g["explanation"]["cause"] == "cut-off-holder"),
        "{}",
        printed(&careless.out)
    );
    assert_eq!(skipped(&careless), 0, "{}", printed(&careless.out));
}

#[test]
fn etcd_registers_stay_linearizable_when_the_leader_is_cut_off() {
    if docker_skipped() {
        return;
    }
    support::etcd_image();
    let run = StoredRun::new(&[
        "--deployment",
        "etcd",
        "--workload",
        "register",
        "--resources",
        "3",
        "--nemesis",
        "partition-primary",
        "--time-limit",
        "12s",
        "--seed",
        "1",
    ]);
    run.assert_exit(0);
    let results = run.results();
    assert_eq!(
        results["linearizability"]["valid"],
        true,
        "{}",
        printed(&run.out)
    );
    // The leader was cut off, and every register op that succeeded names the member that
    // answered it.
    let ops = run.ops();
    assert!(ops
        .iter()
        .any(|op| op.fault.as_deref() == Some("partition-primary") && op.f == "start"));
    assert!(ops
        .iter()
        .filter(|op| op.kind == splitbrain_checker::OpType::Ok && op.f == "write")
        .all(|op| op.node.as_ref().is_some_and(|n| n[0].starts_with('n'))));
}
