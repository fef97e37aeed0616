//! The `fencing` checker: a fencing lock's tokens must order its grants, and the storage must
//! turn away a holder whose token has been overtaken.
//!
//! A grant is an `acquire` that returned `ok` with a `fence`; a storage access is an `add` or
//! `read` that carried one. Ops without a fence are not looked at, so a history of a lock
//! without fencing is valid with zero counts. Rules, each with a unit test below:
//!
//! 1. Fencing tokens are **unique** per lock key: two grants of one key with the same fence
//!    are a duplicate, whenever they happened.
//! 2. Fencing tokens **increase in real-time order** per lock key: if grant A returned before
//!    grant B was invoked, A's fence is smaller than B's. Grants that overlap in time may be in
//!    either order. Each later grant is reported once, against the earlier grant with the
//!    largest fence; equal fences are rule 1's.
//! 3. Storage never **accepts a stale token** per storage key: an access that returned `ok`
//!    carries no smaller fence than any access accepted (returned `ok`) before it was invoked.
//!    Equal fences are fine, a holder reads and then writes under one grant. Accesses refused
//!    (`fail`) are only counted, and accesses of unknown outcome are ignored.
//!
//! Rules 2 and 3 are one sweep over the accesses in order of invoke, with a pointer into them
//! in order of completion: O(n log n) for n ops.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::lock_safety::REPORTED_VIOLATIONS;
use crate::operation::{ms, operations, Operation};
use crate::verdict::{count, seconds, Checked};
use crate::{Op, OpType, Process, Valid};

/// The result of the fencing check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Fencing {
    pub valid: Valid,
    /// Grants (`acquire` `ok`) that carried a fence.
    pub grants_checked: usize,
    /// Storage accesses (`add` or `read` `ok`) that carried a fence.
    pub storage_accesses_checked: usize,
    /// Storage accesses with a fence that the storage refused (`fail`).
    pub rejected_storage_accesses: usize,
    /// Grants that repeat a fence granted before on the same key.
    pub duplicate_fence_count: usize,
    /// The first [`REPORTED_VIOLATIONS`] duplicates, in order of the later grant's invoke.
    pub duplicate_fences: Vec<FencePair>,
    pub out_of_order_grant_count: usize,
    pub out_of_order_grants: Vec<FencePair>,
    pub stale_storage_access_count: usize,
    pub stale_storage_accesses: Vec<FencePair>,
}

/// Two fenced operations on one key that break a rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FencePair {
    pub key: String,
    /// The operation invoked first (for rules 2 and 3, the one that completed first).
    pub earlier: FencedOp,
    pub later: FencedOp,
}

/// A grant or storage access, as a violation names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FencedOp {
    pub process: Process,
    /// `acquire`, `add` or `read`.
    pub f: String,
    /// `index` of the invoke.
    pub invoke_index: u64,
    pub invoke_ms: f64,
    pub completed_ms: f64,
    pub fence: u64,
}

/// Checks a history's fencing tokens; see the module documentation for the rules.
pub fn check(history: &[Op]) -> Fencing {
    let mut grants: HashMap<&str, Vec<Fenced>> = HashMap::new();
    let mut storage: HashMap<&str, Vec<Fenced>> = HashMap::new();
    let mut rejected_storage_accesses = 0;
    for operation in operations(history) {
        let Some(fenced) = Fenced::of(operation) else {
            continue;
        };
        let is_storage = match operation.invoke.f.as_str() {
            "acquire" => false,
            "add" | "read" => true,
            _ => continue,
        };
        match operation.outcome() {
            Some(OpType::Ok) => {
                let by_key = if is_storage {
                    &mut storage
                } else {
                    &mut grants
                };
                by_key.entry(operation.key()).or_default().push(fenced);
            }
            Some(OpType::Fail) if is_storage => rejected_storage_accesses += 1,
            _ => {}
        }
    }

    let mut duplicates = Vec::new();
    let mut out_of_order = Vec::new();
    for (key, on_key) in &grants {
        duplicates.extend(duplicate_fences(on_key).map(|pair| (*key, pair)));
        out_of_order.extend(overtaken(on_key).map(|pair| (*key, pair)));
    }
    let mut stale = Vec::new();
    for (key, on_key) in &storage {
        stale.extend(overtaken(on_key).map(|pair| (*key, pair)));
    }

    let violations = duplicates.len() + out_of_order.len() + stale.len();
    Fencing {
        valid: if violations > 0 {
            Valid::False
        } else {
            Valid::True
        },
        grants_checked: grants.values().map(Vec::len).sum(),
        storage_accesses_checked: storage.values().map(Vec::len).sum(),
        rejected_storage_accesses,
        duplicate_fence_count: duplicates.len(),
        duplicate_fences: report(duplicates),
        out_of_order_grant_count: out_of_order.len(),
        out_of_order_grants: report(out_of_order),
        stale_storage_access_count: stale.len(),
        stale_storage_accesses: report(stale),
    }
}

