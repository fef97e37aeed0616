//! The `linearizability` checker: is there an order of the history's operations, consistent
//! with real time, in which a sequential [`Model`] of the object would have given every result
//! the clients saw? Knossos's semantics, with Wing and Gong's search as Lowe improved it (see
//! `search.rs`), split by key.
//!
//! Rules, each with a unit test in `tests.rs`:
//!
//! 1. **Pairing.** A client's invoke is paired with the next completion of the same process.
//!    Jepsen processes are single-threaded, so a completion of a process with nothing pending,
//!    and an invoke while the process has an operation pending, are errors
//!    ([`CheckError`]), not verdicts. After `info` the process is free again (Jepsen goes on
//!    under a new process number); an invoke never completed is as `info`.
//! 2. **Left out.** Nemesis ops are ignored. A `fail` operation certainly did not happen and is
//!    removed.
//! 3. **Unknown outcomes.** An `info` operation (or one never completed) may take effect at any
//!    time after its invoke, or never: its return is at infinity, and a linearization may leave
//!    it out. Every `ok` operation must take effect between its invoke and its completion.
//! 4. **Vocabulary.** Only operations whose `f` the model knows are checked; the others (a lock
//!    history's renewals, say) are counted in `ops_ignored` and `ignored_fs`.
//! 5. **Values.** An operation's value is its `ok` completion's if that carries one (a read's
//!    result), else its invoke's. An `info` completion reports no result, whatever value it
//!    carries (Jepsen writes `:timed-out`), so an unknown operation keeps its invoke's value,
//!    as in knossos. A read that returned nil passes wherever it is placed.
//! 6. **Real time** is the history's order: an operation precedes another if its completion
//!    comes before the other's invoke in the history. `time` is only reported.
//! 7. **P-compositionality.** Linearizability is local: the history is linearizable if and only
//!    if each key's operations are (operations without a key form one part). Keys are searched
//!    in parallel, the largest first; the first key found not linearizable stops the others.
//! 8. **Limits, not hangs.** The search may be exponential in the number of concurrent `info`
//!    operations. All keys share a time limit and a memory bound (the cache and stacks, as
//!    estimated); a key that reaches either is unknown, with the cause.
//! 9. **Verdict.** Invalid if any key is not linearizable; otherwise unknown if any key was
//!    stopped by a limit; otherwise valid. Each key not linearizable comes with an
//!    [`Explanation`].
//! 10. **Nothing checked is no verdict.** A history without an operation the model knows
//!     (`fail`s aside) is unknown, with the cause: a model asked for that the history's
//!     operations do not match checks nothing, and proves nothing.

mod budget;
mod cache;
mod calls;
mod explanation;
mod model;
mod models;
mod registry;
mod search;

impl Checked for Linearizability {
    fn name(&self) -> &'static str {
        "linearizability"
    }
    fn valid(&self) -> Valid {
        self.valid
    }
    fn violations(&self) -> Vec<String> {
        (self.valid == Valid::False)
            .then(|| format!("not linearizable as a {}", self.model))
            .into_iter()
            .collect()
    }
    fn vouches(&self) -> Option<String> {
        Some("linearizable".into())
    }
    fn unknown_because(&self) -> Option<String> {
        self.cause
            .as_ref()
            .map(|cause| format!("linearizability {cause}"))
    }
}

#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use explanation::{Explanation, LinearizedOp, OpSummary, RefusedOp, EXPLAINED_OPS};
pub use model::{Call, Model, Values};
pub use models::{find_model, MODELS};
pub use registry::RegisteredModel;

use budget::{Budget, Stop};
use calls::PartCalls;
use registry::PreparedPart;
use search::PartOutcome;

use crate::verdict::Checked;
use crate::{Op, OpType, Process, Valid};

/// How long the search may run and how much memory it may hold, over all keys together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub time: Duration,
    /// A bound on the search's cache and stacks, in bytes.
    pub memory_bytes: usize,
}

impl Default for Limits {
    /// Ten seconds and one GiB.
    fn default() -> Self {
        Limits {
            time: Duration::from_secs(10),
            memory_bytes: 1 << 30,
        }
    }
}

