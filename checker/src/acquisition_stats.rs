//! Acquisition statistics: how often, how fast and why not a client got the lock.
//!
//! It passes no verdict, so its result has no `valid` field: it is shown beside the verdict. The harness runs
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
//! 6. The **longest outage**: a time in which the lock was free, as far as anyone knows, and
//!    clients asked for it and nobody was granted it. It begins with the first acquire's
//!    invoke, or when the last holder's release came back (any outcome: its holder no longer
//!    took itself for the holder), and ends with the next grant or the last client op. A
//!    holder that never released (crashed, or cut off to the end) begins none: nobody can
//!    tell when its lock was free. It counts the attempts that came back in it, and is as
//!    long as its TTLs: the longest `ttl_ms` its attempts asked for, 1 s where none did. Only
//!    an outage with an attempt in it counts. A lock that tolerates the loss of a minority of
//!    its nodes (Redlock's majority) should have none longer than a few TTLs while only a
//!    minority is down.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::acquisition::Cause;
use crate::every::{read_as, Registration, Role};
use crate::operation::ms;
use crate::stream::{replay, Checker, Event};
use crate::verdict::Checked;
use crate::{Op, OpType, Process, Valid};

/// How many TTLs a lock may be free and asked for, and granted to nobody, before it counts as
/// an outage (rule 6): a lock that only lost a minority of its nodes grants within a TTL or
/// two (its retries, and a key an unknown attempt may have left, which runs out with its TTL).
pub const OUTAGE_TTLS: f64 = 5.0;

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
    /// Absent from results written before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_outage: Option<Outage>,
}

/// A time the lock was free and asked for, and nobody was granted it (rule 6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outage {
    pub from_ms: f64,
    /// The next grant, or the last client op where none came.
    pub to_ms: f64,
    /// Whether a grant ended it.
    pub ended_by_grant: bool,
    /// How many TTLs it lasted: its length over the longest TTL its attempts asked for.
    pub ttls: f64,
    /// The attempts that came back in it, and how.
    pub attempts: usize,
    pub refused_held: usize,
    pub refused_other: usize,
    pub unknown: usize,
    /// The error of its first attempt whose outcome was unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_unknown_error: Option<String>,
}

impl std::fmt::Display for Outage {
    /// In words, as the summary and an outage judgement print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "nobody was granted the lock from {:.1} s to {:.1} s ({:.1} TTLs, {}), while {} \
             attempts came back: {} refused as held, {} refused otherwise, {} unknown",
            self.from_ms / 1000.0,
            self.to_ms / 1000.0,
            self.ttls,
            if self.ended_by_grant {
                "until the next grant"
            } else {
                "to the end"
            },
            self.attempts,
            self.refused_held,
            self.refused_other,
            self.unknown
        )?;
        match &self.first_unknown_error {
            Some(error) => write!(f, " (the first: {error})"),
            None => Ok(()),
        }
    }
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
             at least {} running",
            self.refusals,
            self.from_ms / 1000.0,
            self.to_ms / 1000.0,
            self.clients,
            match self.rounds {
                1 => "once".to_string(),
                rounds => format!("{rounds} times"),
            }
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

/// Latencies as they come: exact count, sum and maximum, and how many fell on each
/// microsecond, which is all a percentile in milliseconds to the microsecond needs.
#[derive(Default)]
struct Latencies {
    count: usize,
    total: u128,
    max: u64,
    by_microsecond: BTreeMap<u64, usize>,
}

impl Latencies {
    fn push(&mut self, latency: u64) {
        self.count += 1;
        self.total += u128::from(latency);
        self.max = self.max.max(latency);
        *self
            .by_microsecond
            .entry(microseconds(latency))
            .or_default() += 1;
    }

    /// The `percent`th percentile by nearest rank, in ms: the smallest value with at least
    /// `percent`% of the values at or below it; 0 for no values.
    fn nearest_rank_ms(&self, percent: usize) -> f64 {
        let rank = (self.count * percent).div_ceil(100).max(1);
        let mut seen = 0;
        for (&us, &count) in &self.by_microsecond {
            seen += count;
            if seen >= rank {
                return us as f64 / 1_000.0;
            }
        }
        0.0
    }

    fn summary(&self) -> Latency {
        let mean = u64::try_from(self.total / self.count.max(1) as u128).unwrap_or(u64::MAX);
        Latency {
            count: self.count,
            mean_ms: ms(mean),
            p50_ms: self.nearest_rank_ms(50),
            p99_ms: self.nearest_rank_ms(99),
            max_ms: ms(self.max),
        }
    }
}

