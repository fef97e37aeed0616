//! The `stats` checker: no verdict without evidence (Jepsen's `jepsen.checker/stats`).
//!
//! Every other checker looks for something that went wrong, so a history in which nothing
//! happened passes them all: a run whose every acquire was refused has no double grant, and a
//! run that never wrote lost no write. This checker makes such a verdict unknown instead of
//! valid. It counts each client operation by `f` and outcome, and says what is missing.
//!
//! Rules, each with a unit test below:
//!
//! 1. **Operations.** Every client invoke is one operation, paired with its process's next op by
//!    [`crate::operation::operations`]: `ok`, `fail`, `info`, or never completed. Nemesis ops are not client
//!    operations; a completion without an invoke counts for nothing.
//! 2. **Nothing happened.** A history without a client operation is unknown.
//! 3. **Needed.** Each entry of `needed` names an `f`, or several separated by `|` of which any
//!    will do (`write|cas`). If no operation of an entry's `f`s returned `ok`, the history is
//!    unknown, and the reason names the entry and its operations' outcomes.
//! 4. **Never invalid.** Otherwise the history is valid: missing evidence makes a verdict
//!    unknown, it never makes it false.
//!
//! What each workload needs, and why (the harness passes these; [`needed_for`] infers them
//! from a history read from a file):
//!
//! | workload | needed | without it |
//! |---|---|---|
//! | `lock` | `acquire` | nothing was locked, so no double grant could happen |
//! | `lock-set` | `acquire`, `add` | nothing was locked, or nothing was added under the lock, so no add could be lost |
//! | `set` | `add` | nothing was added, so nothing could be lost |
//! | `register` | `read`, `write\|cas` | without a read no value was checked; without a write or a cas no value could be stale |

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::every::{read_as, Registration, Role};
use crate::stream::{replay, Checker, Event, Outline};
use crate::verdict::Checked;
use crate::words::one_of;
use crate::{Op, OpType, Valid};

/// The outcome counts of one `f`'s client operations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FCounts {
    pub ok: usize,
    pub fail: usize,
    pub info: usize,
    /// Invoked but never completed: the history ended first, or the process invoked again.
    pub never_completed: usize,
}

impl FCounts {
    /// Every operation counted: each invoke once.
    pub fn attempts(&self) -> usize {
        self.ok + self.fail + self.info + self.never_completed
    }

    fn add(&mut self, other: &FCounts) {
        self.ok += other.ok;
        self.fail += other.fail;
        self.info += other.info;
        self.never_completed += other.never_completed;
    }
}

/// The stats checker's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// `True` or `Unknown`, never `False`.
    pub valid: Valid,
    /// Why the verdict is unknown, in one line; `None` when it is valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Each `f`'s client operations, by outcome.
    pub by_f: BTreeMap<String, FCounts>,
}

/// Counts `history`'s client operations by `f` and outcome, and says whether every entry of
/// `needed` (an `f`, or `f`s separated by `|`, any of which will do) has an `ok` operation.
pub fn check(history: &[Op], needed: &[&str]) -> Stats {
    replay(history, StatsChecker::new(needed))
}

/// Its line in the list of every checker.
pub const CHECKER: Registration = Registration {
    name: "stats",
    role: Role::Verdict,
    start: |outline, _| Box::new(StatsChecker::new(&needed(outline))),
    read: read_as::<Stats>,
};

/// The stats check as a stream.
pub struct StatsChecker {
    needed: Vec<String>,
    by_f: BTreeMap<String, FCounts>,
}

impl StatsChecker {
    pub fn new(needed: &[&str]) -> StatsChecker {
        StatsChecker {
            needed: needed.iter().map(|entry| entry.to_string()).collect(),
            by_f: BTreeMap::new(),
        }
    }

    fn counts(&mut self, f: &str) -> &mut FCounts {
        if !self.by_f.contains_key(f) {
            self.by_f.insert(f.to_string(), FCounts::default());
        }
        self.by_f.get_mut(f).expect("inserted above")
    }
}

impl Checker for StatsChecker {
    type Output = Stats;

    fn observe(&mut self, event: Event<'_>) {
        match event {
            Event::Complete { invoke, completion } => {
                let counts = self.counts(&invoke.f);
                match completion.kind {
                    OpType::Ok => counts.ok += 1,
                    OpType::Fail => counts.fail += 1,
                    OpType::Info => counts.info += 1,
                    OpType::Invoke => counts.never_completed += 1,
                }
            }
            Event::Abandoned(invoke) => self.counts(&invoke.f).never_completed += 1,
            Event::Invoke(_) | Event::Nemesis(_) => {}
        }
    }