/// The result of the linearizability check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Linearizability {
    pub valid: Valid,
    pub model: String,
    /// Keys (parts) in the history, and those searched to a verdict.
    pub keys: usize,
    pub keys_checked: usize,
    /// Operations given to the model, over all keys.
    pub ops_checked: usize,
    /// Operations whose `f` the model does not know, and those `f`s.
    pub ops_ignored: usize,
    pub ignored_fs: Vec<String>,
    /// Configurations (linearized operations, model state) the search entered.
    pub states_explored: u64,
    /// The most memory the search's caches and stacks held at once, as estimated and reserved
    /// from the memory bound (in chunks of 64 KiB per key being searched).
    pub peak_cache_bytes: usize,
    /// Why the verdict is unknown: the limit reached, or that nothing was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// The keys found not linearizable (usually one: the first stops the others).
    pub failures: Vec<KeyFailure>,
}

/// A key whose operations are not linearizable.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyFailure {
    /// `None` for the operations that name no key.
    pub key: Option<String>,
    pub explanation: Explanation,
}

/// A history the checker cannot take: its operations do not pair up, or a value is not what
/// the model's operation needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("op {index}: process {process} completes an operation it never invoked")]
    CompletionWithoutInvoke { index: u64, process: Process },
    #[error(
        "op {index}: process {process} invokes while its operation of op {pending_index} is \
         pending"
    )]
    InvokeWhilePending {
        index: u64,
        process: Process,
        pending_index: u64,
    },
    #[error("op {index}: {f}: {message}")]
    BadValue {
        index: u64,
        f: String,
        message: String,
    },
}

/// The history as a lock model sees it: a grant marked `ends_with_write` is released by its
/// holder's write, which commits the lock's transaction, so that write is its release, and
/// the holder's `release` afterwards (a commit of nothing) is no part of it.
fn releases_by_write(ops: &[Op]) -> std::borrow::Cow<'_, [Op]> {
    if !ops.iter().any(|op| op.ends_with_write) {
        return std::borrow::Cow::Borrowed(ops);
    }
    // Processes holding such a grant (with its lock key), writing under it, and whose write
    // released it.
    let mut holding = std::collections::HashMap::new();
    let mut writing = std::collections::HashMap::new();
    let mut released = std::collections::HashSet::new();
    let mut view = Vec::with_capacity(ops.len());
    for op in ops {
        let mut op = op.clone();
        match (op.f.as_str(), op.kind) {
            ("acquire", OpType::Ok) if op.ends_with_write => {
                holding.insert(op.process, op.key.clone());
            }
            ("add", OpType::Invoke) if holding.contains_key(&op.process) => {
                let key = holding.remove(&op.process).flatten();
                writing.insert(op.process, key.clone());
                (op.f, op.key) = ("release".into(), key);
            }
            ("add", _) if writing.contains_key(&op.process) => {
                let key = writing.remove(&op.process).flatten();
                released.insert(op.process);
                (op.f, op.key) = ("release".into(), key);
            }
            ("release", OpType::Invoke) if released.contains(&op.process) => continue,
            ("release", _) if released.remove(&op.process) => continue,
            _ => {}
        }
        view.push(op);
    }
    std::borrow::Cow::Owned(view)
}

