//! Property tests of coverage on simulated lock runs with faults: its counts bound each other,
//! a fault over the whole run reaches every grant, and a run without faults exercised none.

use proptest::prelude::*;
use splitbrain_checker::coverage;
use splitbrain_checker::stream::RunFacts;
use splitbrain_checker::testing::{lock_history, LockWorkload};
use splitbrain_checker::{Op, OpType, Process};

fn workload() -> impl Strategy<Value = LockWorkload> {
    (200..3_000usize, 1..8u64, 1..3usize, any::<u64>()).prop_map(|(ops, processes, keys, seed)| {
        LockWorkload {
            ops,
            processes,
            keys,
            seed,
        }
    })
}

/// Coverage of `history`, run by `concurrency` workers if known.
fn check(history: &[Op], concurrency: Option<usize>) -> coverage::Coverage {
    coverage::check(
        history,
        RunFacts {
            concurrency,
            ..RunFacts::default()
        },
    )
}

/// How many acquires returned `ok`, each completion paired with its process's invoke.
fn granted(history: &[Op]) -> usize {
    let mut pending = std::collections::HashMap::new();
    let mut grants = 0;
    for op in history.iter().filter(|op| !op.process.is_nemesis()) {
        if op.kind == OpType::Invoke {
            pending.insert(op.process, op.f.as_str());
        } else if pending.remove(&op.process) == Some("acquire") && op.kind == OpType::Ok {
            grants += 1;
        }
    }
    grants
}

/// A nemesis op of `fault` at `time_ns`, on no particular node.
fn nemesis(f: &str, fault: &str, time_ns: u64) -> Op {
    let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(Vec::new());
    op.fault = Some(fault.to_string());
    op.at(0, time_ns)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn counts_bound_each_other(workload in workload()) {
        let history = lock_history(&workload);
        let r = check(&history, Some(workload.processes as usize));
        prop_assert_eq!(r.grants, granted(&history));
        prop_assert!(r.grants_faulted <= r.grants);
        prop_assert!(r.kills_back_within_ttl <= r.kills);
        prop_assert!(r.kills + r.pauses_on_holder + r.clock_faults_on_holder_node <= r.faults);
        prop_assert_eq!(r.touched_a_holder(), r.grants_faulted > 0);
        if let Some(spread) = r.restart_ms {
            prop_assert!(spread.min <= spread.median && spread.median <= spread.max);
        }
        prop_assert_eq!(check(&history, None).grants, r.grants);
    }

    #[test]
    fn a_failover_over_the_whole_run_reaches_every_grant(workload in workload()) {
        let mut history = lock_history(&workload);
        let end = history.iter().map(|op| op.time).max().unwrap_or(0);
        history.insert(0, nemesis("start", "failover", 0));
        history.push(nemesis("stop", "failover", end + 1));
        let r = check(&history, None);
        prop_assert_eq!(r.grants_faulted, r.grants);
        prop_assert_eq!(r.touched_a_holder(), r.grants > 0);
    }

    #[test]
    fn a_run_without_faults_exercised_none(workload in workload()) {
        let history: Vec<Op> = lock_history(&workload)
            .into_iter()
            .filter(|op| !op.process.is_nemesis())
            .collect();
        let r = check(&history, None);
        prop_assert_eq!(r.grants, granted(&history));
        prop_assert_eq!((r.grants_faulted, r.faults, r.kills), (0, 0, 0));
        prop_assert!(r.line().ends_with("; no faults"), "{}", r.line());
    }
}
