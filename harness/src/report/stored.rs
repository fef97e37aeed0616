//! A stored run folder read back for its report: `test.json`, `history.jsonl`,
//! `results.json` and the files beside them.
//!
//! Everything is read leniently. A report is most wanted for the odd run (an older format, a
//! run killed before its results), so a field it does not find is left out, a checker section
//! it cannot read is shown as the JSON it is, and a missing `results.json` is made again by the
//! checkers.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;
use splitbrain_checker::Op;

use crate::error::HarnessError;
use crate::store::{Results, RunDir, StoredTest};

/// One run folder, read.
pub struct StoredRun {
    pub dir: PathBuf,
    pub test: StoredTest,
    pub history: Vec<Op>,
    pub results: Results,
    /// Whether `results.json` was missing and the checkers ran again for this report.
    pub results_rechecked: bool,
    /// The files worth linking to, relative to the run folder: the run's own files, then each
    /// node's logs.
    pub files: Vec<String>,
}

impl StoredRun {
    /// Reads the run in `dir`; a folder that is not a run is bad input.
    pub fn read(dir: &Path) -> Result<StoredRun, HarnessError> {
        let run = RunDir::at(dir);
        if !run.is_run() {
            return Err(HarnessError::BadInput(format!(
                "{} is not a run folder (it has no test.json and history.jsonl); give one \
                 like results/<test>/<time>",
                dir.display()
            )));
        }
        let test = run.test_json()?;
        let history = run.ops_if_any()?;
        let (results, results_rechecked) = if run.results_path().is_file() {
            (run.results_json()?, false)
        } else {
            let facts = run.spec().map(|spec| spec.run_facts()).unwrap_or_default();
            let results = crate::check::history::check_history(&run.history(), false, None, facts)?;
            let json = serde_json::to_value(&results).context("serialising results")?;
            (json, true)
        };
        Ok(StoredRun::of(
            dir,
            &test,
            history,
            results,
            results_rechecked,
        ))
    }

    /// A run from what was read or checked already; `dir` is where the report goes, and its
    /// files are the ones linked.
    pub fn of(
        dir: &Path,
        test: &Value,
        history: Vec<Op>,
        results: Value,
        results_rechecked: bool,
    ) -> StoredRun {
        StoredRun {
            dir: dir.to_path_buf(),
            test: StoredTest::from_json(test),
            history,
            results: Results::read(results),
            results_rechecked,
            files: RunDir::at(dir).files(),
        }
    }
}
