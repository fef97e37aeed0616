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
//! 5. The **longest split-vote streak**: completed attempts in the order they completed, the
//!    longest run with no grant, no `held` refusal and no unknown outcome in it (the lock was
//!    free, as far as anyone knows, and nobody won it), counted by its split-vote refusals;
//!    refusals for want of nodes neither end nor count in it. Its `rounds` is the fewest
//!    split votes any of its clients had in it: how many times in a row every contender
//!    collided. Redlock's retry jitter exists so that a collision is not repeated; a streak
//!    of many rounds is the split-vote livelock. None without a split vote.

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
    /// Absent from results written before it was measured.
    #[serde(default)]
    pub longest_split_vote_streak: Option<SplitVoteStreak>,
}

/// Split votes in a row with nothing else between them (rule 5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitVoteStreak {
    pub refusals: usize,
    /// How many clients took part.
    pub clients: usize,
    /// The fewest refusals any of those clients had in the streak.
    pub rounds: usize,
    /// When its first and its last refusal completed.
    pub from_ms: f64,
    pub to_ms: f64,
}

impl std::fmt::Display for SplitVoteStreak {
    /// In words, as the summary, the report and a livelock judgement print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} split votes in a row from {:.1} s to {:.1} s, each of the {} contenders refused \
             at least {} times running",
            self.refusals,
            self.from_ms / 1000.0,
            self.to_ms / 1000.0,
            self.clients,
            self.rounds
        )
    }
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
    let longest_split_vote_streak = longest_split_vote_streak(&acquires);
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
        longest_split_vote_streak,
    }
}

/// Rule 5: the longest run of split votes, by completion order, that no grant, `held`
/// refusal or unknown outcome interrupts.
fn longest_split_vote_streak(acquires: &[crate::operation::Operation]) -> Option<SplitVoteStreak> {
    let mut completed: Vec<&Op> = acquires.iter().filter_map(|a| a.completion).collect();
    completed.sort_by_key(|op| op.time);
    let cause = |op: &Op| match op.kind {
        OpType::Fail => Some(Cause::of(op.error.as_deref())),
        _ => None,
    };
    let interrupts = |op: &&Op| !matches!(cause(op), Some(Cause::SplitVote | Cause::Unavailable));
    completed
        .split(interrupts)
        .filter_map(|run| {
            let splits: Vec<&&Op> = run
                .iter()
                .filter(|op| cause(op) == Some(Cause::SplitVote))
                .collect();
            let (first, last) = (splits.first()?, splits.last()?);
            let mut per_client = std::collections::BTreeMap::new();
            for op in &splits {
                *per_client.entry(op.process).or_insert(0usize) += 1;
            }
            Some(SplitVoteStreak {
                refusals: splits.len(),
                clients: per_client.len(),
                rounds: per_client.values().copied().min().unwrap_or(0),
                from_ms: ms(first.time),
                to_ms: ms(last.time),
            })
        })
        .max_by_key(|streak| (streak.rounds, streak.refusals))
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

    #[test]
    fn rule_5_the_longest_split_vote_streak_counts_rounds_every_contender_collided() {
        let split = Some((OpType::Fail, "split vote: 2/5"));
        let mut script = Script::default();
        // Processes 1 and 2 collide twice in a row, then process 3 joins for one refusal...
        script
            .acquire(0, 10, 1, split)
            .acquire(0, 11, 2, split)
            .acquire(20, 30, 1, split)
            .acquire(20, 31, 2, split)
            .acquire(25, 32, 3, split)
            // ...and a grant ends the streak; one split vote after it is a streak of one.
            .granted(40, 50, 1)
            .acquire(60, 70, 2, split);
        let streak = script.check().longest_split_vote_streak.unwrap();
        assert_eq!(
            (streak.refusals, streak.clients, streak.rounds),
            (5, 3, 1),
            "process 3 collided once"
        );
        assert_eq!((streak.from_ms, streak.to_ms), (10.0, 32.0));
        // A held refusal ends a streak too: someone had the lock. A node timing out does not.
        let mut held = Script::default();
        held.acquire(0, 10, 1, split)
            .acquire(0, 11, 2, Some((OpType::Fail, "held: by another client")))
            .acquire(20, 30, 1, split)
            .acquire(
                20,
                31,
                2,
                Some((OpType::Fail, "no quorum: 2/5 granted, 3 timed out")),
            )
            .acquire(40, 50, 1, split);
        assert_eq!(held.check().longest_split_vote_streak.unwrap().refusals, 2);
        let none = Script::default().granted(0, 1, 1).check();
        assert_eq!(none.longest_split_vote_streak, None);
    }
}
