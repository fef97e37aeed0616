//! A stored run folder read back for its report: `test.json`, `history.jsonl`,
//! `results.json` and the files beside them.
//!
//! Everything is read leniently. A report is most wanted for the odd run (an older format, a
//! run killed before its results), so a field it does not find is left out, a checker section
//! it cannot read is shown as the JSON it is, and a missing `results.json` is made again by the
//! checkers.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::de::DeserializeOwned;
use serde_json::Value;
use splitbrain_checker::acquisition_stats::AcquisitionStats;
use splitbrain_checker::coverage::Coverage;
use splitbrain_checker::fencing::Fencing;
use splitbrain_checker::linearizability::Linearizability;
use splitbrain_checker::lock_safety::LockSafety;
use splitbrain_checker::lost_writes::LostWrites;
use splitbrain_checker::stats::Stats;
use splitbrain_checker::stuck_lock::StuckLock;
use splitbrain_checker::{read_history, Op, Valid};

use crate::error::HarnessError;
use crate::spec::TestSpec;

/// One run folder, read.
pub struct StoredRun {
    pub dir: PathBuf,
    pub test: StoredTest,
    pub history: Vec<Op>,
    pub results: RecordedResults,
    /// Whether `results.json` was missing and the checkers ran again for this report.
    pub results_rechecked: bool,
    /// The files worth linking to, relative to the run folder: the run's own files, then each
    /// node's logs.
    pub files: Vec<String>,
}

/// What a report shows of `test.json`.
#[derive(Debug, Default)]
pub struct StoredTest {
    pub name: String,
    pub deployment: String,
    /// The server program and version the nodes reported (`redis 7.0.15`, `etcd 3.4.23`).
    pub server: Option<String>,
    pub client: String,
    pub workload: String,
    pub nemesis: Vec<String>,
    pub seed: Option<u64>,
    pub time_limit_ms: Option<u64>,
    pub concurrency: Option<usize>,
    pub started: Option<String>,
    /// The command line that runs the test again.
    pub command: Option<String>,
}