/// Nanoseconds rounded to the microsecond, as [`ms`] rounds them.
fn microseconds(ns: u64) -> u64 {
    (ns as f64 / 1_000.0).round() as u64
}

/// Computes the acquisition statistics of a history.
pub fn check(history: &[Op]) -> AcquisitionStats {
    replay(history, AcquisitionChecker::default())
}

impl Checked for AcquisitionStats {
    fn name(&self) -> &'static str {
        "acquisition"
    }
    fn valid(&self) -> Valid {
        Valid::True
    }
    fn summary(&self) -> Vec<(&'static str, String)> {
        let mut lines = Vec::new();
        if self.attempts > 0 {
            lines.push((
                "acquire",
                format!(
                    "{} attempts, {} granted ({:.1}/s); refused: {} held, {} split vote \
                     ({:.1}%), {} unavailable; {} unknown; grant latency mean {:.1} ms, p99 \
                     {:.1} ms",
                    self.attempts,
                    self.grants,
                    self.grants_per_second,
                    self.refused_held,
                    self.refused_split_vote,
                    self.split_vote_share * 100.0,
                    self.refused_unavailable,
                    self.unknown,
                    self.grant_latency.mean_ms,
                    self.grant_latency.p99_ms
                ),
            ));
        }
        // A collision repeated is worth a line of its own: it is how a livelock shows.
        let streak = self.longest_split_vote_streak.as_ref();
        if let Some(streak) = streak.filter(|s| s.rounds > 1) {
            lines.push(("split", streak.to_string()));
        }
        let outage = self.longest_outage.as_ref();
        if let Some(outage) = outage.filter(|o| o.ttls >= OUTAGE_TTLS) {
            lines.push(("outage", outage.to_string()));
        }
        lines
    }
}

/// Its line in the list of every checker.
pub const CHECKER: Registration = Registration {
    name: "acquisition",
    role: Role::Statistics,
    start: |_, _| Box::<AcquisitionChecker>::default(),
    read: read_as::<AcquisitionStats>,
};

/// The acquisition statistics as a stream.
#[derive(Default)]
pub struct AcquisitionChecker {
    attempts: usize,
    unknown: usize,
    refused_held: usize,
    refused_split_vote: usize,
    refused_unavailable: usize,
    grant_latencies: Latencies,
    attempt_latencies: Latencies,
    first_attempt: Option<u64>,
    last_client_op: Option<u64>,
    streak: Streak,
    longest_streak: Option<SplitVoteStreak>,
    /// Rule 6: the process that holds the lock, as far as anyone knows.
    holder: Option<Process>,
    /// The outage going on, from when the lock was last known free.
    outage: Option<OpenOutage>,
    longest_outage: Option<Outage>,
}

/// Rule 6's outage, still going on, in nanoseconds.
struct OpenOutage {
    from: u64,
    ttl_ms: u64,
    attempts: usize,
    refused_held: usize,
    refused_other: usize,
    unknown: usize,
    first_unknown_error: Option<String>,
}

impl OpenOutage {
    fn starting(from: u64) -> OpenOutage {
        OpenOutage {
            from,
            ttl_ms: 0,
            attempts: 0,
            refused_held: 0,
            refused_other: 0,
            unknown: 0,
            first_unknown_error: None,
        }
    }

    fn to_outage(&self, to: u64, ended_by_grant: bool) -> Option<Outage> {
        let ttl_ns = self.ttl_ms.max(1_000) as f64 * 1e6;
        (self.attempts > 0).then(|| Outage {
            from_ms: ms(self.from),
            to_ms: ms(to),
            ended_by_grant,
            ttls: to.saturating_sub(self.from) as f64 / ttl_ns,
            attempts: self.attempts,
            refused_held: self.refused_held,
            refused_other: self.refused_other,
            unknown: self.unknown,
            first_unknown_error: self.first_unknown_error.clone(),
        })
    }
}

/// Rule 5's run of split votes, by completion order, that nothing has interrupted yet.
#[derive(Default)]
struct Streak {
    per_client: BTreeMap<Process, usize>,
    refusals: usize,
    from: u64,
    to: u64,
}

impl Streak {
    fn to_streak(&self) -> Option<SplitVoteStreak> {
        (self.refusals > 0).then(|| SplitVoteStreak {
            refusals: self.refusals,
            clients: self.per_client.len(),
            rounds: self.per_client.values().copied().min().unwrap_or(0),
            from_ms: ms(self.from),
            to_ms: ms(self.to),
        })
    }
}

