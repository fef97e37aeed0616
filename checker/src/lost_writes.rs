//! The `lost-writes` checker (Jepsen's set-full) for the `lock-set` workload: clients add
//! unique ids to a stored document under a lock, and a final read after healing must hold
//! every id the storage acknowledged.
//!
//! An `add` carries its id, a JSON integer, in `value` and the document in `key`; an `ok` read
//! of a key carries the document, a JSON array of ids. Rules, each with a unit test below:
//!
//! 1. The **final read** of a key is its last `ok` read in the history; other reads and the
//!    non-integer elements of a read are ignored. Keys are checked independently.
//! 2. An acknowledged add (`ok`) whose id is absent from the final read is **lost**, unless it
//!    was acknowledged after the final read was invoked: the read may have been served first,
//!    so such an add is only counted as `acknowledged_after_final_read`.
//! 3. A `fail` add certainly did not apply (the storage refused it, a stale fencing token,
//!    say): if its id is in the final read anyway, it is **failed but present**.
//! 4. An add whose outcome is unknown (`info`, or never completed) may go either way; if its
//!    id is in the final read it is **recovered**, which is not an error.
//! 5. An id in the final read that no add on that key attempted is **unexpected**, and an id
//!    in it more than once is a **duplicate** (counted once however many copies there are).
//! 6. The verdict of a key is invalid if it has any lost, failed-but-present, unexpected or
//!    duplicate id; otherwise unknown if it had adds but no `ok` read to check them against;
//!    otherwise valid. The history's verdict is the worst of its keys'.
//! 7. A history with no `add` at all was not a `lock-set` run: it is valid, with zero counts,
//!    and its reads (another workload's) are not looked at.
//!
//! An `add` whose `value` is not an integer has no id to look for and is ignored.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use foldhash::HashMap;

use crate::every::{read_as, Registration, Role};
use crate::explain::cause::Explanation;
use crate::explain::context::Context;
use crate::explain::lost_writes::{lost_writes, Write};
use crate::operation::ms;
use crate::stream::{replay, Checker, Event, Outline};
use crate::timeline::Timeline;
use crate::verdict::REPORTED_VIOLATIONS;
use crate::verdict::Checked;
use crate::words::count;
use crate::{Op, OpType, Process, Valid};

/// The result of the lost-writes check: totals over all keys, and each key's own result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LostWrites {
    pub valid: Valid,
    pub attempted: usize,
    pub acknowledged: usize,
    pub rejected: usize,
    pub unknown: usize,
    pub lost_count: usize,
    pub acknowledged_after_final_read: usize,
    pub recovered: usize,
    pub failed_but_present_count: usize,
    pub unexpected_count: usize,
    pub duplicate_count: usize,
    /// One entry per key that was added to or read, sorted by key.
    pub keys: Vec<KeyResult>,
}

/// The lost-writes result of one key (one stored document).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyResult {
    pub key: String,
    pub valid: Valid,
    /// `index` of the final read's completion; `None` if the key was never read `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_read_index: Option<u64>,
    /// Adds invoked.
    pub attempted: usize,
    /// Adds that returned `ok`.
    pub acknowledged: usize,
    /// Adds that returned `fail`.
    pub rejected: usize,
    /// Adds that returned `info` or never completed.
    pub unknown: usize,
    pub lost_count: usize,
    /// The first [`REPORTED_VIOLATIONS`] lost ids, ascending.
    pub lost: Vec<i64>,
    /// Acknowledged ids absent from the final read that were acknowledged after it began.
    pub acknowledged_after_final_read: usize,
    /// Adds of unknown outcome whose id is in the final read.
    pub recovered: usize,
    pub failed_but_present_count: usize,
    pub failed_but_present: Vec<i64>,
    pub unexpected_count: usize,
    pub unexpected: Vec<i64>,
    pub duplicate_count: usize,
    pub duplicates: Vec<i64>,
    /// Why its lost writes were lost, where it lost some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
}

/// Checks a `lock-set` history for lost, unexpected and duplicated ids.
/// Its line in the list of every checker.
pub const CHECKER: Registration = Registration {
    name: "lost-writes",
    role: Role::Verdict,
    start: |outline, _| Box::new(LostWritesChecker::new(outline)),
    read: read_as::<LostWrites>,
};

