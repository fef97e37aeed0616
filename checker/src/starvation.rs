//! The `starvation` checker, for fairness: a client that kept asking for a lock for several
//! TTLs while the others were granted it again and again. A spin lock gives the lock to
//! whoever polls first after a release, often the client that just released it; a retry
//! policy that backs off longer and longer loses every race to one that does not. Neither is
//! unsafe, so the result is shown beside the verdict, never in it: a lock can starve a client
//! and still never grant itself twice.
//!
//! Rules, each with a unit test below, per lock key and process:
//!
//! 1. A **wait** begins with an `acquire` invoke and goes on through every refusal for
//!    contention (`held` or `split vote`, see [`Cause`]) after which the process asked again
//!    within one TTL. It ends with the process's grant; or, without one, with a refusal for
//!    want of nodes (a fault kept it out, not the others), an unknown outcome, an op other
//!    than `acquire`, a gap of more than a TTL before asking again, or the end of the
//!    history. A wait ended so lasted until its last refusal, or, where an acquire of it was
//!    still in flight, until the last grant that passed it over.
//! 2. Every grant to another process on the key after the wait began and before it ended is
//!    a grant **passed over** the waiting process.
//! 3. A wait is **starved** when grants kept passing it over for at least
//!    [`STARVED_AFTER_TTLS`] of its TTLs, from its start to the last grant that passed it over,
//!    and at least as many grants did: at least one lease, on average, went to someone else
//!    for every TTL it waited. A wait that went on while nobody was granted (a stuck lock, a
//!    livelock) counts only as long as others were granted. The TTL is the one its first
//!    acquire asked for, or the longest in the history where it asked for none (a session
//!    lock's), 1 s at the least.
//!
//! A split-vote livelock, where everyone collides and nobody is granted, passes no one over
//! and is no starvation: the acquisition statistics count it (their longest split-vote
//! streak).

use foldhash::HashMap;
use serde::{Deserialize, Serialize};

use crate::acquisition::Cause;
use crate::every::{read_as, Registration, Role};
use crate::operation::ms;
use crate::stream::{Checker, Event, Outline};
use crate::verdict::{Checked, REPORTED_VIOLATIONS};
use crate::words::{and_more, count, seconds};
use crate::{Op, OpType, Process, Valid};

/// How many TTLs a client must wait, passed over as often, to be starved (rule 3).
pub const STARVED_AFTER_TTLS: u64 = 5;

/// Its line in the list of every checker.
pub const CHECKER: Registration = Registration {
    name: "starvation",
    role: Role::Beside,
    start: |outline, _| Box::new(StarvationChecker::new(outline)),
    read: read_as::<Starvation>,
};

/// The result of the starvation check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Starvation {
    /// `false` where some client was starved; shown beside the verdict, never in it.
    pub valid: Valid,
    /// How many TTLs a starved wait lasted at least.
    pub after_ttls: u64,
    /// Waits that ended, starved or not.
    pub waits: usize,
    /// The longest wait, in milliseconds.
    pub longest_wait_ms: f64,
    pub starved_count: usize,
    /// The first [`REPORTED_VIOLATIONS`] starved waits, in the order they ended.
    pub starved: Vec<StarvedWait>,
}

/// A client that waited while others were granted the lock (rule 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StarvedWait {
    pub key: String,
    pub process: Process,
    pub from_ms: f64,
    /// When the last grant that passed it over was made (its `ok`).
    pub passed_over_until_ms: f64,
    /// When the wait ended: its grant, or else its last refusal or the last grant that passed
    /// it over, whichever came later.
    pub to_ms: f64,
    pub ttl_ms: u64,
    /// How many times it was refused in that time.
    pub refusals: usize,
    /// How many grants went to other processes in that time.
    pub passed_over: usize,
    /// Whether it was granted the lock in the end.
    pub granted: bool,
}

impl StarvedWait {
    /// How long grants kept passing it over.
    fn passed_over_ms(&self) -> f64 {
        self.passed_over_until_ms - self.from_ms
    }
}

/// One process asking for one key, not granted yet (rule 1).
struct Wait {
    key: String,
    from: u64,
    /// When its last refusal came; its invoke while it has none.
    last: u64,
    ttl_ms: u64,
    refusals: usize,
    passed_over: usize,
    /// When the last grant that passed it over was made.
    passed_over_until: u64,
}

/// The starvation check as a stream.
pub struct StarvationChecker {
    /// The TTL of a wait whose acquire asked for none.
    default_ttl_ms: u64,
    /// Each process's open wait: a process has one op at a time, so one wait.
    waits: HashMap<Process, Wait>,
    ended: usize,
    longest_wait: u64,
    starved_count: usize,
    starved: Vec<StarvedWait>,
}