impl AcquisitionChecker {
    /// Rule 5: a grant, a `held` refusal or an unknown outcome ends the run of split votes,
    /// and the longest run so far is kept (the later of two as long).
    fn completed(&mut self, completion: &Op) {
        let cause = match completion.kind {
            OpType::Fail => Some(Cause::of(completion.error.as_deref())),
            _ => None,
        };
        match cause {
            Some(Cause::SplitVote) => {
                let streak = &mut self.streak;
                if streak.refusals == 0 {
                    streak.from = completion.time;
                }
                streak.refusals += 1;
                streak.to = completion.time;
                *streak.per_client.entry(completion.process).or_default() += 1;
            }
            Some(Cause::Unavailable) => {}
            _ => self.end_streak(),
        }
    }

    fn end_streak(&mut self) {
        let ended = std::mem::take(&mut self.streak).to_streak();
        let longer = |streak: &SplitVoteStreak, than: &Option<SplitVoteStreak>| {
            than.as_ref()
                .is_none_or(|best| (streak.rounds, streak.refusals) >= (best.rounds, best.refusals))
        };
        if let Some(streak) = ended.filter(|s| longer(s, &self.longest_streak)) {
            self.longest_streak = Some(streak);
        }
    }

    fn attempted(&mut self, invoke: &Op) {
        self.attempts += 1;
        self.first_attempt = Some(
            self.first_attempt
                .map_or(invoke.time, |t| t.min(invoke.time)),
        );
    }

    fn client_op(&mut self, op: &Op) {
        self.last_client_op = self.last_client_op.max(Some(op.time));
    }

    /// Rule 6: an attempt that came back in an outage counts in it, and a grant ends it.
    fn in_outage(&mut self, invoke: &Op, completion: Option<&Op>) {
        let kind = completion.map_or(OpType::Info, |c| c.kind);
        if kind == OpType::Ok {
            let at = completion.map_or(invoke.time, |c| c.time);
            if let Some(outage) = self.outage.take() {
                self.end_outage(outage.to_outage(at, true));
            }
            self.holder = Some(invoke.process);
            return;
        }
        if self.holder.is_none() && self.outage.is_none() {
            self.outage = Some(OpenOutage::starting(invoke.time));
        }
        let Some(outage) = self.outage.as_mut() else {
            return;
        };
        outage.attempts += 1;
        outage.ttl_ms = outage.ttl_ms.max(invoke.ttl_ms.unwrap_or(0));
        match (kind, completion) {
            (OpType::Fail, Some(c)) if Cause::of(c.error.as_deref()) == Cause::Held => {
                outage.refused_held += 1;
            }
            (OpType::Fail, _) => outage.refused_other += 1,
            _ => {
                outage.unknown += 1;
                if outage.first_unknown_error.is_none() {
                    outage.first_unknown_error = completion.and_then(|c| c.error.clone());
                }
            }
        }
    }

    /// Rule 6: the holder's release, whatever came of it, leaves the lock free as far as
    /// anyone knows.
    fn released(&mut self, invoke: &Op, completion: Option<&Op>) {
        if self.holder == Some(invoke.process) {
            self.holder = None;
            let at = completion.map_or(invoke.time, |c| c.time);
            self.outage = Some(OpenOutage::starting(at));
        }
    }

    fn end_outage(&mut self, ended: Option<Outage>) {
        let longer = |outage: &Outage, than: &Option<Outage>| {
            than.as_ref()
                .is_none_or(|best| outage.to_ms - outage.from_ms >= best.to_ms - best.from_ms)
        };
        if let Some(outage) = ended.filter(|o| longer(o, &self.longest_outage)) {
            self.longest_outage = Some(outage);
        }
    }
}

impl Checker for AcquisitionChecker {
    type Output = AcquisitionStats;

