//! The run folder, `results/<test>/<YYYYMMDDTHHMMSS>/`, and its one reader and writer:
//! `test.json` (what was run), `history.jsonl` (every operation), `results.json` (the verdict
//! and each checker's section), `nodes/<node>/*.log`, `splitbrain.log`, plus `latest` links.
//!
//! Every command that reads a run (check, report, index, replay, shrink, matrix, scenario)
//! goes through [`RunDir`]; no other file knows the folder's file names.

mod results;
mod test;

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use splitbrain_checker::{read_history, Op, Valid};

use crate::error::HarnessError;
use crate::spec::TestSpec;

pub use results::{injected_faults, OpCounts, Results};
pub use test::{StoredTest, TestRecord, Versions};

/// The layout of `test.json` and `results.json` this splitbrain writes, in each as `format`.
/// Files before it was numbered read as 0 and have the same layout; a reader given a higher
/// one reads what it knows and keeps the rest as JSON.
pub const FORMAT: u32 = 1;

const TEST: &str = "test.json";
const HISTORY: &str = "history.jsonl";
const RESULTS: &str = "results.json";
const LOG: &str = "splitbrain.log";

/// One run's folder.
pub struct RunDir {
    pub path: PathBuf,
}

/// What a run recorded of how it ended, beside its verdict.
#[derive(Debug, Default, PartialEq, Deserialize)]
pub struct Outcome {
    /// It was stopped early (Ctrl-C).
    #[serde(default)]
    pub interrupted: bool,
    /// It failed part way, with this error.
    #[serde(default)]
    pub error: Option<String>,
}

impl RunDir {
    /// The run folder at `path`, as it is: nothing is read or made.
    pub fn at(path: &Path) -> RunDir {
        RunDir {
            path: path.to_path_buf(),
        }
    }

    /// The folder a history file lies in, whose `test.json` and `results.json` go with it.
    pub fn beside(history: &Path) -> RunDir {
        RunDir::at(history.parent().unwrap_or(Path::new(".")))
    }

