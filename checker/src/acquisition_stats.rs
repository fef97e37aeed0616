//! Acquisition statistics: how often, how fast and why not a client got the lock.
//!
//! Not a checker: it passes no verdict, so its result has no `valid` field. The harness runs
//! one client algorithm per run, so the statistics are of the whole history, all keys
//! together. Definitions, each with a unit test below:
//!
//! 1. Every `acquire` invoke is an **attempt**. It is a **grant** if it returned `ok`,
//!    **refused** if it returned `fail`, split by [`Cause`] into `held`, `split vote` and
//!    unavailable, and **unknown** if it returned `info` or never completed.
//! 2. **Grant latency** is from an ok acquire's invoke to its `ok`; **attempt latency** is the
//!    same for every completed attempt, `info` included (a timeout is how long it took to give
//!    up). Percentiles are nearest-rank; every figure is 0 when there is nothing to measure.
//! 3. `split_vote_share` is split-vote refusals over attempts, 0 with no attempts.
//! 4. `grants_per_second` is grants over the time from the first acquire's invoke to the last
//!    client op, 0 if that time is 0.

use serde::{Deserialize, Serialize};

use crate::acquisition::Cause;
use crate::operation::{ms, operations};
use crate::{Op, OpType};

/// Acquisition statistics of a history.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AcquisitionStats {
    pub attempts: usize,
    pub grants: usize,
    pub refused_held: usize,
    pub refused_split_vote: usize,
    pub refused_unavailable: usize,
    pub unknown: usize,
    pub grant_latency: Latency,
    pub attempt_latency: Latency,
    pub split_vote_share: f64,
    pub grants_per_second: f64,
}

/// A latency distribution in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// How many latencies were measured.
    pub count: usize,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    fn of(mut latencies: Vec<u64>) -> Latency {
        latencies.sort_unstable();
        let count = latencies.len();
        let total: u128 = latencies.iter().map(|&l| u128::from(l)).sum();
        let mean = u64::try_from(total / count.max(1) as u128).unwrap_or(u64::MAX);
        Latency {
            count,
            mean_ms: ms(mean),
            p50_ms: ms(nearest_rank(&latencies, 50)),
            p99_ms: ms(nearest_rank(&latencies, 99)),
            max_ms: ms(latencies.last().copied().unwrap_or(0)),
        }
    }
}

/// The `percent`th percentile of `sorted` by nearest rank: the smallest value with at least
/// `percent`% of the values at or below it; 0 for no values.
fn nearest_rank(sorted: &[u64], percent: usize) -> u64 {
    let rank = (sorted.len() * percent).div_ceil(100).max(1);
    sorted.get(rank - 1).copied().unwrap_or(0)
}

/// Computes the acquisition statistics of a history.
pub fn check(history: &[Op]) -> AcquisitionStats {
    let acquires: Vec<_> = operations(history)
        .into_iter()
        .filter(|operation| operation.invoke.f == "acquire")
        .collect();

    let (mut refused_held, mut refused_split_vote, mut refused_unavailable) = (0, 0, 0);
    let mut grant_latencies = Vec::new();
    let mut attempt_latencies = Vec::new();
    for acquire in &acquires {
        let Some(completion) = acquire.completion else {
            continue;
        };
        let latency = completion.time.saturating_sub(acquire.invoke.time);
        attempt_latencies.push(latency);
        match completion.kind {
            OpType::Ok => grant_latencies.push(latency),
            OpType::Fail => match Cause::of(completion.error.as_deref()) {
                Cause::Held => refused_held += 1,
                Cause::SplitVote => refused_split_vote += 1,
                Cause::Unavailable => refused_unavailable += 1,
            },
            OpType::Info | OpType::Invoke => {}
        }
    }

    let attempts = acquires.len();
    let grants = grant_latencies.len();
    let first_attempt = acquires.iter().map(|a| a.invoke.time).min();
    let last_client_op = history
        .iter()
        .filter(|op| !op.process.is_nemesis())
        .map(|op| op.time)
        .max();
    let span_seconds = match (first_attempt, last_client_op) {
        (Some(first), Some(last)) => last.saturating_sub(first) as f64 / 1e9,
        _ => 0.0,
    };
    AcquisitionStats {
        attempts,
        grants,
        refused_held,
        refused_split_vote,
        refused_unavailable,
        unknown: acquires.iter().filter(|a| a.is_unknown()).count(),
        grant_latency: Latency::of(grant_latencies),
        attempt_latency: Latency::of(attempt_latencies),
        split_vote_share: ratio(refused_split_vote as f64, attempts as f64),
        grants_per_second: ratio(grants as f64, span_seconds),
    }
}