impl StarvationChecker {
    pub fn new(outline: &Outline) -> StarvationChecker {
        StarvationChecker {
            default_ttl_ms: outline.longest_ttl_ms.unwrap_or(0).max(1_000),
            waits: HashMap::default(),
            ended: 0,
            longest_wait: 0,
            starved_count: 0,
            starved: Vec::new(),
        }
    }

    /// An acquire invoke: a new wait, or the one it carries on (rule 1).
    fn asked(&mut self, invoke: &Op) {
        let key = invoke.key.as_deref().unwrap_or_default();
        if let Some(wait) = self.waits.get(&invoke.process) {
            let gap = invoke.time.saturating_sub(wait.last);
            if wait.key == key && gap <= wait.ttl_ms * 1_000_000 {
                return;
            }
            self.end(invoke.process, false, None);
        }
        let wait = Wait {
            key: key.to_string(),
            from: invoke.time,
            last: invoke.time,
            ttl_ms: invoke.ttl_ms.unwrap_or(self.default_ttl_ms).max(1),
            refusals: 0,
            passed_over: 0,
            passed_over_until: invoke.time,
        };
        self.waits.insert(invoke.process, wait);
    }

    /// A grant: it ends its own process's wait and passes over every other on the key.
    fn granted(&mut self, invoke: &Op, completion: &Op) {
        let key = invoke.key.as_deref().unwrap_or_default();
        for (process, wait) in self.waits.iter_mut() {
            if wait.key == key && *process != invoke.process && wait.from < completion.time {
                wait.passed_over += 1;
                wait.passed_over_until = completion.time;
            }
        }
        self.end(invoke.process, true, Some(completion.time));
    }

    /// Ends `process`'s wait, if open, at `at` (granted) or else at its last refusal, or at
    /// the last grant that passed it over if later (it was still asking, its acquire in
    /// flight).
    fn end(&mut self, process: Process, granted: bool, at: Option<u64>) {
        let Some(wait) = self.waits.remove(&process) else {
            return;
        };
        let to = at.unwrap_or(wait.last.max(wait.passed_over_until));
        let waited = to.saturating_sub(wait.from);
        self.ended += 1;
        self.longest_wait = self.longest_wait.max(waited);
        let passed_over_for = wait.passed_over_until - wait.from;
        let starved = passed_over_for >= STARVED_AFTER_TTLS * wait.ttl_ms * 1_000_000
            && wait.passed_over as u64 >= STARVED_AFTER_TTLS;
        if !starved {
            return;
        }
        self.starved_count += 1;
        if self.starved.len() < REPORTED_VIOLATIONS {
            self.starved.push(StarvedWait {
                key: wait.key,
                process,
                from_ms: ms(wait.from),
                passed_over_until_ms: ms(wait.passed_over_until),
                to_ms: ms(to),
                ttl_ms: wait.ttl_ms,
                refusals: wait.refusals,
                passed_over: wait.passed_over,
                granted,
            });
        }
    }
}

impl Checker for StarvationChecker {
    type Output = Starvation;

    fn observe(&mut self, event: Event<'_>) {
        match event {
            Event::Nemesis(_) => {}
            Event::Invoke(op) if op.f == "acquire" => self.asked(op),
            Event::Invoke(op) | Event::Abandoned(op) => self.end(op.process, false, None),
            Event::Complete { invoke, completion } => {
                if invoke.f != "acquire" {
                    return;
                }
                // The completion is read with its invoke's key: it need not repeat it.
                match completion.kind {
                    OpType::Ok => self.granted(invoke, completion),
                    OpType::Fail => match Cause::of(completion.error.as_deref()) {
                        Cause::Held | Cause::SplitVote => {
                            if let Some(wait) = self.waits.get_mut(&invoke.process) {
                                wait.refusals += 1;
                                wait.last = completion.time;
                            }
                        }
                        Cause::Unavailable => self.end(invoke.process, false, None),
                    },
                    OpType::Info | OpType::Invoke => self.end(invoke.process, false, None),
                }
            }
        }
    }

    fn finish(mut self) -> Starvation {
        // In the order they began, whatever order the map keeps them in.
        let mut open: Vec<(u64, Process)> = self.waits.iter().map(|(p, w)| (w.from, *p)).collect();
        open.sort();
        for (_, process) in open {
            self.end(process, false, None);
        }
        Starvation {
            valid: if self.starved_count > 0 {
                Valid::False
            } else {
                Valid::True
            },
            after_ttls: STARVED_AFTER_TTLS,
            waits: self.ended,
            longest_wait_ms: ms(self.longest_wait),
            starved_count: self.starved_count,
            starved: self.starved,
        }
    }
}