    /// Makes a fresh folder named after the start time (with a suffix if two runs of the same
    /// test start in the same second).
    pub fn create(
        root: &Path,
        test: &str,
        started: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<RunDir> {
        let parent = root.join(test);
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("creating the results folder {}", parent.display()))?;
        let stamp = started.format("%Y%m%dT%H%M%S").to_string();
        for attempt in 0..100 {
            let name = if attempt == 0 {
                stamp.clone()
            } else {
                format!("{stamp}-{attempt}")
            };
            let path = parent.join(name);
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(RunDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
        anyhow::bail!(
            "too many runs of {test} in one second under {}",
            parent.display()
        )
    }

    /// Whether the folder holds a run: its `test.json`, and its `history.jsonl` or, for a run
    /// that failed before any client started, its `results.json`.
    pub fn is_run(&self) -> bool {
        self.path.join(TEST).is_file()
            && (self.history().is_file() || self.results_path().is_file())
    }

    pub fn history(&self) -> PathBuf {
        self.path.join(HISTORY)
    }

    pub fn results_path(&self) -> PathBuf {
        self.path.join(RESULTS)
    }

    pub fn nodes(&self) -> PathBuf {
        self.path.join("nodes")
    }

    pub fn log(&self) -> PathBuf {
        self.path.join(LOG)
    }

    pub fn write_test(&self, record: &TestRecord) -> anyhow::Result<()> {
        self.write_json(TEST, record)
    }

    pub fn write_results(&self, results: &Results) -> anyhow::Result<()> {
        self.write_json(RESULTS, results)
    }

    fn write_json(&self, file: &str, value: &impl Serialize) -> anyhow::Result<()> {
        let path = self.path.join(file);
        let text = serde_json::to_string_pretty(value).context("serialising results")?;
        std::fs::write(&path, text + "\n").with_context(|| format!("writing {}", path.display()))
    }

    /// Writes `results.json` as `text`, unless it says that already: truncating a file makes
    /// ext4 flush it to disk (auto_da_alloc), which costs more than the whole check of a small
    /// history, so a check again that finds what the last one did leaves the file alone.
    pub fn rewrite_results(&self, text: &str) -> std::io::Result<()> {
        let path = self.results_path();
        if std::fs::read(&path).is_ok_and(|old| old == text.as_bytes()) {
            return Ok(());
        }
        std::fs::write(&path, text)
    }

    /// `test.json` as JSON; one that does not parse is bad input.
    pub fn test_json(&self) -> Result<Value, HarnessError> {
        read_json(&self.path.join(TEST))
    }

    /// What a report shows of `test.json`, as far as it reads.
    pub fn stored_test(&self) -> StoredTest {
        self.test_json()
            .map(|json| StoredTest::from_json(&json))
            .unwrap_or_default()
    }

    /// The spec `test.json` records, exactly: what replay and shrink run again.
    pub fn spec(&self) -> Result<TestSpec, HarnessError> {
        let path = self.path.join(TEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            HarnessError::BadInput(format!(
                "{} is not a run folder ({}: {e}); give a folder under results/",
                self.path.display(),
                path.display()
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| {
            HarnessError::BadInput(format!(
                "{}: {e}; it was written by another splitbrain version, or edited",
                path.display()
            ))
        })
    }

    /// `results.json` as JSON; one that does not parse is bad input.
    pub fn results_json(&self) -> Result<Value, HarnessError> {
        read_json(&self.results_path())
    }

    /// `results.json` with each section read into its checker's type, where there is one.
    pub fn results(&self) -> Option<Results> {
        self.results_json().ok().map(Results::read)
    }

    /// The verdict `results.json` records.
    pub fn valid(&self) -> Option<Valid> {
        self.results().map(|results| results.valid)
    }

    /// How the run ended, from `results.json`: only its two fields are read, the rest of the
    /// file is skipped, not built into values (a check of a small history reads it).
    pub fn outcome(&self) -> Outcome {
        std::fs::read_to_string(self.results_path())
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// The operations of `history.jsonl`; a missing or unreadable one is bad input.
    pub fn ops(&self) -> Result<Vec<Op>, HarnessError> {
        let history = self.history();
        let file = std::fs::File::open(&history).map_err(|e| {
            HarnessError::BadInput(format!("cannot read {}: {e}", history.display()))
        })?;
        read_history(std::io::BufReader::new(file))
            .map(|history| history.ops)
            .map_err(|e| {
                HarnessError::BadInput(format!(
                    "{} is not a JSON-lines history: {e}",
                    history.display()
                ))
            })
    }

    /// The operations of `history.jsonl`, none where the run made none (it failed before any
    /// client started).
    pub fn ops_if_any(&self) -> Result<Vec<Op>, HarnessError> {
        if self.history().exists() {
            self.ops()
        } else {
            Ok(Vec::new())
        }
    }

    /// The files worth linking to, relative to the folder: the run's own files that exist,
    /// then `nodes/<node>/<file>` in name order.
    pub fn files(&self) -> Vec<String> {
        let dir = &self.path;
        let mut files: Vec<String> = [TEST, HISTORY, RESULTS, LOG]
            .iter()
            .filter(|name| dir.join(name).is_file())
            .map(|name| name.to_string())
            .collect();
        for node in sorted_entries(&self.nodes()) {
            for file in sorted_entries(&node) {
                if file.is_file() {
                    if let Ok(relative) = file.strip_prefix(dir) {
                        files.push(relative.to_string_lossy().into_owned());
                    }
                }
            }
        }
        files
    }

    /// Points `results/<test>/latest` and `results/latest` at this run.
    pub fn link_latest(&self, root: &Path) -> anyhow::Result<()> {
        let run = self.path.file_name().context("run folder has no name")?;
        let test_dir = self.path.parent().context("run folder has no parent")?;
        let test = test_dir.file_name().context("test folder has no name")?;
        replace_symlink(Path::new(run), &test_dir.join("latest"))?;
        replace_symlink(&Path::new(test).join(run), &root.join("latest"))
    }
}

/// Reads a JSON file; one that does not parse is bad input.
fn read_json(path: &Path) -> Result<Value, HarnessError> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| HarnessError::BadInput(format!("{} is not valid JSON: {e}", path.display())))
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|read| read.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.sort();
    entries
}

fn replace_symlink(target: &Path, link: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link)
        .with_context(|| format!("linking {} to {}", link.display(), target.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn how_a_run_ended_is_read_from_its_results_json() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::at(dir.path());
        assert_eq!(run.outcome(), Outcome::default());
        std::fs::write(
            run.results_path(),
            r#"{"valid":"unknown","interrupted":true,"error":"the engine went away"}"#,
        )
        .unwrap();
        assert_eq!(
            run.outcome(),
            Outcome {
                interrupted: true,
                error: Some("the engine went away".into())
            }
        );
        assert_eq!(run.valid(), Some(Valid::Unknown));
    }

    #[test]
    fn a_folder_is_a_run_with_its_test_and_a_history_or_results() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::at(dir.path());
        assert!(!run.is_run());
        std::fs::write(dir.path().join(TEST), "{}").unwrap();
        assert!(!run.is_run(), "a test.json alone is no run");
        std::fs::write(run.results_path(), "{}").unwrap();
        assert!(run.is_run());
        assert_eq!(run.files(), [TEST, RESULTS]);
    }
}