pub fn check(history: &[Op]) -> LostWrites {
    replay(history, LostWritesChecker::new(&Outline::of(history)))
}

/// The lost-writes check as a stream: it keeps every add's id and outcome, which it must, and
/// only each key's latest `ok` read.
pub struct LostWritesChecker {
    adds: BTreeMap<String, Vec<Add>>,
    final_reads: BTreeMap<String, FinalRead>,
    /// When each process's latest `ok` read of each key was invoked: the document a
    /// `lock-set` client writes is the one it read, with its id added.
    last_read: HashMap<(Process, String), u64>,
    /// The nodes that acknowledged adds, each named once, for [`Add::node`].
    nodes: Vec<String>,
    /// What the faults did to each node and client, for the explanations.
    timeline: Timeline,
    workers: usize,
    /// The run's client groups, where known.
    groups: Option<u64>,
}

/// An add, as rule 2 to 4 and the explanations need it.
struct Add {
    id: i64,
    /// `None` if never completed.
    outcome: Option<OpType>,
    completed: Option<u64>,
    invoked: u64,
    process: Process,
    /// When the read its document came from was invoked.
    read: Option<u64>,
    /// The node that acknowledged it, as an index into [`LostWritesChecker::nodes`].
    node: Option<u16>,
}

/// A key's last `ok` read.
struct FinalRead {
    /// `index` of its completion.
    index: u64,
    began: u64,
    /// The integers it returned, in its order.
    ids: Vec<i64>,
}

impl LostWritesChecker {
    pub fn new(outline: &Outline) -> LostWritesChecker {
        LostWritesChecker {
            adds: BTreeMap::new(),
            final_reads: BTreeMap::new(),
            last_read: HashMap::default(),
            nodes: Vec::new(),
            timeline: Timeline::of(&outline.nemesis),
            workers: outline.workers(),
            groups: outline.groups(),
        }
    }

    /// The index of the node that acknowledged `completion`, where it names one.
    fn node_of(&mut self, completion: Option<&Op>) -> Option<u16> {
        let name = completion?.node.as_ref()?.first()?;
        let index = match self.nodes.iter().position(|n| n == name) {
            Some(index) => index,
            None => {
                self.nodes.push(name.clone());
                self.nodes.len() - 1
            }
        };
        u16::try_from(index).ok()
    }

    fn add(&mut self, invoke: &Op, completion: Option<&Op>) {
        let Some(id) = invoke
            .value
            .as_ref()
            .or_else(|| completion.and_then(|op| op.value.as_ref()))
            .and_then(serde_json::Value::as_i64)
        else {
            return;
        };
        let key = key_of(invoke, completion);
        let add = Add {
            id,
            outcome: completion.map(|op| op.kind),
            completed: completion.map(|op| op.time),
            invoked: invoke.time,
            process: invoke.process,
            read: self
                .last_read
                .get(&(invoke.process, key.to_string()))
                .copied(),
            node: self.node_of(completion),
        };
        match self.adds.get_mut(key) {
            Some(adds) => adds.push(add),
            None => {
                self.adds.insert(key.to_string(), vec![add]);
            }
        }
    }

    /// Completions come in order: the latest `ok` read is the last to complete (rule 1).
    fn read(&mut self, invoke: &Op, completion: &Op) {
        let read = FinalRead {
            index: completion.index,
            began: invoke.time,
            ids: completion
                .value
                .as_ref()
                .and_then(serde_json::Value::as_array)
                .map(|ids| ids.iter().filter_map(serde_json::Value::as_i64).collect())
                .unwrap_or_default(),
        };
        let key = key_of(invoke, Some(completion));
        self.last_read
            .insert((invoke.process, key.to_string()), invoke.time);
        match self.final_reads.get_mut(key) {
            Some(latest) if read.index > latest.index => *latest = read,
            Some(_) => {}
            None => {
                self.final_reads.insert(key.to_string(), read);
            }
        }
    }
}

