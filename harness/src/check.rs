//! `splitbrain check`: the checkers again, on a stored history.

use std::path::Path;

use splitbrain_checker::HistoryError;

use crate::error::{Exit, HarnessError};
use crate::run::check_history;
use crate::summary;

/// Checks `path` (a history.jsonl, or a run folder holding one) and prints the summary.
pub fn check(path: &Path) -> Result<Exit, HarnessError> {
    let history = if path.is_dir() {
        path.join("history.jsonl")
    } else {
        path.to_path_buf()
    };
    if !history.is_file() {
        return Err(HarnessError::BadInput(format!(
            "{}: no such history file; give a history.jsonl or a run folder under results/",
            history.display()
        )));
    }
    let results = check_history(&history, false, None).map_err(|e| match e {
        HarnessError::Crash(e) => match e.downcast_ref::<HistoryError>() {
            Some(parse @ HistoryError::Parse { .. }) => HarnessError::BadInput(format!(
                "{} is not a JSON-lines history: {parse}",
                history.display()
            )),
            _ => HarnessError::Crash(e),
        },
        other => other,
    })?;
    print!(
        "{}",
        summary::render(&format!("check {}", history.display()), &results)
    );
    Ok(Exit::Verdict(results.valid))
}