/// A completed operation with a fence.
struct Fenced<'a> {
    operation: Operation<'a>,
    fence: u64,
    invoked: u64,
    completed: u64,
}

impl<'a> Fenced<'a> {
    fn of(operation: Operation<'a>) -> Option<Fenced<'a>> {
        Some(Fenced {
            fence: operation.fence()?,
            invoked: operation.invoke.time,
            completed: operation.completion?.time,
            operation,
        })
    }

    fn to_report(&self) -> FencedOp {
        FencedOp {
            process: self.operation.invoke.process,
            f: self.operation.invoke.f.clone(),
            invoke_index: self.operation.invoke.index,
            invoke_ms: ms(self.invoked),
            completed_ms: ms(self.completed),
            fence: self.fence,
        }
    }
}

/// An earlier and a later operation, by reference into one key's list.
type Pair<'h, 'a> = (&'h Fenced<'a>, &'h Fenced<'a>);

/// Each grant that repeats a fence, paired with the first grant (by invoke) of that fence.
fn duplicate_fences<'h, 'a>(grants: &'h [Fenced<'a>]) -> impl Iterator<Item = Pair<'h, 'a>> {
    let mut by_fence: Vec<&Fenced> = grants.iter().collect();
    by_fence.sort_unstable_by_key(|g| (g.fence, g.invoked, g.operation.invoke.index));
    let mut first = 0;
    (1..by_fence.len()).filter_map(move |i| {
        if by_fence[i].fence != by_fence[first].fence {
            first = i;
            return None;
        }
        Some((by_fence[first], by_fence[i]))
    })
}

/// Each operation whose fence is smaller than that of an operation completed before it was
/// invoked, paired with the completed one with the largest fence.
fn overtaken<'h, 'a>(accesses: &'h [Fenced<'a>]) -> impl Iterator<Item = Pair<'h, 'a>> {
    let mut by_invoke: Vec<&Fenced> = accesses.iter().collect();
    by_invoke.sort_unstable_by_key(|a| (a.invoked, a.operation.invoke.index));
    let mut by_completion: Vec<&Fenced> = accesses.iter().collect();
    by_completion.sort_unstable_by_key(|a| a.completed);

    let mut completed = by_completion.into_iter().peekable();
    let mut highest: Option<&Fenced> = None;
    by_invoke.into_iter().filter_map(move |later| {
        while let Some(done) = completed.next_if(|done| done.completed < later.invoked) {
            if highest.is_none_or(|h| done.fence > h.fence) {
                highest = Some(done);
            }
        }
        highest
            .filter(|earlier| earlier.fence > later.fence)
            .map(|earlier| (earlier, later))
    })
}

/// The first [`REPORTED_VIOLATIONS`] pairs in order of the later operation's invoke.
fn report(mut pairs: Vec<(&str, Pair)>) -> Vec<FencePair> {
    let order = |(_, (earlier, later)): &(&str, Pair)| {
        (later.operation.invoke.index, earlier.operation.invoke.index)
    };
    pairs.sort_unstable_by_key(order);
    pairs.truncate(REPORTED_VIOLATIONS);
    pairs
        .into_iter()
        .map(|(key, (earlier, later))| FencePair {
            key: key.to_string(),
            earlier: earlier.to_report(),
            later: later.to_report(),
        })
        .collect()
}

