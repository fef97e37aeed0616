//! Checking a history: every checker on a run's `history.jsonl` (at the end of a run, and
//! again by `splitbrain check`), and the linearizability checker alone on a Jepsen or knossos
//! EDN history.
//!
//! The linearizability model follows from the operations unless one is asked for: a register
//! history (`write`, `cas`) is checked as a `cas-register`, key by key, and counts in the
//! verdict; a lock history (`acquire`) is checked as an `owner-mutex` and is shown beside lock
//! safety without counting, because a mutex has no leases: a lease that ran out and was taken
//! by another client is not linearizable as a mutex, yet is exactly what a lease lock
//! promises, and lock safety judges leases.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use splitbrain_checker::every::{EveryChecker, Sections};
use splitbrain_checker::linearizability::{self, find_model, Limits, Linearizability, MODELS};
use splitbrain_checker::stream::{self, Checker, Outline, Pairing, RunFacts};
use splitbrain_checker::{
    read_edn_history, read_history, stats, EdnOptions, HistoryError, HistoryReader, Op, OpType,
    Process, Valid,
};

use crate::cli::CheckArgs;
use crate::error::{Exit, HarnessError};
use crate::report::stored::StoredRun;
use crate::spec::TestSpec;
use crate::store::{injected_faults, OpCounts, Results, RunDir, FORMAT};
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

/// `splitbrain check`: checks `args.history` (a history.jsonl, a run folder holding one, or
/// an EDN history), writes `results.json` (and with `--report`, `report.html`) beside it or in
/// `--out`, and prints the summary with every finding, or with `--json` the results.
pub fn check(args: &CheckArgs) -> Result<Exit, HarnessError> {
    let path = if args.history.is_dir() {
        RunDir::at(&args.history).history()
    } else {
        args.history.clone()
    };
    if !path.is_file() {
        return Err(HarnessError::BadInput(format!(
            "{}: no such history file; give a history.jsonl, a run folder under results/, or \
             a Jepsen EDN history",
            path.display()
        )));
    }
    let model = match &args.model {
        Some(name) => Some(find_model(name).ok_or_else(|| {
            HarnessError::BadInput(format!(
                "unknown model `{name}` in --model; choose one of: {}",
                MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
            ))
        })?),
        None => None,
    };
    let lin = LinearizabilityCheck {
        model,
        limits: Limits {
            time: args.time_limit,
            memory_bytes: args.memory_limit_mib << 20,
        },
    };
    let beside = path.parent().unwrap_or(Path::new("."));
    let out = Output {
        dir: args.out.as_deref().unwrap_or(beside),
        asked_for: args.out.is_some(),
        json: args.json,
        shown: args.limit.unwrap_or(usize::MAX),
    };
    if out.asked_for {
        std::fs::create_dir_all(out.dir).map_err(|e| {
            HarnessError::BadInput(format!(
                "--out {}: cannot be created: {e}; give a folder this user can write",
                out.dir.display()
            ))
        })?;
    }
    let unreadable = |e: std::io::Error| {
        HarnessError::BadInput(format!("{}: cannot be read: {e}", path.display()))
    };
    // JSON lines are read as a stream, never whole; the first few KiB tell EDN from them.
    let mut file = std::fs::File::open(&path).map_err(unreadable)?;
    let mut head = Vec::new();
    (&file)
        .take(4096)
        .read_to_end(&mut head)
        .map_err(unreadable)?;
    if is_edn(&path, &String::from_utf8_lossy(&head)) {
        let mut bytes = head;
        file.read_to_end(&mut bytes).map_err(unreadable)?;
        let text = String::from_utf8(bytes).map_err(|_| {
            HarnessError::BadInput(format!(
                "{} is not a history splitbrain reads: it is not UTF-8 text",
                path.display()
            ))
        })?;
        return check_edn(&path, &text, args, lin, &out);
    }
    drop(file);
    let run = RunDir::beside(&path);
    let recorded = run.outcome();
    let spec = run.spec().ok();
    let facts = spec.as_ref().map(TestSpec::run_facts).unwrap_or_default();
    let checked = check_file(&path, &lin, facts).map_err(|e| not_a_history(&path, e))?;
    if let Some(e) = &checked.search_error {
        return Err(HarnessError::BadInput(format!("{}: {e}", path.display())));
    }
    if checked.truncated_tail {
        stderrln!(
            "warning: {}: the last line was cut short (a run killed while writing?); checked \
             the history up to the last complete line",
            path.display()
        );
    }
    let title = format!("check {}", path.display());
    // What the run recorded beside its history and the history cannot say: that it was
    // interrupted, or failed part way (which leaves its verdict unknown).
    let mut results = checked.results(recorded.interrupted, recorded.error);
    results.pace = spec.and_then(|spec| spec.pace).map(|pace| pace.line());
    out.write_results(&results)?;
    if args.report {
        let test = run.test_json().unwrap_or_default();
        let results = serde_json::to_value(&results).context("serialising results")?;
        // The report draws every op: it reads the history whole.
        let ops = std::fs::File::open(&path)
            .map_err(HistoryError::Io)
            .and_then(|file| read_history(std::io::BufReader::new(file)))
            .map_err(|e| not_a_history(&path, e))?
            .ops;
        let run = StoredRun::of(out.dir, &test, ops, results, false);
        let report = crate::report::write_stored(&run)?;
        if !out.json {
            stderrln!("wrote {}", report.display());
        }
    }
    if !out.json {
        stdout!("{}", summary::render(&title, &results, out.shown));
    }
    Ok(Exit::Verdict(results.valid))
}

