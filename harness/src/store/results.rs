//! `results.json`: the verdict and each checker's section. `Results` is what a run or a check
//! writes; `RecordedResults` reads one back leniently, for the report, the claims and the
//! matrix: a section it cannot read is kept as the JSON it is.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use splitbrain_checker::every::Sections;
use splitbrain_checker::linearizability::Linearizability;
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
    /// What paced the faults, where the deployment's failure detector did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pace: Option<String>,
    pub faults: Vec<InjectedFault>,
    /// Every streaming checker's result, each under its name.
    #[serde(flatten)]
    pub checkers: Sections,
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
        let mut checkers: Vec<&dyn Checked> = self
            .checkers
            .in_verdict()
            .map(|c| c as &dyn Checked)
            .collect();
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
    /// The sections of the checkers in the list of every checker that read as their types.
    pub checkers: Sections,
    pub linearizability: Option<Linearizability>,
    /// Whether the linearizability result is part of the verdict.
    pub linearizability_counts: bool,
    /// Sections the report has no view of (a newer checker's) or could not
    /// read, shown as they are.
    pub other: Vec<(String, Value)>,
}

impl RecordedResults {
    pub fn from_json(json: Value) -> RecordedResults {
        let Value::Object(mut sections) = json else {
            return RecordedResults::default();
        };
        let (checkers, unread) = Sections::read(&mut sections);
        let mut results = RecordedResults {
            checkers,
            other: unread,
            ..RecordedResults::default()
        };
        for (name, section) in sections {
            match name.as_str() {
                "valid" => results.valid = serde_json::from_value(section).ok(),
                "interrupted" => results.interrupted = section.as_bool().unwrap_or(false),
                "error" => results.error = section.as_str().map(str::to_string),
                // The history shows these better.
                "ops" | "faults" => {}
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
    use splitbrain_checker::fencing::Fencing;

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
        assert!(results.checkers.get::<Fencing>().is_none());
        let names: Vec<&str> = results.other.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["fencing", "linearizability"]);
    }
}