/// The key the invoke named; clients repeat it on the completion, which is the fallback.
fn key_of<'a>(invoke: &'a Op, completion: Option<&'a Op>) -> &'a str {
    invoke
        .key
        .as_deref()
        .or_else(|| completion.and_then(|op| op.key.as_deref()))
        .unwrap_or_default()
}

impl Checker for LostWritesChecker {
    type Output = LostWrites;

    fn observe(&mut self, event: Event<'_>) {
        match event {
            Event::Complete { invoke, completion } => match invoke.f.as_str() {
                "add" => self.add(invoke, Some(completion)),
                "read" if completion.kind == OpType::Ok => self.read(invoke, completion),
                _ => {}
            },
            Event::Abandoned(invoke) if invoke.f == "add" => self.add(invoke, None),
            _ => {}
        }
    }

    fn finish(self) -> LostWrites {
        let keys: Vec<KeyResult> = if self.adds.is_empty() {
            Vec::new()
        } else {
            let mut names: Vec<&String> = self.adds.keys().chain(self.final_reads.keys()).collect();
            names.sort_unstable();
            names.dedup();
            names
                .into_iter()
                .map(|key| {
                    let on_key = self.adds.get(key).map_or(&[][..], Vec::as_slice);
                    let read = self.final_reads.get(key);
                    let mut result = check_key(key, on_key, read);
                    if let Some(read) = read.filter(|_| result.lost_count > 0) {
                        result.explanation = Some(self.explain(on_key, read));
                    }
                    result
                })
                .collect()
        };

        let total = |count: fn(&KeyResult) -> usize| keys.iter().map(count).sum();
        LostWrites {
            valid: keys.iter().fold(Valid::True, |v, k| v.merge(k.valid)),
            attempted: total(|k| k.attempted),
            acknowledged: total(|k| k.acknowledged),
            rejected: total(|k| k.rejected),
            unknown: total(|k| k.unknown),
            lost_count: total(|k| k.lost_count),
            acknowledged_after_final_read: total(|k| k.acknowledged_after_final_read),
            recovered: total(|k| k.recovered),
            failed_but_present_count: total(|k| k.failed_but_present_count),
            unexpected_count: total(|k| k.unexpected_count),
            duplicate_count: total(|k| k.duplicate_count),
            keys,
        }
    }
}

impl LostWritesChecker {
    /// Rule 7 of [`explain`]: why the acknowledged adds the final read lacks were lost.
    fn explain(&self, adds: &[Add], read: &FinalRead) -> Explanation {
        let present: HashSet<i64> = read.ids.iter().copied().collect();
        let write = |add: &Add| Write {
            id: add.id,
            process: add.process,
            invoked_ms: ms(add.invoked),
            acknowledged_ms: ms(add.completed.unwrap_or(add.invoked)),
            read_ms: add.read.map(ms),
            node: add
                .node
                .and_then(|n| self.nodes.get(usize::from(n)))
                .map(String::as_str),
        };
        let acknowledged = |add: &&Add| add.outcome == Some(OpType::Ok);
        let written: Vec<Write> = adds.iter().filter(acknowledged).map(write).collect();
        let mut lost: Vec<Write> = adds
            .iter()
            .filter(acknowledged)
            .filter(|add| !present.contains(&add.id))
            .filter(|add| add.completed.is_some_and(|ok| ok < read.began))
            .map(write)
            .collect();
        lost.sort_by(|a, b| a.acknowledged_ms.total_cmp(&b.acknowledged_ms));
        let context = Context {
            timeline: &self.timeline,
            workers: self.workers,
            groups: self.groups,
        };
        lost_writes(&lost, &written, ms(read.began), &context)
    }
}

