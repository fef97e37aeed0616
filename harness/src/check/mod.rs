//! `splitbrain check`: every checker on a stored history (a run folder, a `history.jsonl`),
//! or the linearizability checker alone on a Jepsen or knossos EDN history; the summary, the
//! results and, with `--report`, the report.

pub(crate) mod history;

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use serde::Serialize;
use splitbrain_checker::linearizability::{self, find_model, Limits, Linearizability, MODELS};
use splitbrain_checker::{read_edn_history, read_history, stats, EdnOptions, HistoryError, Valid};

use crate::cli::CheckArgs;
use crate::error::{Exit, HarnessError};
use crate::report::stored::StoredRun;
use crate::spec::TestSpec;
use crate::store::RunDir;
use crate::summary;

use history::{check_file, LinearizabilityCheck};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edn_is_told_apart_from_json_lines() {
        let jsonl = Path::new("history.jsonl");
        assert!(is_edn(jsonl, "[{:type :invoke}]"));
        assert!(is_edn(jsonl, "  {:process 0, :type :invoke}"));
        assert!(is_edn(Path::new("h.edn"), r#"{"index":0}"#));
        assert!(!is_edn(jsonl, r#"{"index":0,"type":"invoke"}"#));
    }
}