/// Checks an EDN history with the linearizability model asked for: the only checker that
/// reads one.
fn check_edn(
    path: &Path,
    text: &str,
    args: &CheckArgs,
    lin: LinearizabilityCheck,
    out: &Output,
) -> Result<Exit, HarnessError> {
    let title = format!("check {}", path.display());
    let Some(model) = lin.model else {
        return Err(HarnessError::BadInput(format!(
            "{} is an EDN history, which only the linearizability checker reads: add \
             --model (one of: {})",
            path.display(),
            MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
        )));
    };
    if args.report {
        return Err(HarnessError::BadInput(format!(
            "{} is an EDN history; report.html is drawn for splitbrain's own histories \
             (JSON lines): leave out --report",
            path.display()
        )));
    }
    let options = EdnOptions {
        independent: args.independent,
    };
    let ops = read_edn_history(text, options).map_err(|e| not_a_history(path, e))?;
    let result = linearizability::check(&ops, model, lin.limits)
        .map_err(|e| HarnessError::BadInput(format!("{}: {e}", path.display())))?;
    let evidence = stats::check(&ops, &stats::needed_for(&ops));
    let results = EdnResults {
        valid: result.valid.merge(evidence.valid),
        verdict: summary::linearizability_verdict(&result, &evidence),
        stats: evidence,
        linearizability: result,
    };
    out.write_results(&results)?;
    if !out.json {
        stdout!(
            "{}",
            summary::render_linearizability(
                &title,
                &results.linearizability,
                &results.stats,
                out.shown
            )
        );
    }
    Ok(Exit::Verdict(results.valid))
}

/// Where and how `check` says what it found.
struct Output<'a> {
    dir: &'a Path,
    /// `dir` was given with `--out`, rather than being the history's own folder.
    asked_for: bool,
    json: bool,
    /// Findings of each kind spelled out in the summary.
    shown: usize,
}