    fn finish(self) -> Stats {
        let by_f = self.by_f;
        let reason = if by_f.is_empty() {
            Some("no client operation in the history".to_string())
        } else {
            let missing: Vec<String> = self
                .needed
                .iter()
                .filter_map(|entry| missing_evidence(entry, &by_f))
                .collect();
            (!missing.is_empty()).then(|| missing.join("; "))
        };
        Stats {
            valid: if reason.is_some() {
                Valid::Unknown
            } else {
                Valid::True
            },
            reason,
            by_f,
        }
    }
}

/// What a history read from a file needs, inferred from its client operations' `f`s: a lock or
/// lock-set history (any `acquire`) needs an `acquire`, and an `add` if it has adds; a set
/// history (`add`) needs an `add`; a register history (`read`, `write` or `cas`) needs a `read`
/// and a `write` or `cas`. Any other history needs nothing beyond a client operation.
pub fn needed_for(history: &[Op]) -> Vec<&'static str> {
    needed(&Outline::of(history))
}

/// [`needed_for`], from a history's outline.
pub fn needed(outline: &Outline) -> Vec<&'static str> {
    let has = |f: &str| outline.has(f);
    if has("acquire") {
        if has("add") {
            vec!["acquire", "add"]
        } else {
            vec!["acquire"]
        }
    } else if has("add") {
        vec!["add"]
    } else if has("read") || has("write") || has("cas") {
        vec!["read", "write|cas"]
    } else {
        Vec::new()
    }
}

/// Why `entry` lacks evidence, or `None` if one of its `f`s has an `ok` operation.
fn missing_evidence(entry: &str, by_f: &BTreeMap<String, FCounts>) -> Option<String> {
    let fs: Vec<&str> = entry.split('|').collect();
    let mut counts = FCounts::default();
    for f in &fs {
        if let Some(f_counts) = by_f.get(*f) {
            counts.add(f_counts);
        }
    }
    if counts.ok > 0 {
        return None;
    }
    let name = one_of(&fs);
    let what = if counts.attempts() == 0 {
        format!("no {name} was attempted")
    } else {
        let outcomes: Vec<String> = [
            (counts.fail, "fail"),
            (counts.info, "info"),
            (counts.never_completed, "never completed"),
        ]
        .iter()
        .filter(|(count, _)| *count > 0)
        .map(|(count, outcome)| format!("{} {outcome}", thousands(*count)))
        .collect();
        let attempts = counts.attempts();
        format!(
            "no {name} succeeded (0 ok of {} attempt{}: {})",
            thousands(attempts),
            if attempts == 1 { "" } else { "s" },
            outcomes.join(", ")
        )
    };
    Some(match fs.iter().find_map(|f| consequence(f)) {
        Some(consequence) => format!("{what}: {consequence}"),
        None => what,
    })
}

/// What it means for a workload that no operation of `f` succeeded.
fn consequence(f: &str) -> Option<&'static str> {
    match f {
        "acquire" => Some("nothing was locked, so nothing could go wrong"),
        "add" => Some("nothing was added, so nothing could be lost"),
        "read" => Some("nothing was read, so no value was checked"),
        "write" | "cas" => Some("nothing was written, so no value could be stale"),
        _ => None,
    }
}