fn ratio(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Process;

    /// Builds histories in order, times in milliseconds.
    #[derive(Default)]
    struct Script(Vec<Op>);

    impl Script {
        fn push(&mut self, ms: u64, op: Op) -> &mut Self {
            let index = self.0.len() as u64;
            self.0.push(op.at(index, ms * 1_000_000));
            self
        }
        /// Process `p` acquires from `from` to `to`; `outcome` `None` never completes.
        fn acquire(
            &mut self,
            from: u64,
            to: u64,
            p: u64,
            outcome: Option<(OpType, &str)>,
        ) -> &mut Self {
            let op = |kind| Op::new(Process::Client(p), kind, "acquire").key("lock");
            self.push(from, op(OpType::Invoke));
            if let Some((kind, error)) = outcome {
                let mut completion = op(kind);
                completion.error = (!error.is_empty()).then(|| error.to_string());
                self.push(to, completion);
            }
            self
        }
        fn granted(&mut self, from: u64, to: u64, p: u64) -> &mut Self {
            self.acquire(from, to, p, Some((OpType::Ok, "")))
        }
        fn check(&self) -> AcquisitionStats {
            check(&self.0)
        }
    }

    #[test]
    fn rule_1_attempts_are_split_by_outcome_and_cause() {
        let r = Script::default()
            .granted(0, 1, 1)
            .acquire(2, 3, 1, Some((OpType::Fail, "held: by 2")))
            .acquire(4, 5, 1, Some((OpType::Fail, "split vote: 2/5")))
            .acquire(6, 7, 1, Some((OpType::Fail, "split vote: 1/5")))
            .acquire(8, 9, 1, Some((OpType::Fail, "n3: connection refused")))
            .acquire(10, 11, 1, Some((OpType::Info, "timeout")))
            .acquire(12, 0, 2, None)
            .check();
        assert_eq!((r.attempts, r.grants, r.unknown), (7, 1, 2));
        assert_eq!(
            (r.refused_held, r.refused_split_vote, r.refused_unavailable),
            (1, 2, 1)
        );
    }

    #[test]
    fn rule_1_other_ops_are_not_attempts() {
        let mut s = Script::default();
        s.push(
            0,
            Op::new(Process::Client(1), OpType::Invoke, "release").key("lock"),
        )
        .push(
            1,
            Op::new(Process::Client(1), OpType::Ok, "release").key("lock"),
        )
        .push(2, Op::new(Process::NEMESIS, OpType::Info, "start"));
        let r = s.check();
        assert_eq!((r.attempts, r.grant_latency.count), (0, 0));
        assert_eq!((r.split_vote_share, r.grants_per_second), (0.0, 0.0));
    }

    #[test]
    fn rule_2_latencies_are_nearest_rank() {
        let mut s = Script::default();
        // Grants taking 1, 2, ..., 100 ms, one after another.
        let mut at = 0;
        for took in 1..=100 {
            s.granted(at, at + took, 1);
            at += took;
        }
        s.acquire(at, at + 500, 1, Some((OpType::Info, "timeout")));
        let r = s.check();
        let grant = &r.grant_latency;
        assert_eq!(grant.count, 100);
        assert_eq!(
            (grant.p50_ms, grant.p99_ms, grant.max_ms),
            (50.0, 99.0, 100.0)
        );
        assert_eq!(grant.mean_ms, 50.5);
        let attempt = &r.attempt_latency;
        assert_eq!(
            (attempt.count, attempt.p99_ms, attempt.max_ms),
            (101, 100.0, 500.0)
        );
    }

    #[test]
    fn rule_2_one_latency_is_every_percentile() {
        let r = Script::default().granted(0, 7, 1).check();
        let grant = &r.grant_latency;
        assert_eq!(
            (grant.mean_ms, grant.p50_ms, grant.p99_ms, grant.max_ms),
            (7.0, 7.0, 7.0, 7.0)
        );
    }

    #[test]
    fn rule_3_the_split_vote_share_is_of_all_attempts() {
        let r = Script::default()
            .granted(0, 1, 1)
            .acquire(0, 1, 2, Some((OpType::Fail, "split vote: 2/5")))
            .acquire(0, 1, 3, None)
            .acquire(0, 1, 4, Some((OpType::Info, "timeout")))
            .check();
        assert_eq!(r.split_vote_share, 0.25);
    }

    #[test]
    fn rule_4_grants_per_second_span_the_first_attempt_to_the_last_client_op() {
        let mut s = Script::default();
        s.push(0, Op::new(Process::NEMESIS, OpType::Info, "start"))
            .granted(1_000, 1_001, 1)
            .granted(1_500, 1_501, 1)
            .push(
                3_000,
                Op::new(Process::Client(1), OpType::Invoke, "release").key("lock"),
            )
            .push(9_000, Op::new(Process::NEMESIS, OpType::Info, "stop"));
        assert_eq!(s.check().grants_per_second, 1.0);
    }
}