/// Checks that `history` is linearizable with respect to `model`, within `limits`.
pub fn check(
    history: &[Op],
    model: &RegisteredModel,
    limits: Limits,
) -> Result<Linearizability, CheckError> {
    let history = releases_by_write(history);
    let split = calls::split(&history, model.fs())?;
    let keys: Vec<Option<&str>> = split.parts.iter().map(|part| part.key).collect();
    let parts = split
        .parts
        .into_iter()
        .map(|part: PartCalls| model.model.prepare_part(part))
        .collect::<Result<Vec<_>, _>>()?;
    let budget = Budget::new(limits);
    let outcomes = search_parts(&parts, &budget);

    let mut valid = Valid::True;
    let mut keys_checked = 0;
    let mut stops = Vec::new();
    let mut failures = Vec::new();
    for (key, outcome) in keys.iter().zip(outcomes) {
        match outcome {
            PartOutcome::Linearizable => keys_checked += 1,
            PartOutcome::NotLinearizable(explanation) => {
                keys_checked += 1;
                valid = Valid::False;
                failures.push(KeyFailure {
                    key: key.map(str::to_string),
                    explanation: *explanation,
                });
            }
            PartOutcome::Stopped(stop) => {
                valid = valid.merge(Valid::Unknown);
                stops.push(stop);
            }
        }
    }
    let states = budget.states();
    let ops_checked = parts.iter().map(|part| part.ops()).sum();
    if ops_checked == 0 {
        return Ok(Linearizability {
            valid: Valid::Unknown,
            model: model.name.to_string(),
            keys: 0,
            keys_checked: 0,
            ops_checked,
            ops_ignored: split.ignored,
            cause: Some(nothing_checked(model, &split.ignored_fs)),
            ignored_fs: split.ignored_fs.into_iter().map(str::to_string).collect(),
            states_explored: states,
            peak_cache_bytes: budget.peak_bytes(),
            failures,
        });
    }
    let cause = (valid == Valid::Unknown).then(|| {
        stops.sort_unstable_by_key(|stop| *stop as u8);
        stops.dedup();
        let causes: Vec<String> = stops
            .iter()
            .map(|stop| match stop {
                Stop::TimeLimit => format!("time limit {:?} reached", limits.time),
                Stop::MemoryBound => {
                    format!("memory bound {} reached", bytes(limits.memory_bytes))
                }
                Stop::Cancelled => "cancelled".to_string(),
            })
            .collect();
        format!("{} after {states} states", causes.join(" and "))
    });
    Ok(Linearizability {
        valid,
        model: model.name.to_string(),
        keys: keys.len(),
        keys_checked,
        ops_checked,
        ops_ignored: split.ignored,
        ignored_fs: split.ignored_fs.into_iter().map(str::to_string).collect(),
        states_explored: states,
        peak_cache_bytes: budget.peak_bytes(),
        cause,
        failures,
    })
}

/// Why a history gave `model` nothing to check: the model's `f`s, and the history's.
fn nothing_checked(model: &RegisteredModel, history_fs: &BTreeSet<&str>) -> String {
    let mut cause = format!(
        "nothing was checked: the history has no {} operation ({}) that did not fail",
        model.name,
        model.fs().join(", ")
    );
    if !history_fs.is_empty() {
        let fs: Vec<&str> = history_fs.iter().copied().collect();
        cause.push_str(&format!("; its operations are {}", fs.join(", ")));
    }
    cause
}

/// Searches every part, the largest first, on as many threads as the machine has cores.
fn search_parts(parts: &[Box<dyn PreparedPart + '_>], budget: &Budget) -> Vec<PartOutcome> {
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&part| Reverse(parts[part].ops()));
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        while let Some(&part) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            let outcome = parts[part].search(budget);
            if matches!(outcome, PartOutcome::NotLinearizable(_)) {
                budget.cancel();
            }
            done.push((part, outcome));
        }
        done
    };
    // One part needs no thread; asking for the cores reads cgroup files, which costs more
    // than checking a small history.
    let workers = match parts.len() {
        0 | 1 => 1,
        many => std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(many),
    };
    let mut outcomes = if workers <= 1 {
        work()
    } else {
        std::thread::scope(|scope| {
            let threads: Vec<_> = (0..workers).map(|_| scope.spawn(work)).collect();
            threads
                .into_iter()
                .flat_map(|thread| {
                    thread
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        })
    };
    outcomes.sort_unstable_by_key(|(part, _)| *part);
    outcomes.into_iter().map(|(_, outcome)| outcome).collect()
}

/// A byte count in the largest binary unit it reaches: `1 GiB`, `64 MiB`, `1.5 KiB`.
fn bytes(count: usize) -> String {
    let units = [("GiB", 1usize << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    match units.iter().find(|(_, size)| count >= *size) {
        Some((unit, size)) => {
            let amount = format!("{:.1}", count as f64 / *size as f64);
            format!("{} {unit}", amount.trim_end_matches(".0"))
        }
        None => format!("{count} bytes"),
    }
}