/// `198428` as `198,428`.
fn thousands(count: usize) -> String {
    let digits = count.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

impl Checked for Stats {
    fn name(&self) -> &'static str {
        "stats"
    }
    fn valid(&self) -> Valid {
        self.valid
    }
    fn unknown_because(&self) -> Option<String> {
        self.reason.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::HistoryBuilder;
    use serde_json::json;

    fn counts(ok: usize, fail: usize, info: usize, never_completed: usize) -> FCounts {
        FCounts {
            ok,
            fail,
            info,
            never_completed,
        }
    }

    #[test]
    fn rule_1_operations_are_counted_by_f_and_outcome() {
        let history = HistoryBuilder::default()
            .call(1, "acquire", None)
            .invoke(2, "acquire", None)
            .fail(2, "acquire", None)
            .invoke(3, "acquire", None)
            .info(3, "acquire", None)
            .nemesis("start")
            .invoke(4, "release", None)
            .invoke(4, "acquire", None)
            .ok(9, "acquire", None)
            .build();
        let stats = check(&history, &["acquire"]);
        let expected = BTreeMap::from([
            ("acquire".to_string(), counts(1, 1, 1, 1)),
            ("release".to_string(), counts(0, 0, 0, 1)),
        ]);
        assert_eq!(stats.by_f, expected);
        assert_eq!(stats.by_f["acquire"].attempts(), 4);
        assert_eq!((stats.valid, stats.reason), (Valid::True, None));
    }

    #[test]
    fn rule_2_a_history_without_client_operations_is_unknown() {
        let nemesis_only = HistoryBuilder::default().nemesis("start").build();
        for history in [Vec::new(), nemesis_only] {
            let stats = check(&history, &[]);
            assert_eq!(stats.valid, Valid::Unknown);
            assert_eq!(
                stats.reason.as_deref(),
                Some("no client operation in the history")
            );
            assert!(stats.by_f.is_empty());
        }
    }

    #[test]
    fn rule_3_a_needed_f_without_ok_is_unknown_with_its_counts() {
        let mut builder = HistoryBuilder::default();
        for process in 0..1_233 {
            builder
                .invoke(process, "acquire", None)
                .fail(process, "acquire", None);
        }
        builder.invoke(5_000, "acquire", None);
        let stats = check(&builder.build(), &["acquire"]);
        assert_eq!(stats.valid, Valid::Unknown);
        assert_eq!(
            stats.reason.as_deref(),
            Some(
                "no acquire succeeded (0 ok of 1,234 attempts: 1,233 fail, 1 never completed): \
                 nothing was locked, so nothing could go wrong"
            )
        );
    }

    #[test]
    fn rule_3_every_missing_entry_is_named() {
        let history = HistoryBuilder::default()
            .call(1, "acquire", None)
            .invoke(2, "write", json!(1))
            .info(2, "write", None)
            .build();
        let stats = check(&history, &["acquire", "add", "read", "write|cas"]);
        assert_eq!(stats.valid, Valid::Unknown);
        assert_eq!(
            stats.reason.as_deref(),
            Some(
                "no add was attempted: nothing was added, so nothing could be lost; \
                 no read was attempted: nothing was read, so no value was checked; \
                 no write or cas succeeded (0 ok of 1 attempt: 1 info): nothing was written, \
                 so no value could be stale"
            )
        );
    }

    #[test]
    fn rule_3_any_f_of_an_entry_will_do() {
        let history = HistoryBuilder::default()
            .call(1, "read", None)
            .invoke(1, "write", json!(1))
            .fail(1, "write", None)
            .call(1, "cas", json!([0, 1]))
            .build();
        assert_eq!(check(&history, &["read", "write|cas"]).valid, Valid::True);
        assert_eq!(check(&history, &["write"]).valid, Valid::Unknown);
        let unknown_f = check(&history, &["frobnicate"]);
        assert_eq!(
            unknown_f.reason.as_deref(),
            Some("no frobnicate was attempted")
        );
    }

    #[test]
    fn rule_4_never_invalid_and_serialised_like_jepsen() {
        let history = HistoryBuilder::default().call(1, "add", json!(1)).build();
        let stats = check(&history, &["add"]);
        let text = serde_json::to_string(&stats).unwrap();
        assert_eq!(
            text,
            r#"{"valid":true,"by_f":{"add":{"ok":1,"fail":0,"info":0,"never_completed":0}}}"#
        );
        assert_eq!(serde_json::from_str::<Stats>(&text).unwrap(), stats);
    }

    #[test]
    fn each_workload_needs_its_own_evidence() {
        let shape = |fs: &[&str]| {
            let mut builder = HistoryBuilder::default();
            for (process, f) in fs.iter().enumerate() {
                builder.call(process as u64, f, None);
            }
            needed_for(&builder.nemesis("add").build())
        };
        assert_eq!(shape(&["acquire", "release"]), ["acquire"]);
        assert_eq!(shape(&["acquire", "add", "read"]), ["acquire", "add"]);
        assert_eq!(shape(&["add", "read"]), ["add"]);
        assert_eq!(shape(&["write", "read"]), ["read", "write|cas"]);
        assert_eq!(shape(&["cas"]), ["read", "write|cas"]);
        assert!(shape(&["renew"]).is_empty());
        assert!(shape(&[]).is_empty(), "a nemesis `add` is no client's");
    }

    #[test]
    fn counts_read_with_thousands_separators() {
        let cases = [
            (0, "0"),
            (999, "999"),
            (1_000, "1,000"),
            (198_428, "198,428"),
        ];
        for (count, text) in cases {
            assert_eq!(thousands(count), text);
        }
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