impl Checked for Fencing {
    fn name(&self) -> &'static str {
        "fencing"
    }
    fn valid(&self) -> Valid {
        self.valid
    }
    fn violations(&self) -> Vec<String> {
        let violations = self.duplicate_fence_count
            + self.out_of_order_grant_count
            + self.stale_storage_access_count;
        (violations > 0)
            .then(|| count(violations, "fencing-token violation"))
            .into_iter()
            .collect()
    }
    fn summary(&self) -> Vec<(&'static str, String)> {
        if self.grants_checked == 0 {
            return Vec::new();
        }
        vec![(
            "fencing",
            format!(
                "{} fenced grants, {} fenced storage accesses, {} refused as stale",
                self.grants_checked, self.storage_accesses_checked, self.rejected_storage_accesses
            ),
        )]
    }
    fn findings(&self, limit: usize) -> Vec<String> {
        self.duplicate_fences
            .iter()
            .chain(&self.out_of_order_grants)
            .chain(&self.stale_storage_accesses)
            .take(limit)
            .map(|pair| {
                let (later, earlier) = (&pair.later, &pair.earlier);
                format!(
                    "fencing on {}: {} by process {} at {} carried {}, after {} by process {} \
                     at {} carried {}",
                    pair.key,
                    later.f,
                    later.process,
                    seconds(later.invoke_ms),
                    later.fence,
                    earlier.f,
                    earlier.process,
                    seconds(earlier.invoke_ms),
                    earlier.fence
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds histories in order, times in milliseconds.
    #[derive(Default)]
    struct Script(Vec<Op>);

    impl Script {
        fn push(&mut self, ms: u64, op: Op) -> &mut Self {
            let index = self.0.len() as u64;
            self.0.push(op.at(index, ms * 1_000_000));
            self
        }
        /// Process `p` invokes `f` on `key` at `from` and completes it at `to`. A grant's
        /// fence comes back with its `ok`; a storage access sends its fence with the invoke.
        fn op(
            &mut self,
            f: &str,
            key: &str,
            (from, to): (u64, u64),
            p: u64,
            outcome: OpType,
            fence: u64,
        ) -> &mut Self {
            let op = |kind| Op::new(Process::Client(p), kind, f).key(key);
            let (invoke, completion) = if f == "acquire" {
                (op(OpType::Invoke), op(outcome).fence(Some(fence)))
            } else {
                (op(OpType::Invoke).fence(Some(fence)), op(outcome))
            };
            self.push(from, invoke).push(to, completion)
        }
        fn grant(&mut self, from: u64, to: u64, p: u64, fence: u64) -> &mut Self {
            self.op("acquire", "lock", (from, to), p, OpType::Ok, fence)
        }
        fn write(&mut self, from: u64, to: u64, p: u64, fence: u64) -> &mut Self {
            self.op("add", "doc", (from, to), p, OpType::Ok, fence)
        }
        fn check(&self) -> Fencing {
            check(&self.0)
        }
    }

    /// Sorts a script's ops by time, keeping each process's order, and renumbers them.
    fn in_time_order(mut s: Script) -> Script {
        s.0.sort_by_key(|op| op.time);
        for (index, op) in s.0.iter_mut().enumerate() {
            op.index = index as u64;
        }
        s
    }

    #[test]
    fn increasing_fences_and_accesses_are_valid() {
        let r = Script::default()
            .grant(0, 1, 1, 1)
            .write(2, 3, 1, 1)
            .grant(10, 11, 2, 2)
            .write(12, 13, 2, 2)
            .check();
        assert_eq!(r.valid, Valid::True);
        assert_eq!((r.grants_checked, r.storage_accesses_checked), (2, 2));
    }

    #[test]
    fn a_history_without_fences_is_valid_with_zero_counts() {
        let mut s = Script::default();
        s.push(
            0,
            Op::new(Process::Client(1), OpType::Invoke, "acquire").key("lock"),
        )
        .push(
            1,
            Op::new(Process::Client(1), OpType::Ok, "acquire").key("lock"),
        );
        let r = s.check();
        assert_eq!(r.valid, Valid::True);
        assert_eq!((r.grants_checked, r.storage_accesses_checked), (0, 0));
    }

    #[test]
    fn rule_1_a_repeated_fence_is_a_duplicate_even_when_concurrent() {
        let r = Script::default()
            .grant(0, 10, 1, 5)
            .grant(1, 9, 2, 5)
            .grant(20, 21, 3, 5)
            .check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.duplicate_fence_count, 2);
        assert_eq!(
            r.out_of_order_grant_count, 0,
            "equal fences are duplicates only"
        );
        let pairs: Vec<_> = r
            .duplicate_fences
            .iter()
            .map(|p| (p.earlier.process, p.later.process))
            .collect();
        assert_eq!(
            pairs,
            [
                (Process::Client(1), Process::Client(2)),
                (Process::Client(1), Process::Client(3)),
            ]
        );
        assert_eq!(r.duplicate_fences[0].later.invoke_index, 2);
        assert_eq!(r.duplicate_fences[0].later.completed_ms, 9.0);
    }

    #[test]
    fn rule_1_the_same_fence_on_two_keys_is_fine() {
        let r = Script::default()
            .grant(0, 1, 1, 1)
            .op("acquire", "other", (0, 1), 2, OpType::Ok, 1)
            .check();
        assert_eq!(r.valid, Valid::True);
    }

    #[test]
    fn rule_2_a_later_grant_with_a_smaller_fence_is_out_of_order() {
        let r = Script::default()
            .grant(0, 1, 1, 7)
            .grant(10, 11, 2, 3)
            .check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.out_of_order_grant_count, 1);
        let pair = &r.out_of_order_grants[0];
        assert_eq!(pair.key, "lock");
        assert_eq!((pair.earlier.fence, pair.later.fence), (7, 3));
        assert_eq!(pair.later.f, "acquire");
    }

    #[test]
    fn rule_2_overlapping_grants_may_come_in_either_order() {
        let s = in_time_order({
            let mut s = Script::default();
            s.grant(0, 10, 1, 2).grant(5, 8, 2, 1);
            s
        });
        assert_eq!(s.check().valid, Valid::True);
    }

    #[test]
    fn rule_2_each_later_grant_is_reported_once_against_the_largest_fence() {
        let r = Script::default()
            .grant(0, 1, 1, 5)
            .grant(2, 3, 2, 9)
            .grant(4, 5, 3, 8)
            .grant(10, 11, 4, 1)
            .check();
        assert_eq!(r.out_of_order_grant_count, 2);
        let pairs: Vec<_> = r
            .out_of_order_grants
            .iter()
            .map(|p| (p.earlier.fence, p.later.fence))
            .collect();
        assert_eq!(pairs, [(9, 8), (9, 1)]);
    }

    #[test]
    fn rule_3_storage_accepting_a_smaller_fence_is_stale() {
        let r = Script::default()
            .write(0, 1, 1, 4)
            .write(2, 3, 1, 4)
            .op("read", "doc", (5, 6), 2, OpType::Ok, 3)
            .check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.stale_storage_access_count, 1);
        let pair = &r.stale_storage_accesses[0];
        assert_eq!((pair.key.as_str(), pair.later.f.as_str()), ("doc", "read"));
        assert_eq!((pair.earlier.fence, pair.later.fence), (4, 3));
    }

    #[test]
    fn rule_3_a_refused_stale_access_is_counted_not_a_violation() {
        let r = Script::default()
            .write(0, 1, 1, 4)
            .op("add", "doc", (5, 6), 2, OpType::Fail, 3)
            .op("add", "doc", (7, 8), 3, OpType::Info, 2)
            .check();
        assert_eq!(r.valid, Valid::True);
        assert_eq!(
            (r.storage_accesses_checked, r.rejected_storage_accesses),
            (1, 1)
        );
    }

    #[test]
    fn rule_3_overlapping_accesses_and_other_keys_do_not_conflict() {
        let s = in_time_order({
            let mut s = Script::default();
            s.write(0, 10, 1, 4)
                .write(5, 6, 2, 3)
                .op("add", "other", (20, 21), 3, OpType::Ok, 1);
            s
        });
        assert_eq!(s.check().valid, Valid::True);
    }

    #[test]
    fn lists_are_capped_and_counts_exact() {
        let mut s = Script::default();
        s.grant(0, 1, 0, u64::MAX);
        let n = REPORTED_VIOLATIONS as u64 + 5;
        for i in 1..=n {
            s.grant(10 * i, 10 * i + 1, i, i);
        }
        let r = s.check();
        assert_eq!(r.out_of_order_grant_count, n as usize);
        assert_eq!(r.out_of_order_grants.len(), REPORTED_VIOLATIONS);
        assert_eq!(r.out_of_order_grants[0].later.fence, 1);
    }
}