impl Checked for Starvation {
    fn name(&self) -> &'static str {
        "starvation"
    }
    fn valid(&self) -> Valid {
        self.valid
    }
    fn violations(&self) -> Vec<String> {
        (self.starved_count > 0)
            .then(|| count(self.starved_count, "starved wait"))
            .into_iter()
            .collect()
    }
    fn summary(&self) -> Vec<(&'static str, String)> {
        if self.starved_count == 0 {
            return Vec::new();
        }
        let longest = self
            .starved
            .iter()
            .max_by(|a, b| a.passed_over_ms().total_cmp(&b.passed_over_ms()));
        let example = longest.map(|wait| format!("; the longest: {}", wait.line()));
        vec![(
            "starved",
            format!(
                "(not in the verdict) {} of {} waits saw grants go to others for {} TTLs or \
                 more, as many times{}",
                self.starved_count,
                self.waits,
                self.after_ttls,
                example.unwrap_or_default()
            ),
        )]
    }
    fn findings(&self, limit: usize) -> Vec<String> {
        let mut lines: Vec<String> = self.starved.iter().take(limit).map(|w| w.line()).collect();
        lines.extend(and_more(self.starved.len(), limit, "starved wait"));
        lines
    }
}

impl StarvedWait {
    /// `process 3 asked for lock from 1.200s; 12 grants went to others until 9.800s (8.6
    /// TTLs) and it was refused 140 times; granted at 10.100s`.
    fn line(&self) -> String {
        format!(
            "process {} asked for {} from {}; {} went to others until {} ({:.1} TTLs) and it \
             was refused {}; {}",
            self.process,
            self.key,
            seconds(self.from_ms),
            count(self.passed_over, "grant"),
            seconds(self.passed_over_until_ms),
            self.passed_over_ms() / self.ttl_ms as f64,
            count(self.refusals, "time"),
            if self.granted {
                format!("granted at {}", seconds(self.to_ms))
            } else {
                format!("not granted by {}", seconds(self.to_ms))
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::HistoryBuilder;
    use crate::stream::replay;

    const TTL: u64 = 100;

    /// Builds histories on the key "lock", times in milliseconds, every acquire asking for a
    /// 100 ms TTL.
    trait StarvationScript {
        /// Only an invoke names its key, as in the histories splitbrain writes.
        fn op(&mut self, at: u64, p: u64, kind: OpType, f: &str, error: Option<&str>) -> &mut Self;
        /// Process `p` asks at `from` and hears `outcome` at `to`.
        fn acquire(&mut self, from_to: (u64, u64), p: u64, outcome: OpType) -> &mut Self;
        /// Process `p` is refused every 10 ms from `from` to `to` with `error`.
        fn refused_until(&mut self, p: u64, from_to: (u64, u64), error: &str) -> &mut Self;
        /// Process `p` is granted the lock every `every` ms from `from` to `to`.
        fn granted_every(&mut self, p: u64, every: u64, from_to: (u64, u64)) -> &mut Self;
        fn check(&self) -> Starvation;
    }

    impl StarvationScript for HistoryBuilder {
        /// Only an invoke names its key, as in the histories splitbrain writes.
        fn op(&mut self, at: u64, p: u64, kind: OpType, f: &str, error: Option<&str>) -> &mut Self {
            let mut op = Op::new(Process::Client(p), kind, f);
            if kind == OpType::Invoke {
                op = op.key("lock");
            }
            op.ttl_ms = (kind == OpType::Invoke).then_some(TTL);
            op.error = error.map(str::to_string);
            self.at(at, op)
        }
        /// Process `p` asks at `from` and hears `outcome` at `to`.
        fn acquire(&mut self, (from, to): (u64, u64), p: u64, outcome: OpType) -> &mut Self {
            let error = (outcome == OpType::Fail).then_some("held: by another client");
            self.op(from, p, OpType::Invoke, "acquire", None)
                .op(to, p, outcome, "acquire", error)
        }
        /// Process `p` is refused every 10 ms from `from` to `to` with `error`.
        fn refused_until(&mut self, p: u64, (from, to): (u64, u64), error: &str) -> &mut Self {
            for at in (from..to).step_by(10) {
                self.op(at, p, OpType::Invoke, "acquire", None).op(
                    at + 1,
                    p,
                    OpType::Fail,
                    "acquire",
                    Some(error),
                );
            }
            self
        }
        /// Process `p` is granted the lock every `every` ms from `from` to `to`.
        fn granted_every(&mut self, p: u64, every: u64, (from, to): (u64, u64)) -> &mut Self {
            for at in (from..to).step_by(every as usize) {
                self.acquire((at, at + 1), p, OpType::Ok);
            }
            self
        }
        fn check(&self) -> Starvation {
            let ops = self.build_in_time_order();
            let outline = Outline::of(&ops);
            replay(&ops, StarvationChecker::new(&outline))
        }
    }

    #[test]
    fn a_client_refused_for_five_ttls_while_another_is_granted_again_and_again_is_starved() {
        let mut script = HistoryBuilder::default();
        script
            .refused_until(1, (0, 600), "held: by another client")
            .acquire((600, 601), 1, OpType::Ok)
            .granted_every(0, 50, (5, 600));
        let result = script.check();
        assert_eq!(result.valid, Valid::False);
        assert_eq!(result.starved_count, 1, "{result:?}");
        let starved = &result.starved[0];
        assert_eq!(
            (starved.process, starved.granted),
            (Process::Client(1), true)
        );
        assert_eq!(starved.passed_over, 12);
        assert_eq!((starved.from_ms, starved.to_ms), (0.0, 601.0));
        assert_eq!(starved.passed_over_until_ms, 556.0);
        assert!(
            result.findings(3)[0].ends_with("granted at 0.601s"),
            "{result:?}"
        );
    }

    #[test]
    fn a_short_wait_or_one_passed_over_rarely_is_not_starved() {
        // Rule 3: four TTLs is not enough, however often others were granted.
        let mut short = HistoryBuilder::default();
        short
            .refused_until(1, (0, 400), "held")
            .acquire((400, 401), 1, OpType::Ok)
            .granted_every(0, 20, (5, 400));
        assert_eq!(short.check().starved_count, 0);

        // Rule 3: a long wait behind long holds passes over three grants only.
        let mut behind_long_holds = HistoryBuilder::default();
        behind_long_holds
            .refused_until(1, (5, 900), "held")
            .acquire((900, 901), 1, OpType::Ok)
            .granted_every(0, 400, (10, 900));
        let result = behind_long_holds.check();
        assert_eq!((result.starved_count, result.valid), (0, Valid::True));
        assert_eq!(result.longest_wait_ms, 896.0);
    }

    #[test]
    fn a_refusal_for_want_of_nodes_or_a_long_gap_ends_the_wait() {
        // Rule 1: the fault kept process 1 out, not the others.
        let mut unavailable = HistoryBuilder::default();
        unavailable
            .refused_until(1, (0, 300), "held")
            .refused_until(1, (300, 310), "n1: not connected")
            .refused_until(1, (310, 700), "held")
            .granted_every(0, 20, (5, 700));
        assert_eq!(unavailable.check().starved_count, 0);

        // Rule 1: asking again after more than a TTL is a new wait.
        let mut gaps = HistoryBuilder::default();
        gaps.refused_until(1, (0, 300), "held")
            .refused_until(1, (450, 700), "held")
            .granted_every(0, 20, (5, 700));
        assert_eq!(gaps.check().starved_count, 0);
    }

    #[test]
    fn a_wait_still_refused_at_the_end_is_starved_until_its_last_refusal() {
        let mut script = HistoryBuilder::default();
        script
            .refused_until(1, (0, 800), "split vote: 2 of 5")
            .granted_every(0, 50, (5, 800));
        let result = script.check();
        assert_eq!(result.starved_count, 1);
        let starved = &result.starved[0];
        assert!(!starved.granted);
        assert_eq!(starved.to_ms, 791.0);

        // Asked once more and never answered: the grants while it was in flight passed it
        // over, and the wait ends with the last of them.
        script
            .op(800, 1, OpType::Invoke, "acquire", None)
            .granted_every(0, 50, (805, 900));
        let starved = &script.check().starved[0];
        assert_eq!((starved.passed_over_until_ms, starved.to_ms), (856.0, 856.0));
    }

    #[test]
    fn a_wait_counts_only_as_long_as_others_were_granted() {
        // Rule 3: others were granted for three TTLs, then the lock stuck and nobody was;
        // the wait went on for ten TTLs, but was passed over for three.
        let mut script = HistoryBuilder::default();
        script
            .refused_until(1, (0, 1_000), "held")
            .granted_every(0, 20, (5, 300));
        let result = script.check();
        assert_eq!(result.starved_count, 0, "{result:?}");
        assert_eq!(result.longest_wait_ms, 991.0);
    }

    #[test]
    fn a_livelock_where_nobody_is_granted_passes_no_one_over() {
        let mut script = HistoryBuilder::default();
        script
            .refused_until(0, (0, 1_000), "split vote: 2 of 5")
            .refused_until(1, (5, 1_000), "split vote: 2 of 5");
        let result = script.check();
        assert_eq!(result.starved_count, 0);
        assert_eq!(result.waits, 2);
    }
}
