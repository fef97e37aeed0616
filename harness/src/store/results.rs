//! `results.json`: the verdict and each checker's section. `Results` is what a run or a check
//! writes; `RecordedResults` reads one back leniently, for the report, the claims and the
//! matrix: a section it cannot read is kept as the JSON it is.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use splitbrain_checker::acquisition_stats::AcquisitionStats;
use splitbrain_checker::coverage::Coverage;
use splitbrain_checker::fencing::Fencing;
use splitbrain_checker::linearizability::Linearizability;
use splitbrain_checker::lock_safety::LockSafety;
use splitbrain_checker::lost_writes::LostWrites;
use splitbrain_checker::stats::Stats;
use splitbrain_checker::stuck_lock::StuckLock;
use splitbrain_checker::{Checked, Op, OpType, Valid};

/// `results.json`: the verdict and what every checker found.
#[derive(Debug, Serialize)]
pub struct Results {
    pub valid: Valid,
    /// The verdict in words, with what each checker found (`INVALID: 3 double grants`).
    pub verdict: String,
    /// The run was stopped early (Ctrl-C); the verdict covers the history up to then.
    pub interrupted: bool,
    pub ops: OpCounts,
    /// Whether the run did anything a verdict can rest on (Jepsen's stats checker).
    pub stats: Stats,
    /// What the faults reached: grants with a fault on their holder, kills back within the
    /// TTL, pauses that landed on a holder.
    pub coverage: Coverage,
    /// What paced the faults, where the deployment's failure detector did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pace: Option<String>,
    pub faults: Vec<InjectedFault>,
    #[serde(rename = "lock-safety")]
    pub lock_safety: LockSafety,
    #[serde(rename = "lost-writes")]
    pub lost_writes: LostWrites,
    pub fencing: Fencing,
    #[serde(rename = "stuck-lock")]
    pub stuck_lock: StuckLock,
    pub acquisition: AcquisitionStats,
    /// The linearizability checker's result, where the operations call for a model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linearizability: Option<Linearizability>,
    /// Whether that result is part of `valid` (a register's is; a lock's mutex check is not).
    #[serde(rename = "linearizability-in-verdict")]
    pub linearizability_counts: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Results {
    /// The checkers whose results make the verdict, the stats checker first: where nothing
    /// was tested, that is the reason to give.
    pub fn in_verdict(&self) -> Vec<&dyn Checked> {
        let mut checkers: Vec<&dyn Checked> = vec![
            &self.stats,
            &self.lock_safety,
            &self.lost_writes,
            &self.fencing,
            &self.stuck_lock,
        ];
        if let Some(result) = self.linearizability.as_ref() {
            if self.linearizability_counts {
                checkers.push(result);
            }
        }
        checkers
    }
}

#[derive(Debug, Serialize)]
pub struct InjectedFault {
    pub fault: String,
    pub nodes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<serde_json::Value>,
}

/// How many ops of each kind a history holds, clients and nemesis apart.
#[derive(Debug, Default, Serialize)]
pub struct OpCounts {
    pub total: usize,
    pub invoke: usize,
    pub ok: usize,
    pub fail: usize,
    pub info: usize,
    pub nemesis: usize,
    /// Completions by function: `acquire` → {ok, fail, info}.
    pub by_f: BTreeMap<String, BTreeMap<&'static str, usize>>,
}

impl OpCounts {
    /// Counts one more op.
    pub fn add(&mut self, op: &Op) {
        self.total += 1;
        if op.process.is_nemesis() {
            self.nemesis += 1;
            return;
        }
        let slot = match op.kind {
            OpType::Invoke => {
                self.invoke += 1;
                return;
            }
            OpType::Ok => {
                self.ok += 1;
                "ok"
            }
            OpType::Fail => {
                self.fail += 1;
                "fail"
            }
            OpType::Info => {
                self.info += 1;
                "info"
            }
        };
        let by_outcome = match self.by_f.get_mut(&op.f) {
            Some(by_outcome) => by_outcome,
            None => self.by_f.entry(op.f.clone()).or_default(),
        };
        *by_outcome.entry(slot).or_default() += 1;
    }
}

/// The faults a history records, in order, from its nemesis `start` ops.
pub fn injected_faults(history: &[Op]) -> Vec<InjectedFault> {
    history
        .iter()
        .filter(|op| op.process.is_nemesis() && op.f == "start")
        .map(|op| InjectedFault {
            fault: op.fault.clone().unwrap_or_default(),
            nodes: op.node.clone().unwrap_or_default(),
            params: op.value.clone(),
            measured: op.measured.clone(),
        })
        .collect()
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
}