fn check_key(key: &str, adds: &[Add], final_read: Option<&FinalRead>) -> KeyResult {
    let count = |wanted: OpType| adds.iter().filter(|a| a.outcome == Some(wanted)).count();
    let mut result = KeyResult {
        key: key.to_string(),
        valid: Valid::True,
        final_read_index: final_read.map(|read| read.index),
        attempted: adds.len(),
        acknowledged: count(OpType::Ok),
        rejected: count(OpType::Fail),
        unknown: adds
            .iter()
            .filter(|a| matches!(a.outcome, None | Some(OpType::Info)))
            .count(),
        lost_count: 0,
        lost: Vec::new(),
        acknowledged_after_final_read: 0,
        recovered: 0,
        failed_but_present_count: 0,
        failed_but_present: Vec::new(),
        unexpected_count: 0,
        unexpected: Vec::new(),
        duplicate_count: 0,
        duplicates: Vec::new(),
        explanation: None,
    };
    let Some(read) = final_read else {
        if !adds.is_empty() {
            result.valid = Valid::Unknown;
        }
        return result;
    };

    let mut present = read.ids.clone();
    present.sort_unstable();
    let mut duplicates: Vec<i64> = present
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    duplicates.dedup();
    present.dedup();
    let is_present = |id: &i64| present.binary_search(id).is_ok();

    let mut lost = Vec::new();
    let mut failed_but_present = Vec::new();
    for add in adds {
        match (add.outcome, is_present(&add.id)) {
            (Some(OpType::Ok), false) => {
                // Acknowledged while the read was in flight: the storage may have served the
                // read first, so absence proves nothing.
                if add.completed.is_some_and(|ok| ok < read.began) {
                    lost.push(add.id);
                } else {
                    result.acknowledged_after_final_read += 1;
                }
            }
            (Some(OpType::Fail), true) => failed_but_present.push(add.id),
            (None | Some(OpType::Info), true) => result.recovered += 1,
            _ => {}
        }
    }
    let attempted: HashSet<i64> = adds.iter().map(|add| add.id).collect();
    let unexpected = present
        .iter()
        .copied()
        .filter(|id| !attempted.contains(id))
        .collect();

    (result.lost_count, result.lost) = capped(lost);
    (result.failed_but_present_count, result.failed_but_present) = capped(failed_but_present);
    (result.unexpected_count, result.unexpected) = capped(unexpected);
    (result.duplicate_count, result.duplicates) = capped(duplicates);
    let wrong = result.lost_count
        + result.failed_but_present_count
        + result.unexpected_count
        + result.duplicate_count;
    if wrong > 0 {
        result.valid = Valid::False;
    }
    result
}

/// The exact count of `ids` and the first [`REPORTED_VIOLATIONS`] of them in ascending order.
fn capped(mut ids: Vec<i64>) -> (usize, Vec<i64>) {
    ids.sort_unstable();
    let count = ids.len();
    ids.truncate(REPORTED_VIOLATIONS);
    (count, ids)
}