impl Output<'_> {
    /// Writes `results.json`, and with `--json` prints it too. A history in a folder this
    /// user cannot write is still checked, with a warning; a folder given with `--out` must
    /// take the file.
    fn write_results(&self, results: &impl Serialize) -> Result<(), HarnessError> {
        let text = serde_json::to_string_pretty(results).context("serialising results")? + "\n";
        let folder = RunDir::at(self.dir);
        let path = folder.results_path();
        let written = folder.rewrite_results(&text);
        if let Err(e) = written {
            if self.asked_for {
                return Err(HarnessError::BadInput(format!(
                    "--out {}: cannot be written: {e}; give a folder this user can write",
                    path.display()
                )));
            }
            stderrln!(
                "warning: {}: cannot be written ({e}); give a folder this user can write with \
                 --out",
                path.display()
            );
        }
        if self.json {
            stdout!("{text}");
        }
        Ok(())
    }
}

/// `results.json` of an EDN history: the linearizability checker's result, and whether the
/// history showed anything for it to check.
#[derive(Serialize)]
struct EdnResults {
    valid: Valid,
    verdict: String,
    stats: stats::Stats,
    linearizability: Linearizability,
}

fn not_a_history(path: &Path, e: HistoryError) -> HarnessError {
    match e {
        HistoryError::Parse { .. } | HistoryError::NotUtf8 { .. } => HarnessError::BadInput(
            format!("{} is not a history splitbrain reads: {e}", path.display()),
        ),
        HistoryError::Io(e) => HarnessError::Crash(anyhow::Error::from(e)),
    }
}

/// Whether a history file is EDN rather than JSON lines: by its name, or by its first
/// character being `[` or a map opening with a keyword.
fn is_edn(path: &Path, text: &str) -> bool {
    if path.extension().is_some_and(|e| e == "edn") {
        return true;
    }
    let start = text.trim_start();
    start.starts_with('[') || start.starts_with('#') || start.starts_with(";") || {
        start.starts_with('{') && start[1..].trim_start().starts_with(':')
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
fn check_file(
    path: &Path,
    lin: &LinearizabilityCheck,
    facts: RunFacts,
) -> Result<Checked, HistoryError> {
    let read = || -> Result<_, HistoryError> {
        let file = std::fs::File::open(path)?;
        Ok(std::io::BufReader::with_capacity(1 << 16, file))
    };
    let mut outline = Outline::new();
    let mut ops = HistoryReader::for_outline(read()?);
    let mut op = Op::new(Process::Client(0), OpType::Invoke, "");
    while ops.next_into(&mut op)? {
        outline.observe(&op);
    }
    let truncated_tail = ops.truncated_tail();
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
        let mut checkers = EveryChecker::new(&outline, facts);
        let mut pairing = Pairing::default();
        let mut ops = HistoryReader::new(read()?);
        for _ in 0..outlined {
            if !ops.next_into(&mut op)? {
                break;
            }
            counts.add(&op);
            pairing.feed_read(&mut op, &mut checkers);
        }
        pairing.finish(&mut checkers);
        let skipped = model
            .map(|(model, in_verdict)| (search_skipped(model, outline.client_ops), in_verdict));
        (checkers.finish(), (skipped, None))
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
struct Checked {
    outline: Outline,
    counts: OpCounts,
    verdicts: Sections,
    linearizability: Option<(Linearizability, bool)>,
    /// Why the linearizability search could not take the history, where it could not.
    search_error: Option<linearizability::CheckError>,
    truncated_tail: bool,
}

impl Checked {
    /// The results, and the verdict they make. A history that shows none of the successful
    /// operations its workload needs (Jepsen's stats checker) is at best `unknown`: nothing
    /// was tested.
    fn results(self, interrupted: bool, error: Option<String>) -> Results {
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
    fn edn_is_told_apart_from_json_lines() {
        let jsonl = Path::new("history.jsonl");
        assert!(is_edn(jsonl, "[{:type :invoke}]"));
        assert!(is_edn(jsonl, "  {:process 0, :type :invoke}"));
        assert!(is_edn(Path::new("h.edn"), r#"{"index":0}"#));
        assert!(!is_edn(jsonl, r#"{"index":0,"type":"invoke"}"#));
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
}
