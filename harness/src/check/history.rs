//! Checking a history: every checker on a run's `history.jsonl` (at the end of a run, and
//! again by `splitbrain check`), or on a history in memory.
//!
//! The linearizability model follows from the operations unless one is asked for: a register
//! history (`write`, `cas`) is checked as a `cas-register`, key by key, and counts in the
//! verdict; a lock history (`acquire`) is checked as an `owner-mutex` and is shown beside lock
//! safety without counting, because a mutex has no leases: a lease that ran out and was taken
//! by another client is not linearizable as a mutex, yet is exactly what a lease lock
//! promises, and lock safety judges leases.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use splitbrain_checker::every::{EveryChecker, Sections};
use splitbrain_checker::linearizability::{self, find_model, Limits, Linearizability};
use splitbrain_checker::stream::{self, Checker, Outline, Pairing, RunFacts};
use splitbrain_checker::{read_history, HistoryError, HistoryReader, Op, OpType, Process, Valid};

use crate::error::HarnessError;
use crate::store::{injected_faults, OpCounts, Results, FORMAT};
use crate::summary;

/// How the linearizability checker runs on a history.
#[derive(Debug, Clone, Copy)]
pub struct LinearizabilityCheck {
    /// The model asked for; `None`: the one the operations call for, if any.
    pub model: Option<&'static linearizability::RegisteredModel>,
    pub limits: Limits,
}

impl Default for LinearizabilityCheck {
    /// The model the operations call for, within 30 s and 1 GiB.
    fn default() -> Self {
        LinearizabilityCheck {
            model: None,
            limits: Limits {
                time: Duration::from_secs(30),
                memory_bytes: 1 << 30,
            },
        }
    }
}

/// Reads back a run's history and checks it with every checker; `facts` says what the
/// history does not.
pub fn check_history(
    path: &Path,
    interrupted: bool,
    error: Option<String>,
    facts: RunFacts,
) -> Result<Results, HarnessError> {
    // A run that failed before its clients started has no history.
    if !path.exists() {
        return Ok(check_ops(
            &[],
            interrupted,
            error,
            facts,
            &LinearizabilityCheck::default(),
        ));
    }
    let checked = check_file(path, &LinearizabilityCheck::default(), facts)
        .with_context(|| format!("reading back {}", path.display()))?;
    Ok(checked.results(interrupted, error))
}

/// Every checker on `ops`, a history in memory, with the linearizability check `lin` asks for
/// where a model applies (a history it cannot search is `unknown` there, with why).
pub fn check_ops(
    ops: &[Op],
    interrupted: bool,
    error: Option<String>,
    facts: RunFacts,
    lin: &LinearizabilityCheck,
) -> Results {
    let outline = Outline::of(ops);
    let mut counts = OpCounts::default();
    ops.iter().for_each(|op| counts.add(op));
    let verdicts = stream::replay(ops, EveryChecker::new(&outline, facts));
    let (linearizability, _) = searched(ops, &outline, model_for(&outline, lin), lin.limits);
    Checked {
        outline,
        counts,
        verdicts,
        linearizability,
        search_error: None,
        truncated_tail: false,
    }
    .results(interrupted, error)
}

/// Checks the history at `path` with every checker, reading it as a stream twice: once for
/// its [`Outline`] (its faults, its end), once through every checker. Memory is what the
/// checkers hold open, not the history's length; the ops are kept only for a linearizability
/// search, which needs them all.
pub(crate) fn check_file(
    path: &Path,
    lin: &LinearizabilityCheck,
    facts: RunFacts,
) -> Result<Checked, HistoryError> {
    let read = || -> Result<_, HistoryError> {
        let file = std::fs::File::open(path)?;
        Ok(std::io::BufReader::with_capacity(1 << 16, file))
    };
    let (outline, truncated_tail) = outline_of(read()?)?;
    // The second pass reads no further than the first did: a history still being written
    // may have grown in between, and its outline would not cover the new ops.
    let outlined = outline.client_ops + outline.nemesis.len();
    let model = model_for(&outline, lin);
    let searched = model.filter(|&(_, counts)| counts || outline.client_ops <= BESIDE_MOST_OPS);
    let mut counts = OpCounts::default();
    let (verdicts, (linearizability, search_error)) = if searched.is_some() {
        let mut ops = read_history(read()?)?.ops;
        ops.truncate(outlined);
        ops.iter().for_each(|op| counts.add(op));
        let verdicts = stream::replay(&ops, EveryChecker::new(&outline, facts));
        (verdicts, self::searched(&ops, &outline, model, lin.limits))
    } else {
        let verdicts = streamed(read()?, &outline, facts, &mut counts)?;
        let skipped = model
            .map(|(model, in_verdict)| (search_skipped(model, outline.client_ops), in_verdict));
        (verdicts, (skipped, None))
    };
    Ok(Checked {
        outline,
        counts,
        verdicts,
        linearizability,
        search_error,
        truncated_tail,
    })
}

