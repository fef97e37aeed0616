//! Checking a history in one pass, op by op, holding only what is still open.
//!
//! A history can be longer than memory would hold as ops, so every checker but the
//! linearizability search reads it as a stream: [`Pairing`] turns the ops into [`Event`]s (an
//! invoke, a completion with its invoke, an invoke its process abandoned, a nemesis op), and a
//! [`Checker`] folds them into its result. What a checker needs to know of the history as a
//! whole before it starts (its faults with their stops, its end, the longest TTL asked) is the
//! history's [`Outline`], read in a first pass that keeps only the nemesis ops.
//!
//! Checkers forget what no later op can change: a hold that ended before every hold still
//! open and every acquire still pending began, say. That rests on ops coming in order of time,
//! as every history splitbrain writes does; the outline says whether they did, and a checker
//! given a history out of time order forgets nothing, which costs memory and never a finding.

use std::borrow::Borrow;
use std::collections::{BTreeSet, BinaryHeap};

use foldhash::HashMap;

use crate::windows::{fault_windows, Window};
use crate::{Op, OpType, Process, Renewal};

/// How many events pass between two looks for what can be forgotten, unless a test asks for
/// fewer.
pub(crate) const FORGET_EVERY: usize = 4096;

/// What one op means to a checker.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A nemesis op.
    Nemesis(&'a Op),
    /// A client's invoke.
    Invoke(&'a Op),
    /// A client op's completion (`ok`, `fail` or `info`), with its invoke.
    Complete { invoke: &'a Op, completion: &'a Op },
    /// An invoke its process never completed: it invoked again, or the history ended first.
    /// Its outcome is unknown, like `info`'s.
    Abandoned(&'a Op),
}

/// A checker that reads a history as a stream of events.
pub trait Checker {
    type Output;
    fn observe(&mut self, event: Event<'_>);
    fn finish(self) -> Self::Output;
}

/// What the history alone does not say about its run, where the caller knows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunFacts {
    /// The number of client workers.
    pub concurrency: Option<usize>,
    /// The number of client groups with links of their own (worker `w` is in group
    /// `w % groups`); `None` or 0 where unknown or where clients reach the nodes directly.
    pub client_groups: Option<usize>,
    /// How long a node must look gone before the deployment promotes another.
    pub detector_ms: Option<u64>,
    /// Whether the deployment acknowledges a write only once a majority holds it (a consensus
    /// group): a cut-off master acknowledges nothing, so a change of master puts no
    /// acknowledged write or granted lease at risk, and counting them would mislead.
    pub majority_commits: bool,
}

impl RunFacts {
    /// How much a leader election may add to a lease past its TTL, where a majority commits
    /// (a consensus group keeps the leases): the failure detector, an election timeout and the
    /// election after it.
    pub fn elections(&self) -> Option<std::time::Duration> {
        let detector = self.detector_ms?;
        self.majority_commits
            .then(|| std::time::Duration::from_millis(detector))
    }
}

/// Turns ops, in history order, into events: each completion comes with its invoke, and an
/// invoke its process never completed is abandoned when the process invokes again or, at
/// [`Pairing::finish`], in order of index. A completion with no invoke before it is dropped.
/// `O` is `Op` for a stream and `&Op` for a history in memory.
pub struct Pairing<O> {
    pending: HashMap<Process, O>,
}

impl<O: Borrow<Op>> Default for Pairing<O> {
    fn default() -> Self {
        Pairing {
            pending: HashMap::default(),
        }
    }
}

impl<O: Borrow<Op>> Pairing<O> {
    /// Hands `checker` the events of the next op.
    pub fn feed(&mut self, op: O, checker: &mut impl Checker) {
        let borrowed: &Op = op.borrow();
        if borrowed.process.is_nemesis() || borrowed.kind != OpType::Invoke {
            self.feed_completion(borrowed, checker);
            return;
        }
        if let Some(earlier) = self.pending.remove(&borrowed.process) {
            checker.observe(Event::Abandoned(earlier.borrow()));
        }
        checker.observe(Event::Invoke(borrowed));
        self.pending.insert(borrowed.process, op);
    }

    /// [`Pairing::feed`] for an op that is not a client's invoke (a completion or a nemesis
    /// op), which the pairing does not keep: it needs only a look at it.
    pub fn feed_completion(&mut self, op: &Op, checker: &mut impl Checker) {
        if op.process.is_nemesis() {
            checker.observe(Event::Nemesis(op));
        } else if op.kind != OpType::Invoke {
            if let Some(invoke) = self.pending.remove(&op.process) {
                checker.observe(Event::Complete {
                    invoke: invoke.borrow(),
                    completion: op,
                });
            }
        }
    }

    /// The end of the history: every invoke still pending is abandoned.
    pub fn finish(self, checker: &mut impl Checker) {
        let mut pending: Vec<O> = self.pending.into_values().collect();
        pending.sort_by_key(|op| op.borrow().index);
        for op in &pending {
            checker.observe(Event::Abandoned(op.borrow()));
        }
    }
}

impl Pairing<Op> {
    /// [`Pairing::feed`] for an op read into a buffer that is reused for the next line
    /// ([`crate::HistoryReader::next_into`]): an invoke waits for its completion, so it is
    /// taken and the buffer left blank; any other op is only looked at.
    pub fn feed_read(&mut self, op: &mut Op, checker: &mut impl Checker) {
        if op.kind == OpType::Invoke && !op.process.is_nemesis() {
            let blank = Op::new(Process::Client(0), OpType::Invoke, "");
            self.feed(std::mem::replace(op, blank), checker);
        } else {
            self.feed_completion(op, checker);
        }
    }
}

/// Runs `checker` over a history held in memory.
pub fn replay<C: Checker>(history: &[Op], mut checker: C) -> C::Output {
    let mut pairing = Pairing::default();
    for op in history {
        pairing.feed(op, &mut checker);
    }
    pairing.finish(&mut checker);
    checker.finish()
}

/// What the checkers need to know of a whole history before they read it op by op.
#[derive(Debug, Clone, Default)]
pub struct Outline {
    /// Every nemesis op, in history order: a run has a few hundred at most.
    pub nemesis: Vec<Op>,
    /// The latest time of any op.
    pub end: u64,
    /// The longest `ttl_ms` any op asked for.
    pub longest_ttl_ms: Option<u64>,
    /// Some acquire was granted with `renewal: silent` (the stuck-lock checker's rule 1).
    pub silent_library: bool,
    /// The `f`s of the client ops.
    pub client_fs: BTreeSet<String>,
    /// Client ops.
    pub client_ops: usize,
    /// Every op came at or after the time of the one before it.
    pub in_time_order: bool,
    /// The number of client workers, where the run says it; see [`Outline::workers`].
    pub known_workers: Option<usize>,
    /// The number of client groups with links of their own, where the run says it.
    pub known_groups: Option<usize>,
    /// The largest client process that invoked before the first client `info`.
    largest_before_info: Option<u64>,
    seen_info: bool,
}

impl Outline {
    pub fn new() -> Outline {
        Outline {
            in_time_order: true,
            ..Outline::default()
        }
    }

    pub fn of(history: &[Op]) -> Outline {
        let mut outline = Outline::new();
        for op in history {
            outline.observe(op);
        }
        outline
    }

    pub fn observe(&mut self, op: &Op) {
        self.in_time_order &= op.time >= self.end;
        self.end = self.end.max(op.time);
        self.longest_ttl_ms = self.longest_ttl_ms.max(op.ttl_ms);
        let Process::Client(process) = op.process else {
            self.nemesis.push(op.clone());
            return;
        };
        self.client_ops += 1;
        if !self.client_fs.contains(&op.f) {
            self.client_fs.insert(op.f.clone());
        }
        // The completion repeats its invoke's `f`.
        self.silent_library |=
            op.kind == OpType::Ok && op.f == "acquire" && op.renewal == Some(Renewal::Silent);
        self.seen_info |= op.kind == OpType::Info;
        if !self.seen_info && op.kind == OpType::Invoke {
            self.largest_before_info = self.largest_before_info.max(Some(process));
        }
    }

    /// Whether a client op had `f`.
    pub fn has(&self, f: &str) -> bool {
        self.client_fs.contains(f)
    }

    /// The worker count where the run does not say it (the coverage checker's module doc):
    /// one more than the largest client process that invoked before the first client `info`.
    pub fn inferred_concurrency(&self) -> usize {
        self.largest_before_info.map_or(1, |p| p as usize + 1)
    }

    /// The number of client workers: process `p` ran on worker `p % workers`, which a client
    /// fault names `client-<worker>`. The run's own count where known, else inferred.
    pub fn workers(&self) -> usize {
        self.known_workers
            .unwrap_or_else(|| self.inferred_concurrency())
    }

    /// The number of client groups with links of their own, where the run says it.
    pub fn groups(&self) -> Option<u64> {
        self.known_groups.map(|groups| groups as u64)
    }

    /// The faults, from each start to its stop.
    pub(crate) fn windows(&self) -> Vec<Window> {
        fault_windows(&self.nemesis)
    }
}

/// The `n` smallest items by key seen so far, for the first few findings of a list whose
/// count may run into millions.
pub(crate) struct Smallest<K: Ord, T> {
    n: usize,
    heap: BinaryHeap<Ranked<K, T>>,
}

struct Ranked<K, T>(K, T);

impl<K: Ord, T> PartialEq for Ranked<K, T> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<K: Ord, T> Eq for Ranked<K, T> {}
impl<K: Ord, T> PartialOrd for Ranked<K, T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<K: Ord, T> Ord for Ranked<K, T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl<K: Ord, T> Smallest<K, T> {
    pub(crate) fn new(n: usize) -> Smallest<K, T> {
        Smallest {
            n,
            heap: BinaryHeap::new(),
        }
    }

    pub(crate) fn push(&mut self, key: K, item: T) {
        if self.heap.len() < self.n {
            self.heap.push(Ranked(key, item));
        } else if self.heap.peek().is_some_and(|largest| key < largest.0) {
            self.heap.pop();
            self.heap.push(Ranked(key, item));
        }
    }

    /// Whether an item with `key` pushed now would be kept.
    pub(crate) fn would_keep(&self, key: &K) -> bool {
        self.bound().is_none_or(|largest| key < largest)
    }

    /// The largest key kept, once `n` are kept: no item with a larger key will be.
    pub(crate) fn bound(&self) -> Option<&K> {
        (self.heap.len() == self.n)
            .then(|| self.heap.peek().map(|largest| &largest.0))
            .flatten()
    }

    /// The items in order of key.
    pub(crate) fn into_sorted(self) -> Vec<T> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|ranked| ranked.1)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(index: u64, process: u64, kind: OpType) -> Op {
        Op::new(Process::Client(process), kind, "acquire")
            .key("lock")
            .at(index, index * 1_000)
    }

    /// Writes each event down as (kind, invoke index, completion index).
    #[derive(Default)]
    struct Log(Vec<(&'static str, u64, Option<u64>)>);

    impl Checker for Log {
        type Output = Vec<(&'static str, u64, Option<u64>)>;
        fn observe(&mut self, event: Event<'_>) {
            self.0.push(match event {
                Event::Nemesis(op) => ("nemesis", op.index, None),
                Event::Invoke(op) => ("invoke", op.index, None),
                Event::Complete { invoke, completion } => {
                    ("complete", invoke.index, Some(completion.index))
                }
                Event::Abandoned(op) => ("abandoned", op.index, None),
            });
        }
        fn finish(self) -> Self::Output {
            self.0
        }
    }

    #[test]
    fn pairing_gives_each_completion_its_invoke_and_abandons_what_was_never_completed() {
        let history = vec![
            op(0, 1, OpType::Invoke),
            op(1, 2, OpType::Invoke),
            Op::new(Process::NEMESIS, OpType::Info, "start").at(2, 2_000),
            op(3, 2, OpType::Ok),
            op(4, 1, OpType::Invoke),
            op(5, 3, OpType::Ok),
            op(6, 4, OpType::Invoke),
        ];
        assert_eq!(
            replay(&history, Log::default()),
            [
                ("invoke", 0, None),
                ("invoke", 1, None),
                ("nemesis", 2, None),
                ("complete", 1, Some(3)),
                ("abandoned", 0, None),
                ("invoke", 4, None),
                ("invoke", 6, None),
                ("abandoned", 4, None),
                ("abandoned", 6, None),
            ]
        );
    }

    #[test]
    fn the_outline_sees_the_whole_history() {
        let mut late = op(3, 1, OpType::Info);
        late.ttl_ms = Some(500);
        let history = vec![
            op(0, 0, OpType::Invoke),
            op(1, 4, OpType::Invoke),
            Op::new(Process::NEMESIS, OpType::Info, "start").at(2, 2_000),
            late,
            op(4, 9, OpType::Invoke).at(4, 1_000),
        ];
        let outline = Outline::of(&history);
        assert_eq!(outline.nemesis.len(), 1);
        assert_eq!(outline.end, 3_000);
        assert_eq!(outline.longest_ttl_ms, Some(500));
        assert_eq!(outline.client_ops, 4);
        assert_eq!(outline.inferred_concurrency(), 5);
        assert!(outline.has("acquire") && !outline.has("add"));
        assert!(!outline.in_time_order, "the last op went back in time");
    }

    #[test]
    fn smallest_keeps_the_first_items_by_key() {
        let mut smallest = Smallest::new(3);
        for key in [5, 1, 9, 3, 7, 2, 8] {
            smallest.push(key, key * 10);
        }
        assert_eq!(smallest.into_sorted(), [10, 20, 30]);
    }
}