impl Checked for LostWrites {
    fn name(&self) -> &'static str {
        "lost-writes"
    }
    fn explanations(&self) -> Vec<&Explanation> {
        self.keys.iter().filter_map(|k| k.explanation.as_ref()).collect()
    }
    fn valid(&self) -> Valid {
        self.valid
    }
    fn violations(&self) -> Vec<String> {
        let mut found = Vec::new();
        if self.lost_count > 0 {
            found.push(format!(
                "{} lost",
                count(self.lost_count, "acknowledged write")
            ));
        }
        let odd = self.unexpected_count + self.failed_but_present_count + self.duplicate_count;
        if odd > 0 {
            found.push(format!("{} in the storage", count(odd, "unexpected id")));
        }
        found
    }
    fn vouches(&self) -> Option<String> {
        (self.attempted > 0).then(|| "no acknowledged write lost".into())
    }
    fn summary(&self) -> Vec<(&'static str, String)> {
        if self.attempted == 0 {
            return Vec::new();
        }
        vec![(
            "writes",
            format!(
                "{} attempted: {} acknowledged, {} failed, {} unknown ({} of those landed); \
                 {} lost ({:.1}% of acknowledged), {} unexpected",
                self.attempted,
                self.acknowledged,
                self.rejected,
                self.unknown,
                self.recovered,
                self.lost_count,
                100.0 * self.lost_count as f64 / self.acknowledged.max(1) as f64,
                self.unexpected_count
            ),
        )]
    }
    fn findings(&self, limit: usize) -> Vec<String> {
        self.keys
            .iter()
            .filter(|k| k.lost_count > 0)
            .flat_map(|k| {
                // Ids are short: four times as many fit the line a longer finding takes.
                let shown: Vec<String> =
                    k.lost.iter().take(limit.saturating_mul(4)).map(i64::to_string).collect();
                let more = match k.lost_count.saturating_sub(shown.len()) {
                    0 => String::new(),
                    more => format!(" and {more} more"),
                };
                let line = format!("lost from {}: ids {}{more}", k.key, shown.join(", "));
                match &k.explanation {
                    Some(explained) => vec![explained.line(), format!("   {line}")],
                    None => vec![line],
                }
            })
            .collect()
    }
    fn unknown_because(&self) -> Option<String> {
        let unread = self.keys.iter().all(|k| k.final_read_index.is_none());
        (self.attempted > 0 && unread).then(|| "the storage's final read did not succeed".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::HistoryBuilder;
    use crate::explain::cause::Cause;
    use crate::Process;

    /// Builds histories in order, times in milliseconds; every add and read is one op long.
    trait LostWritesScript {
        /// Process `p` adds `id` to `key` from `ms` to `ms + 1`, ending with `outcome`.
        fn add_to(&mut self, key: &str, ms: u64, p: u64, id: i64, outcome: OpType) -> &mut Self;
        fn add(&mut self, ms: u64, p: u64, id: i64, outcome: OpType) -> &mut Self;
        fn read_of(&mut self, key: &str, ms: u64, outcome: OpType, ids: &[i64]) -> &mut Self;
        fn read(&mut self, ms: u64, ids: &[i64]) -> &mut Self;
        fn check(&self) -> LostWrites;
    }

    impl LostWritesScript for HistoryBuilder {
        /// Process `p` adds `id` to `key` from `ms` to `ms + 1`, ending with `outcome`.
        fn add_to(&mut self, key: &str, ms: u64, p: u64, id: i64, outcome: OpType) -> &mut Self {
            let add = |kind| Op::new(Process::Client(p), kind, "add").key(key).value(id);
            self.at(ms, add(OpType::Invoke))
                .at(ms + 1, add(outcome))
        }
        fn add(&mut self, ms: u64, p: u64, id: i64, outcome: OpType) -> &mut Self {
            self.add_to("doc", ms, p, id, outcome)
        }
        fn read_of(&mut self, key: &str, ms: u64, outcome: OpType, ids: &[i64]) -> &mut Self {
            let read = |kind| Op::new(Process::Client(99), kind, "read").key(key);
            self.at(ms, read(OpType::Invoke))
                .at(ms + 1, read(outcome).value(ids.to_vec()))
        }
        fn read(&mut self, ms: u64, ids: &[i64]) -> &mut Self {
            self.read_of("doc", ms, OpType::Ok, ids)
        }
        fn check(&self) -> LostWrites {
            check(&self.build())
        }
    }

    #[test]
    fn every_acknowledged_id_read_back_is_valid() {
        let r = HistoryBuilder::default()
            .add(0, 1, 1, OpType::Ok)
            .add(0, 2, 2, OpType::Ok)
            .add(5, 1, 3, OpType::Ok)
            .read(100, &[3, 1, 2])
            .check();
        assert_eq!(r.valid, Valid::True);
        assert_eq!((r.attempted, r.acknowledged, r.lost_count), (3, 3, 0));
        assert_eq!(r.keys.len(), 1);
        assert_eq!(r.keys[0].final_read_index, Some(7));
    }

    #[test]
    fn every_lost_id_is_listed_when_no_limit_is_asked() {
        let r = HistoryBuilder::default()
            .add(0, 1, 1, OpType::Ok)
            .add(0, 2, 2, OpType::Ok)
            .read(100, &[1])
            .check();
        // `splitbrain check` with no --limit asks for every finding.
        let findings = r.findings(usize::MAX);
        assert!(findings.iter().any(|f| f.ends_with("ids 2")), "{findings:?}");
    }

    #[test]
    fn rule_1_the_final_read_is_the_last_ok_read() {
        let mut s = HistoryBuilder::default();
        s.add(0, 1, 1, OpType::Ok)
            .read(10, &[])
            .read(20, &[1])
            .read_of("doc", 30, OpType::Fail, &[]);
        assert_eq!(s.check().valid, Valid::True);
        s.read(40, &[]);
        assert_eq!(s.check().lost_count, 1);
    }

    #[test]
    fn rule_1_keys_are_checked_apart_and_sorted() {
        let r = HistoryBuilder::default()
            .add_to("b", 0, 1, 1, OpType::Ok)
            .add_to("a", 0, 2, 2, OpType::Ok)
            .read_of("a", 10, OpType::Ok, &[2])
            .read_of("b", 10, OpType::Ok, &[2])
            .check();
        let keys: Vec<_> = r.keys.iter().map(|k| (k.key.as_str(), k.valid)).collect();
        assert_eq!(keys, [("a", Valid::True), ("b", Valid::False)]);
        assert_eq!(
            (r.keys[1].lost.as_slice(), r.keys[1].unexpected.as_slice()),
            (&[1][..], &[2][..])
        );
        assert_eq!(r.valid, Valid::False);
    }

    #[test]
    fn rule_2_an_acknowledged_id_missing_from_the_final_read_is_lost() {
        let r = HistoryBuilder::default()
            .add(0, 1, 7, OpType::Ok)
            .add(0, 2, 3, OpType::Ok)
            .add(0, 3, 5, OpType::Ok)
            .read(10, &[5])
            .check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.lost_count, 2);
        assert_eq!(r.keys[0].lost, [3, 7]);
    }

    fn nemesis(f: &str, fault: &str, nodes: &[&str], measured: serde_json::Value) -> Op {
        let mut op = Op::new(Process::NEMESIS, OpType::Info, f)
            .nodes(nodes.iter().map(|n| n.to_string()).collect());
        op.fault = Some(fault.to_string());
        op.measured = (!measured.is_null()).then_some(measured);
        op
    }

    /// Process `p` reads the document, as a `lock-set` client does before it writes.
    fn read_by(s: &mut HistoryBuilder, ms: u64, p: u64) {
        let read = |kind| Op::new(Process::Client(p), kind, "read").key("doc");
        s.at(ms, read(OpType::Invoke))
            .at(ms + 1, read(OpType::Ok).value(Vec::<i64>::new()));
    }

    /// `client` frozen from `from` to `to`, as `client-pause` records it.
    fn freeze(s: &mut HistoryBuilder, client: &str, from: u64, to: u64) {
        let null = serde_json::Value::Null;
        s.at(
            from,
            nemesis("start", "client-pause", &[client], null.clone()),
        )
        .at(to, nemesis("stop", "client-pause", &[client], null));
    }

    #[test]
    fn explained_a_write_from_a_document_read_before_a_lost_write_wrote_over_it() {
        for (frozen, cause) in [(true, Cause::Zombie), (false, Cause::Unexplained)] {
            let mut s = HistoryBuilder::default();
            read_by(&mut s, 1_000, 0);
            read_by(&mut s, 1_001, 1);
            if frozen {
                freeze(&mut s, "client-0", 1_100, 5_000);
            }
            read_by(&mut s, 2_000, 1);
            s.add(2_100, 1, 2, OpType::Ok);
            s.add(5_050, 0, 1, OpType::Ok);
            let r = s.read(6_000, &[1]).check();
            let explained = r.keys[0].explanation.as_ref().unwrap();
            assert_eq!(explained.cause, cause);
            let story = "read the document at 1.000s, was frozen from 1.100s to 5.000s (on \
                         client-0), and wrote it back at 5.050s without the ids acknowledged \
                         meanwhile: 1 write lost, the first id 2, by process 1 at 2.101s";
            if frozen {
                assert_eq!(explained.sentence, format!("process 0 {story}"));
            } else {
                assert!(explained
                    .sentence
                    .contains("process 0 read the document at 1.000s, and wrote"));
            }
        }
    }

    #[test]
    fn explained_a_zombies_own_write_inside_the_next_holders_critical_section() {
        let mut s = HistoryBuilder::default();
        read_by(&mut s, 1_000, 0);
        read_by(&mut s, 2_000, 1);
        freeze(&mut s, "client-0", 1_100, 3_000);
        s.add(3_100, 0, 1, OpType::Ok);
        s.add(3_500, 1, 2, OpType::Ok);
        let r = s.read(6_000, &[2]).check();
        let explained = r.keys[0].explanation.as_ref().unwrap();
        assert_eq!(explained.cause, Cause::Zombie);
        assert_eq!(
            explained.sentence,
            "process 0 was frozen from 1.100s to 3.000s (on client-0), and as a zombie wrote id \
             1 at 3.100s inside process 1's critical section; process 1, which had read the \
             document at 2.000s, wrote it back at 3.500s without it"
        );
    }

    #[test]
    fn explained_writes_a_cut_off_master_acknowledged_are_a_split_brain_and_before_a_kill_a_failover(
    ) {
        let acked_by = |s: &mut HistoryBuilder, ms: u64, id: i64| {
            let add = |kind| {
                Op::new(Process::Client(1), kind, "add")
                    .key("doc")
                    .value(id)
            };
            s.at(ms, add(OpType::Invoke))
                .at(ms + 1, add(OpType::Ok).nodes(vec!["n1".into()]));
        };
        let grudge = serde_json::json!({"grudge": {"n1": ["n2", "n3"]}});
        let mut s = HistoryBuilder::default();
        s.at(
            500,
            nemesis("start", "partition-primary", &["n1", "n2", "n3"], grudge),
        );
        acked_by(&mut s, 1_000, 1);
        acked_by(&mut s, 1_500, 2);
        s.at(
            4_000,
            nemesis(
                "stop",
                "partition-primary",
                &["n1", "n2", "n3"],
                serde_json::Value::Null,
            ),
        );
        let r = s.read(6_000, &[]).check();
        let explained = r.keys[0].explanation.as_ref().unwrap();
        assert_eq!(explained.cause, Cause::SplitBrain);
        assert!(explained.sentence.starts_with(
            "2 writes acknowledged by n1 from 1.001s to 1.501s, while n1 was cut off from n2,n3 \
             (from 0.500s), were lost"
        ), "{}", explained.sentence);

        let mut s = HistoryBuilder::default();
        acked_by(&mut s, 1_000, 1);
        s.at(
            1_200,
            nemesis("start", "kill", &["n1"], serde_json::Value::Null),
        );
        let r = s.read(6_000, &[]).check();
        let explained = r.keys[0].explanation.as_ref().unwrap();
        assert_eq!(explained.cause, Cause::Failover);
        assert_eq!(
            explained.sentence,
            "1 write acknowledged by n1 at 1.001s was lost: n1 was killed at 1.200s, and the \
             replica promoted in its place had not received it"
        );
    }

    #[test]
    fn it_tells_the_verdict_what_it_found_and_lists_the_lost_ids() {
        let mut s = HistoryBuilder::default();
        for id in 1..=6 {
            s.add(0, id as u64, id, OpType::Ok);
        }
        let r = s.read(10, &[6, 9]).check();
        assert_eq!(
            r.violations(),
            [
                "5 acknowledged writes lost",
                "1 unexpected id in the storage"
            ]
        );
        let findings = r.findings(1);
        assert!(findings[0].starts_with("[unexplained] "), "{findings:?}");
        assert_eq!(findings[1], "   lost from doc: ids 1, 2, 3, 4 and 1 more");
        assert_eq!(r.summary()[0].0, "writes");
        assert!(r.summary()[0].1.contains("5 lost (83.3% of acknowledged)"));
        assert_eq!(r.vouches().as_deref(), Some("no acknowledged write lost"));
    }

    #[test]
    fn rule_2_an_add_acknowledged_during_the_final_read_is_not_lost() {
        let mut s = HistoryBuilder::default();
        let add = |kind| Op::new(Process::Client(1), kind, "add").key("doc").value(1);
        s.at(0, add(OpType::Invoke));
        s.read(10, &[]);
        s.at(20, add(OpType::Ok));
        let r = s.check();
        assert_eq!(r.valid, Valid::True);
        assert_eq!((r.lost_count, r.acknowledged_after_final_read), (0, 1));
    }

    #[test]
    fn rule_3_a_failed_add_that_applied_anyway_is_invalid() {
        let r = HistoryBuilder::default()
            .add(0, 1, 1, OpType::Fail)
            .add(0, 2, 2, OpType::Fail)
            .read(10, &[2])
            .check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.rejected, 2);
        assert_eq!(r.keys[0].failed_but_present, [2]);
        assert_eq!(r.failed_but_present_count, 1);
    }

    #[test]
    fn rule_4_an_add_of_unknown_outcome_may_be_present_or_absent() {
        let mut s = HistoryBuilder::default();
        s.add(0, 1, 1, OpType::Info)
            .add(0, 2, 2, OpType::Info)
            .at(
                0,
                Op::new(Process::Client(3), OpType::Invoke, "add")
                    .key("doc")
                    .value(3),
            )
            .read(10, &[1, 3]);
        let r = s.check();
        assert_eq!(r.valid, Valid::True);
        assert_eq!((r.unknown, r.recovered), (3, 2));
    }

    #[test]
    fn rule_5_an_id_never_added_is_unexpected() {
        let r = HistoryBuilder::default()
            .add(0, 1, 1, OpType::Ok)
            .read(10, &[1, 42])
            .check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.keys[0].unexpected, [42]);
    }

    #[test]
    fn rule_5_an_id_read_twice_is_a_duplicate() {
        let r = HistoryBuilder::default()
            .add(0, 1, 1, OpType::Ok)
            .add(0, 2, 2, OpType::Ok)
            .read(10, &[1, 2, 1, 1])
            .check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.duplicate_count, 1);
        assert_eq!(r.keys[0].duplicates, [1]);
        assert_eq!(r.lost_count, 0);
    }

    #[test]
    fn rule_6_adds_without_a_read_are_unknown() {
        let r = HistoryBuilder::default().add(0, 1, 1, OpType::Ok).check();
        assert_eq!(r.valid, Valid::Unknown);
        assert_eq!(r.keys[0].final_read_index, None);
        assert_eq!(r.acknowledged, 1);
    }

    #[test]
    fn rule_6_a_violation_elsewhere_beats_an_unread_key() {
        let r = HistoryBuilder::default()
            .add_to("unread", 0, 1, 1, OpType::Ok)
            .add(0, 2, 2, OpType::Ok)
            .read(10, &[])
            .check();
        assert_eq!(r.valid, Valid::False);
    }

    #[test]
    fn rule_7_a_history_without_adds_is_valid_and_empty() {
        let r = HistoryBuilder::default()
            .read(0, &[1, 1])
            .at(
                5,
                Op::new(Process::Client(1), OpType::Invoke, "acquire").key("lock"),
            )
            .check();
        assert_eq!(r.valid, Valid::True);
        assert!(r.keys.is_empty());
        assert_eq!(
            (r.attempted, r.unexpected_count, r.duplicate_count),
            (0, 0, 0)
        );
    }

    #[test]
    fn an_add_without_an_integer_id_is_ignored() {
        let mut s = HistoryBuilder::default();
        let add = |kind| {
            Op::new(Process::Client(1), kind, "add")
                .key("doc")
                .value("x")
        };
        s.at(0, add(OpType::Invoke)).at(1, add(OpType::Ok));
        s.add(0, 2, 1, OpType::Ok).read(10, &[1]);
        let r = s.check();
        assert_eq!((r.valid, r.attempted), (Valid::True, 1));
    }

    #[test]
    fn lists_are_capped_and_counts_exact() {
        let mut s = HistoryBuilder::default();
        let n = REPORTED_VIOLATIONS as i64 + 10;
        for id in 0..n {
            s.add(id as u64, id as u64, id, OpType::Ok);
        }
        s.read(1_000, &[]);
        let r = s.check();
        assert_eq!(r.lost_count, n as usize);
        assert_eq!(r.keys[0].lost.len(), REPORTED_VIOLATIONS);
        assert_eq!(r.keys[0].lost[..3], [0, 1, 2]);
    }

    #[test]
    fn round_trips_through_json() {
        let r = HistoryBuilder::default()
            .add(0, 1, 1, OpType::Ok)
            .read(10, &[])
            .check();
        let json = serde_json::to_string(&r).unwrap();
        let back: LostWrites = serde_json::from_str(&json).unwrap();
        assert_eq!(
            (back.valid, back.keys[0].lost.clone()),
            (Valid::False, vec![1])
        );
    }
}
