//! Property tests of the acquisition statistics on random acquires, each by its own process.

mod common;

use proptest::collection::vec;
use proptest::prelude::*;
use splitbrain_checker::acquisition_stats::check;
use splitbrain_checker::{Op, OpType, Process};

/// An acquire invoked at `start` ms that took `latency` ms, completing with `outcome` and
/// `error`, or never (`None`).
#[derive(Debug, Clone)]
struct Attempt {
    start: u64,
    latency: u64,
    outcome: Option<(OpType, &'static str)>,
}

fn attempt() -> impl Strategy<Value = Attempt> {
    let outcome = prop_oneof![
        Just(Some((OpType::Ok, ""))),
        Just(Some((OpType::Fail, "held: by another client"))),
        Just(Some((OpType::Fail, "split vote: 2/5"))),
        Just(Some((OpType::Fail, "n1: connection refused"))),
        Just(Some((OpType::Info, "timeout"))),
        Just(None),
    ];
    (0..10_000u64, 0..500u64, outcome).prop_map(|(start, latency, outcome)| Attempt {
        start,
        latency,
        outcome,
    })
}

fn history(attempts: &[Attempt]) -> Vec<Op> {
    let mut timed = Vec::new();
    for (process, attempt) in attempts.iter().enumerate() {
        let op = |kind| Op::new(Process::Client(process as u64), kind, "acquire").key("lock");
        timed.push((attempt.start, op(OpType::Invoke)));
        if let Some((kind, error)) = attempt.outcome {
            let mut completion = op(kind);
            completion.error = (!error.is_empty()).then(|| error.to_string());
            timed.push((attempt.start + attempt.latency, completion));
        }
    }
    common::render(timed)
}

proptest! {
    #[test]
    fn outcomes_partition_the_attempts_and_percentiles_are_ordered(
        attempts in vec(attempt(), 0..100)
    ) {
        let stats = check(&history(&attempts));
        prop_assert_eq!(stats.attempts, attempts.len());
        prop_assert_eq!(
            stats.grants
                + stats.refused_held
                + stats.refused_split_vote
                + stats.refused_unavailable
                + stats.unknown,
            stats.attempts
        );
        let completed = attempts.iter().filter(|a| a.outcome.is_some()).count();
        prop_assert_eq!(stats.attempt_latency.count, completed);
        prop_assert_eq!(stats.grant_latency.count, stats.grants);
        for latency in [&stats.grant_latency, &stats.attempt_latency] {
            prop_assert!(latency.p50_ms <= latency.p99_ms && latency.p99_ms <= latency.max_ms);
            prop_assert!(latency.mean_ms <= latency.max_ms);
        }
        let longest = attempts
            .iter()
            .filter(|a| a.outcome.is_some())
            .map(|a| a.latency)
            .max()
            .unwrap_or(0);
        prop_assert_eq!(stats.attempt_latency.max_ms, longest as f64);
        prop_assert!((0.0..=1.0).contains(&stats.split_vote_share));
        prop_assert!(stats.grants_per_second >= 0.0);
    }
}