    fn observe(&mut self, event: Event<'_>) {
        match event {
            Event::Nemesis(_) => {}
            Event::Invoke(op) => self.client_op(op),
            Event::Abandoned(invoke) => {
                if invoke.f == "acquire" {
                    self.attempted(invoke);
                    self.unknown += 1;
                    self.in_outage(invoke, None);
                }
                if invoke.f == "release" {
                    self.released(invoke, None);
                }
            }
            Event::Complete { invoke, completion } => {
                self.client_op(completion);
                if invoke.f == "release" {
                    self.released(invoke, Some(completion));
                }
                if invoke.f != "acquire" {
                    return;
                }
                self.in_outage(invoke, Some(completion));
                self.attempted(invoke);
                let latency = completion.time.saturating_sub(invoke.time);
                self.attempt_latencies.push(latency);
                match completion.kind {
                    OpType::Ok => self.grant_latencies.push(latency),
                    OpType::Fail => match Cause::of(completion.error.as_deref()) {
                        Cause::Held => self.refused_held += 1,
                        Cause::SplitVote => self.refused_split_vote += 1,
                        Cause::Unavailable => self.refused_unavailable += 1,
                    },
                    OpType::Info | OpType::Invoke => self.unknown += 1,
                }
                self.completed(completion);
            }
        }
    }