/// The first pass over a history: its outline, and whether its last line was cut short.
fn outline_of(history: impl std::io::BufRead) -> Result<(Outline, bool), HistoryError> {
    let mut outline = Outline::new();
    let mut ops = HistoryReader::for_outline(history);
    let mut op = Op::new(Process::Client(0), OpType::Invoke, "");
    while ops.next_into(&mut op)? {
        outline.observe(&op);
    }
    Ok((outline, ops.truncated_tail()))
}

/// Every checker but the linearizability search over the ops of `history` that `outline`
/// covers, as a stream, counting them into `counts`.
fn streamed(
    history: impl std::io::BufRead,
    outline: &Outline,
    facts: RunFacts,
    counts: &mut OpCounts,
) -> Result<Sections, HistoryError> {
    let mut checkers = EveryChecker::new(outline, facts);
    let mut pairing = Pairing::default();
    let mut ops = HistoryReader::new(history);
    let mut op = Op::new(Process::Client(0), OpType::Invoke, "");
    for _ in 0..outline.client_ops + outline.nemesis.len() {
        if !ops.next_into(&mut op)? {
            break;
        }
        counts.add(&op);
        pairing.feed_read(&mut op, &mut checkers);
    }
    pairing.finish(&mut checkers);
    Ok(checkers.finish())
}

/// The causes the checkers' explanations give the violations of a history still being
/// written, so far (each with how many it explains): what `--stop-at-first` watches. No
/// linearizability search: it explains nothing, and would cost the most.
pub(crate) fn causes_so_far(
    path: &Path,
    facts: RunFacts,
) -> Result<Vec<(splitbrain_checker::explain::Cause, usize)>, HistoryError> {
    let read =
        || -> Result<_, HistoryError> { Ok(std::io::BufReader::new(std::fs::File::open(path)?)) };
    let (outline, _) = outline_of(read()?)?;
    let sections = streamed(read()?, &outline, facts, &mut OpCounts::default())?;
    Ok(crate::matrix::causes_in(&sections))
}