impl StoredTest {
    /// Reads the fields a report needs from `test.json`'s JSON.
    pub fn from_json(json: &Value) -> StoredTest {
        let text = |field: &str| json[field].as_str().unwrap_or_default().to_string();
        // Runs record their command line; for one that did not, the spec makes it again.
        let command = json["command"].as_str().map(str::to_string).or_else(|| {
            serde_json::from_value::<TestSpec>(json.clone())
                .ok()
                .map(|spec| spec.command_line())
        });
        StoredTest {
            name: text("name"),
            deployment: text("deployment"),
            // Runs before etcd named it `redis` and recorded only the version.
            server: json["versions"]["server"]
                .as_str()
                .map(str::to_string)
                .or_else(|| Some(format!("redis {}", json["versions"]["redis"].as_str()?))),
            client: text("client"),
            workload: text("workload"),
            nemesis: json["nemesis"]
                .as_array()
                .map(|names| {
                    names
                        .iter()
                        .filter_map(|n| n.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            seed: json["seed"].as_u64(),
            time_limit_ms: json["time_limit"].as_u64(),
            concurrency: json["concurrency"].as_u64().map(|c| c as usize),
            started: json["started"].as_str().map(str::to_string),
            command,
        }
    }

    pub fn faults_label(&self) -> String {
        if self.nemesis.is_empty() {
            "none".into()
        } else {
            self.nemesis.join(", ")
        }
    }
}

/// `results.json`, with each checker the report knows read into its type.
#[derive(Debug, Default)]
pub struct RecordedResults {
    pub valid: Option<Valid>,
    pub interrupted: bool,
    pub error: Option<String>,
    pub lock_safety: Option<LockSafety>,
    pub lost_writes: Option<LostWrites>,
    pub fencing: Option<Fencing>,
    pub stuck_lock: Option<StuckLock>,
    pub acquisition: Option<AcquisitionStats>,
    pub stats: Option<Stats>,
    pub coverage: Option<Coverage>,
    pub linearizability: Option<Linearizability>,
    /// Whether the linearizability result is part of the verdict.
    pub linearizability_counts: bool,
    /// Sections the report has no view of (a newer checker's) or could not
    /// read, shown as they are.
    pub other: Vec<(String, Value)>,
}

impl RecordedResults {
    pub fn from_json(json: Value) -> RecordedResults {
        let Value::Object(sections) = json else {
            return RecordedResults::default();
        };
        let mut results = RecordedResults::default();
        for (name, section) in sections {
            match name.as_str() {
                "valid" => results.valid = serde_json::from_value(section).ok(),
                "interrupted" => results.interrupted = section.as_bool().unwrap_or(false),
                "error" => results.error = section.as_str().map(str::to_string),
                // The history shows these better.
                "ops" | "faults" => {}
                "lock-safety" => typed(&mut results.lock_safety, name, section, &mut results.other),
                "lost-writes" => typed(&mut results.lost_writes, name, section, &mut results.other),
                "fencing" => typed(&mut results.fencing, name, section, &mut results.other),
                "stuck-lock" => typed(&mut results.stuck_lock, name, section, &mut results.other),
                "acquisition" => typed(&mut results.acquisition, name, section, &mut results.other),
                "stats" => typed(&mut results.stats, name, section, &mut results.other),
                "coverage" => typed(&mut results.coverage, name, section, &mut results.other),
                "linearizability" => typed(
                    &mut results.linearizability,
                    name,
                    section,
                    &mut results.other,
                ),
                "linearizability-in-verdict" => {
                    results.linearizability_counts = section.as_bool().unwrap_or(false)
                }
                _ => results.other.push((name, section)),
            }
        }
        results
    }
}

/// Reads `section` into `slot`, or keeps it in `other` if it does not fit the type.
fn typed<T: DeserializeOwned>(
    slot: &mut Option<T>,
    name: String,
    section: Value,
    other: &mut Vec<(String, Value)>,
) {
    match serde_json::from_value(section.clone()) {
        Ok(value) => *slot = Some(value),
        Err(_) => other.push((name, section)),
    }
}

/// Whether `dir` holds a run: its `test.json`, and its `history.jsonl` or, for a run that
/// failed before any client started, its `results.json`.
pub fn is_run(dir: &Path) -> bool {
    dir.join("test.json").is_file()
        && (dir.join("history.jsonl").is_file() || dir.join("results.json").is_file())
}

impl StoredRun {
    /// Reads the run in `dir`; a folder that is not a run is bad input.
    pub fn read(dir: &Path) -> Result<StoredRun, HarnessError> {
        if !is_run(dir) {
            return Err(HarnessError::BadInput(format!(
                "{} is not a run folder (it has no test.json and history.jsonl); give one \
                 like results/<test>/<time>",
                dir.display()
            )));
        }
        let test = read_json(&dir.join("test.json"))?;
        let history_path = dir.join("history.jsonl");
        let history = match std::fs::File::open(&history_path) {
            Ok(file) => {
                read_history(std::io::BufReader::new(file))
                    .map_err(|e| {
                        HarnessError::BadInput(format!(
                            "{} is not a JSON-lines history: {e}",
                            history_path.display()
                        ))
                    })?
                    .ops
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                return Err(anyhow::Error::from(e)
                    .context(format!("opening {}", history_path.display()))
                    .into())
            }
        };
        let results_path = dir.join("results.json");
        let (results, results_rechecked) = if results_path.is_file() {
            (read_json(&results_path)?, false)
        } else {
            let facts = crate::check::stored_spec(&history_path)
                .map(|spec| spec.run_facts())
                .unwrap_or_default();
            let results = crate::check::check_history(&history_path, false, None, facts)?;
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
            results: RecordedResults::from_json(results),
            results_rechecked,
            files: linked_files(dir),
        }
    }
}

/// Reads a JSON file; one that does not parse is bad input.
pub fn read_json(path: &Path) -> Result<Value, HarnessError> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| HarnessError::BadInput(format!("{} is not valid JSON: {e}", path.display())))
}

/// The run's own files that exist, then `nodes/<node>/<file>` in name order.
fn linked_files(dir: &Path) -> Vec<String> {
    let own = [
        "test.json",
        "history.jsonl",
        "results.json",
        "splitbrain.log",
    ];
    let mut files: Vec<String> = own
        .iter()
        .filter(|name| dir.join(name).is_file())
        .map(|name| name.to_string())
        .collect();
    let mut logs = Vec::new();
    for node in sorted_entries(&dir.join("nodes")) {
        for file in sorted_entries(&node) {
            if file.is_file() {
                if let Ok(relative) = file.strip_prefix(dir) {
                    logs.push(relative.to_string_lossy().into_owned());
                }
            }
        }
    }
    files.extend(logs);
    files
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|read| read.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.sort();
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_sections_are_typed_and_the_rest_kept_as_json() {
        let results = RecordedResults::from_json(json!({
            "valid": "unknown",
            "interrupted": true,
            "ops": {"total": 3},
            "fencing": {"not": "a fencing result"},
            "linearizability": {"valid": false, "model": "register", "failures": []},
        }));
        assert_eq!(results.valid, Some(Valid::Unknown));
        assert!(results.interrupted);
        assert!(results.fencing.is_none());
        let names: Vec<&str> = results.other.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["fencing", "linearizability"]);
    }

    #[test]
    fn a_test_record_missing_fields_still_reads() {
        let test = StoredTest::from_json(&json!({"name": "t", "nemesis": ["kill", 3], "seed": 7}));
        assert_eq!(test.server, None);
        let versions = |v| StoredTest::from_json(&json!({ "versions": v })).server;
        assert_eq!(
            versions(json!({"server": "etcd 3.4.23"})).unwrap(),
            "etcd 3.4.23"
        );
        assert_eq!(
            versions(json!({"redis": "7.0.15"})).unwrap(),
            "redis 7.0.15"
        );
        assert_eq!(test.name, "t");
        assert_eq!(test.nemesis, ["kill"]);
        assert_eq!(test.seed, Some(7));
        assert_eq!(test.command, None);
        assert_eq!(StoredTest::default().faults_label(), "none");
    }
}