    fn finish(mut self) -> AcquisitionStats {
        self.end_streak();
        if let (Some(outage), Some(last)) = (self.outage.take(), self.last_client_op) {
            self.end_outage(outage.to_outage(last.max(outage.from), false));
        }
        let span_seconds = match (self.first_attempt, self.last_client_op) {
            (Some(first), Some(last)) => last.saturating_sub(first) as f64 / 1e9,
            _ => 0.0,
        };
        let grants = self.grant_latencies.count;
        AcquisitionStats {
            attempts: self.attempts,
            grants,
            refused_held: self.refused_held,
            refused_split_vote: self.refused_split_vote,
            refused_unavailable: self.refused_unavailable,
            unknown: self.unknown,
            grant_latency: self.grant_latencies.summary(),
            attempt_latency: self.attempt_latencies.summary(),
            split_vote_share: ratio(self.refused_split_vote as f64, self.attempts as f64),
            grants_per_second: ratio(grants as f64, span_seconds),
            longest_split_vote_streak: self.longest_streak,
            longest_outage: self.longest_outage,
        }
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
    use crate::testing::HistoryBuilder;
    use crate::Process;

    /// Builds histories in order, times in milliseconds.
    trait AttemptsScript {
        /// Process `p` acquires from `from` to `to`; `outcome` `None` never completes.
        fn acquire(
            &mut self,
            from: u64,
            to: u64,
            p: u64,
            outcome: Option<(OpType, &str)>,
        ) -> &mut Self;
        fn granted(&mut self, from: u64, to: u64, p: u64) -> &mut Self;
        fn check(&self) -> AcquisitionStats;
    }

    impl AttemptsScript for HistoryBuilder {
        /// Process `p` acquires from `from` to `to`; `outcome` `None` never completes.
        fn acquire(
            &mut self,
            from: u64,
            to: u64,
            p: u64,
            outcome: Option<(OpType, &str)>,
        ) -> &mut Self {
            let op = |kind| Op::new(Process::Client(p), kind, "acquire").key("lock");
            self.at(from, op(OpType::Invoke));
            if let Some((kind, error)) = outcome {
                let mut completion = op(kind);
                completion.error = (!error.is_empty()).then(|| error.to_string());
                self.at(to, completion);
            }
            self
        }
        fn granted(&mut self, from: u64, to: u64, p: u64) -> &mut Self {
            self.acquire(from, to, p, Some((OpType::Ok, "")))
        }
        fn check(&self) -> AcquisitionStats {
            check(&self.build())
        }
    }

    #[test]
    fn rule_1_attempts_are_split_by_outcome_and_cause() {
        let r = HistoryBuilder::default()
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
        let mut s = HistoryBuilder::default();
        s.at(
            0,
            Op::new(Process::Client(1), OpType::Invoke, "release").key("lock"),
        )
        .at(
            1,
            Op::new(Process::Client(1), OpType::Ok, "release").key("lock"),
        )
        .at(2, Op::new(Process::NEMESIS, OpType::Info, "start"));
        let r = s.check();
        assert_eq!((r.attempts, r.grant_latency.count), (0, 0));
        assert_eq!((r.split_vote_share, r.grants_per_second), (0.0, 0.0));
    }

    #[test]
    fn rule_2_latencies_are_nearest_rank() {
        let mut s = HistoryBuilder::default();
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
        let r = HistoryBuilder::default().granted(0, 7, 1).check();
        let grant = &r.grant_latency;
        assert_eq!(
            (grant.mean_ms, grant.p50_ms, grant.p99_ms, grant.max_ms),
            (7.0, 7.0, 7.0, 7.0)
        );
    }

    #[test]
    fn rule_3_the_split_vote_share_is_of_all_attempts() {
        let r = HistoryBuilder::default()
            .granted(0, 1, 1)
            .acquire(0, 1, 2, Some((OpType::Fail, "split vote: 2/5")))
            .acquire(0, 1, 3, None)
            .acquire(0, 1, 4, Some((OpType::Info, "timeout")))
            .check();
        assert_eq!(r.split_vote_share, 0.25);
    }

    #[test]
    fn rule_4_grants_per_second_span_the_first_attempt_to_the_last_client_op() {
        let mut s = HistoryBuilder::default();
        s.at(0, Op::new(Process::NEMESIS, OpType::Info, "start"))
            .granted(1_000, 1_001, 1)
            .granted(1_500, 1_501, 1)
            .at(
                3_000,
                Op::new(Process::Client(1), OpType::Invoke, "release").key("lock"),
            )
            .at(9_000, Op::new(Process::NEMESIS, OpType::Info, "stop"));
        assert_eq!(s.check().grants_per_second, 1.0);
    }

    #[test]
    fn rule_6_the_longest_outage_runs_from_a_release_to_the_next_grant() {
        let release = |s: &mut HistoryBuilder, at: u64, p: u64| {
            let op = |kind| Op::new(Process::Client(p), kind, "release").key("lock");
            s.at(at, op(OpType::Invoke)).at(at + 1, op(OpType::Ok));
        };
        let mut s = HistoryBuilder::default();
        // Held by 1 from 0 to 1001: refusals then are no outage.
        s.granted(0, 1, 1);
        s.acquire(100, 101, 2, Some((OpType::Fail, "held: by another client")));
        release(&mut s, 1_000, 1);
        // Free from 1001 ms: asked, refused and unknown, granted at 6001 ms.
        s.acquire(1_100, 1_101, 2, Some((OpType::Fail, "held: by another client")));
        s.acquire(2_000, 3_000, 3, Some((OpType::Info, "MultipleRedlockException")));
        s.acquire(3_100, 3_101, 2, Some((OpType::Fail, "no quorum: 2 of 5")));
        s.granted(6_000, 6_001, 2);
        release(&mut s, 6_500, 2);
        // A shorter one to the end: 6501 to 7001.
        s.acquire(7_000, 7_001, 3, Some((OpType::Fail, "held: by another client")));
        let outage = s.check().longest_outage.unwrap();
        assert_eq!(
            (outage.from_ms, outage.to_ms, outage.ended_by_grant),
            (1_001.0, 6_001.0, true)
        );
        assert_eq!((outage.attempts, outage.refused_held), (3, 1));
        assert_eq!((outage.refused_other, outage.unknown), (1, 1));
        assert_eq!(outage.ttls, 5.0, "1 s where no attempt asked for a TTL");
        assert_eq!(
            outage.to_string(),
            "nobody was granted the lock from 1.0 s to 6.0 s (5.0 TTLs, until the next grant), \
             while 3 attempts came back: 1 refused as held, 1 refused otherwise, 1 unknown (the \
             first: MultipleRedlockException)"
        );
        // A holder that never released begins none; nor does a time nobody asked in.
        let mut held = HistoryBuilder::default();
        held.granted(0, 1, 1);
        held.acquire(5_000, 5_001, 2, Some((OpType::Fail, "held: by another client")));
        assert_eq!(held.check().longest_outage, None);
        let mut quiet = HistoryBuilder::default();
        quiet.granted(0, 1, 1);
        release(&mut quiet, 100, 1);
        assert_eq!(quiet.check().longest_outage, None);
    }

    #[test]
    fn rule_5_the_longest_split_vote_streak_counts_rounds_every_contender_collided() {
        let split = Some((OpType::Fail, "split vote: 2/5"));
        let mut script = HistoryBuilder::default();
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
        let mut held = HistoryBuilder::default();
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
        let none = HistoryBuilder::default().granted(0, 1, 1).check();
        assert_eq!(none.longest_split_vote_streak, None);
    }

    #[test]
    fn a_streak_says_once_for_one_round_and_times_for_more() {
        let streak = |rounds| SplitVoteStreak {
            refusals: 2,
            clients: 2,
            rounds,
            from_ms: 1000.0,
            to_ms: 1500.0,
        };
        assert_eq!(
            streak(1).to_string(),
            "2 split votes in a row from 1.0 s to 1.5 s, each of the 2 contenders refused at \
             least once running"
        );
        assert!(streak(3).to_string().ends_with("refused at least 3 times running"));
    }
}