/// The linearizability search where a model applies, and whether it counts; a history it
/// cannot search is `unknown` there, with why, and the error is returned beside.
fn searched(
    ops: &[Op],
    outline: &Outline,
    model: Option<(&'static linearizability::RegisteredModel, bool)>,
    limits: Limits,
) -> (
    Option<(Linearizability, bool)>,
    Option<linearizability::CheckError>,
) {
    let Some((model, counts)) = model else {
        return (None, None);
    };
    match search(ops, outline, model, counts, limits) {
        Ok(result) => (Some((result, counts)), None),
        Err(e) => {
            let cause = format!("the history cannot be checked: {e}");
            (Some((not_searched(model, cause), counts)), Some(e))
        }
    }
}

/// A history checked: what every checker found, and what it takes to say it.
pub(crate) struct Checked {
    outline: Outline,
    counts: OpCounts,
    verdicts: Sections,
    linearizability: Option<(Linearizability, bool)>,
    /// Why the linearizability search could not take the history, where it could not.
    pub(crate) search_error: Option<linearizability::CheckError>,
    pub(crate) truncated_tail: bool,
}

impl Checked {
    /// The results, and the verdict they make. A history that shows none of the successful
    /// operations its workload needs (Jepsen's stats checker) is at best `unknown`: nothing
    /// was tested.
    pub(crate) fn results(self, interrupted: bool, error: Option<String>) -> Results {
        let (linearizability, counts) = match self.linearizability {
            Some((result, counts)) => (Some(result), counts),
            None => (None, false),
        };
        let mut results = Results {
            format: FORMAT,
            verdict: String::new(),
            valid: Valid::True,
            interrupted,
            ops: self.counts,
            pace: None,
            faults: injected_faults(&self.outline.nemesis),
            checkers: self.verdicts,
            linearizability,
            linearizability_counts: counts,
            error,
            unread: Vec::new(),
        };
        let valid = results
            .in_verdict()
            .iter()
            .fold(Valid::True, |valid, checker| valid.merge(checker.valid()));
        // A run that failed part way has a history that says less than the run meant to.
        results.valid = if results.error.is_some() {
            valid.merge(Valid::Unknown)
        } else {
            valid
        };
        results.verdict = summary::verdict(&results);
        results
    }
}

/// The model to check a history with, and whether its verdict counts: the one asked for,
/// which does; otherwise the one the operations call for (see the module's documentation).
fn model_for(
    outline: &Outline,
    lin: &LinearizabilityCheck,
) -> Option<(&'static linearizability::RegisteredModel, bool)> {
    if let Some(model) = lin.model {
        return Some((model, true));
    }
    if outline.has("acquire") {
        Some((find_model("owner-mutex")?, false))
    } else if outline.has("write") || outline.has("cas") {
        Some((find_model("cas-register")?, true))
    } else {
        None
    }
}

/// The most client ops the owner-mutex search beside lock safety takes on by itself: it counts
/// in no verdict, and on a long history it would cost more than every other check together.
/// `--model owner-mutex` runs it on any length.
const BESIDE_MOST_OPS: usize = 100_000;

/// The linearizability search with `model`, unless it would only be shown beside the verdict
/// (`counts` false) and the history is longer than [`BESIDE_MOST_OPS`].
fn search(
    ops: &[Op],
    outline: &Outline,
    model: &'static linearizability::RegisteredModel,
    counts: bool,
    limits: Limits,
) -> Result<Linearizability, linearizability::CheckError> {
    if !counts && outline.client_ops > BESIDE_MOST_OPS {
        return Ok(search_skipped(model, outline.client_ops));
    }
    linearizability::check(ops, model, limits)
}

/// The search beside the verdict, left out of a history of `client_ops`, and why.
fn search_skipped(model: &linearizability::RegisteredModel, client_ops: usize) -> Linearizability {
    not_searched(
        model,
        format!(
            "not searched: {client_ops} client ops, more than the {BESIDE_MOST_OPS} it takes \
             on beside the verdict; --model {} runs it",
            model.name
        ),
    )
}

/// A linearizability result that searched nothing, and says why.
fn not_searched(model: &linearizability::RegisteredModel, cause: String) -> Linearizability {
    Linearizability {
        valid: Valid::Unknown,
        model: model.name.to_string(),
        keys: 0,
        keys_checked: 0,
        ops_checked: 0,
        ops_ignored: 0,
        ignored_fs: Vec::new(),
        states_explored: 0,
        peak_cache_bytes: 0,
        cause: Some(cause),
        failures: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use splitbrain_checker::{OpType, Process};

    fn op(process: u64, kind: OpType, f: &str) -> Op {
        Op::new(Process::Client(process), kind, f)
    }

    #[test]
    fn registers_count_in_the_verdict_and_locks_do_not() {
        let check = |ops: &[Op]| {
            check_ops(
                ops,
                false,
                None,
                RunFacts::default(),
                &LinearizabilityCheck::default(),
            )
        };
        let stale_read = vec![
            op(0, OpType::Invoke, "write").value(1).key("r"),
            op(0, OpType::Ok, "write").value(1).key("r"),
            op(1, OpType::Invoke, "read").key("r"),
            op(1, OpType::Ok, "read").value(2).key("r"),
        ];
        let results = check(&stale_read);
        assert_eq!(
            results.linearizability.as_ref().unwrap().model,
            "cas-register"
        );
        assert_eq!(results.valid, Valid::False);

        // A lease that ran out: B takes the lock A never released. Not a mutex, and not a
        // violation of the lease either (A never held past its validity).
        let expired = vec![
            op(0, OpType::Invoke, "acquire").key("lock"),
            op(0, OpType::Ok, "acquire").key("lock"),
            op(1, OpType::Invoke, "acquire").key("lock"),
            op(1, OpType::Ok, "acquire").key("lock"),
        ];
        let results = check(&expired);
        let mutex = results.linearizability.as_ref().unwrap();
        assert_eq!(mutex.model, "owner-mutex");
        assert_eq!(mutex.valid, Valid::False);
        assert!(!results.linearizability_counts);
    }

    #[test]
    fn the_mutex_search_beside_the_verdict_skips_long_histories_unless_asked_for() {
        // One process acquiring and releasing, over and over: a mutex history with no doubt.
        let cycles = BESIDE_MOST_OPS / 4 + 1;
        let ops: Vec<Op> = (0..cycles as u64)
            .flat_map(|i| {
                let at = |kind, f, n: u64| op(0, kind, f).key("lock").at(4 * i + n, 4 * i + n);
                [
                    at(OpType::Invoke, "acquire", 0),
                    at(OpType::Ok, "acquire", 1),
                    at(OpType::Invoke, "release", 2),
                    at(OpType::Ok, "release", 3),
                ]
            })
            .collect();
        let linearizable = |ops: &[Op], lin: &LinearizabilityCheck| {
            let results = check_ops(ops, false, None, RunFacts::default(), lin);
            (
                results.linearizability.unwrap(),
                results.linearizability_counts,
            )
        };
        let (beside, counts) = linearizable(&ops, &LinearizabilityCheck::default());
        assert!(!counts);
        assert_eq!(beside.valid, Valid::Unknown);
        assert!(
            beside.cause.as_deref().unwrap().starts_with("not searched"),
            "{beside:?}"
        );
        let asked = LinearizabilityCheck {
            model: find_model("owner-mutex"),
            ..LinearizabilityCheck::default()
        };
        let (searched, counts) = linearizable(&ops, &asked);
        assert!(counts);
        assert_eq!(searched.valid, Valid::True, "{searched:?}");
    }

    #[test]
    fn the_verdict_line_says_what_each_checker_found() {
        let check = |ops: &[Op], error: Option<&str>| {
            check_ops(
                ops,
                false,
                error.map(str::to_string),
                RunFacts::default(),
                &LinearizabilityCheck::default(),
            )
        };
        let acquire = |p, kind, ms: u64| {
            let mut op = op(p, kind, "acquire").key("lock");
            op.ttl_ms = Some(10_000);
            op.at(0, ms * 1_000_000)
        };
        // B is granted while A's lease still runs.
        let double = vec![
            acquire(0, OpType::Invoke, 0),
            acquire(0, OpType::Ok, 1),
            acquire(1, OpType::Invoke, 2),
            acquire(1, OpType::Ok, 3),
        ];
        assert_eq!(check(&double, None).verdict, "INVALID: 1 double grant");

        let alone = &double[..2];
        assert_eq!(
            check(alone, None).verdict,
            "valid: no two processes held a lock at once (no faults were injected)"
        );
        let master = Op::new(Process::NEMESIS, OpType::Info, "master").nodes(vec!["n1".into()]);
        let watched = [vec![master.at(0, 0)], alone.to_vec()].concat();
        assert_eq!(
            check(&watched, None).verdict,
            "valid: no two processes held a lock at once (no faults were injected)",
            "a master that never changed demoted nobody"
        );
        assert_eq!(
            check(alone, Some("the client crashed")).verdict,
            "unknown: the run did not finish",
            "an error leaves the verdict unknown, with no checker to blame"
        );
        let refused = vec![acquire(0, OpType::Invoke, 0), acquire(0, OpType::Fail, 1)];
        assert!(
            check(&refused, None)
                .verdict
                .starts_with("unknown: no acquire succeeded"),
            "the stats checker gives the reason first"
        );
    }

    #[test]
    fn what_is_written_reads_back_the_same_and_a_newer_section_is_kept() {
        let history = [
            op(0, OpType::Invoke, "acquire").key("l"),
            op(0, OpType::Ok, "acquire").key("l"),
        ];
        let results = check_ops(
            &history,
            false,
            None,
            Default::default(),
            &Default::default(),
        );
        let written = serde_json::to_value(&results).unwrap();
        let mut newer = written.clone();
        newer["a-newer-checker"] = serde_json::json!({"valid": true});
        let read = Results::read(newer);
        assert_eq!(read.format, FORMAT);
        assert_eq!(serde_json::to_value(&read).unwrap(), written);
        assert_eq!(
            read.unread,
            [(
                "a-newer-checker".to_string(),
                serde_json::json!({"valid": true})
            )]
        );
    }
}
