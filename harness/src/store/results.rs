//! `results.json`: the verdict and each checker's section, under its name. [`Results`] is what
//! a run or a check writes, and what the report, the index, the claims, the matrix and shrink
//! read back ([`Results::read`]), leniently: a section it cannot read is kept as the JSON it
//! is, so one bad or newer section never hides the rest.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use splitbrain_checker::every::Sections;
use splitbrain_checker::linearizability::Linearizability;
use splitbrain_checker::{Checked, Op, OpType, Valid};

/// `results.json`: the verdict and what every checker found.
#[derive(Debug, Serialize)]
pub struct Results {
    /// The file's layout: [`crate::store::FORMAT`] when written here.
    pub format: u32,
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
    /// Read back: the sections this splitbrain could not read (a newer one's, or one edited),
    /// as they are. Never written.
    #[serde(skip)]
    pub unread: Vec<(String, Value)>,
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

#[derive(Debug, Serialize, Deserialize)]
pub struct InjectedFault {
    pub fault: String,
    pub nodes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<serde_json::Value>,
}

/// How many ops of each kind a history holds, clients and nemesis apart.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OpCounts {
    pub total: usize,
    pub invoke: usize,
    pub ok: usize,
    pub fail: usize,
    pub info: usize,
    pub nemesis: usize,
    /// Completions by function: `acquire` → {ok, fail, info}.
    pub by_f: BTreeMap<String, BTreeMap<String, usize>>,
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
        // Looked up before inserting: a history of a million ops allocates no key for each.
        let by_outcome = match self.by_f.get_mut(&op.f) {
            Some(by_outcome) => by_outcome,
            None => self.by_f.entry(op.f.clone()).or_default(),
        };
        match by_outcome.get_mut(slot) {
            Some(n) => *n += 1,
            None => {
                by_outcome.insert(slot.to_string(), 1);
            }
        }
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

impl Results {
    /// Reads `results.json` back. A field missing or unreadable takes its default (a missing
    /// verdict is `unknown`: the file does not say); a checker's section that does not read
    /// as its type, and any name this splitbrain does not know, go to `unread`.
    pub fn read(json: Value) -> Results {
        let Value::Object(mut fields) = json else {
            return Results::read(Value::Object(Default::default()));
        };
        let (checkers, unread) = Sections::read(&mut fields);
        let mut read = Fields { fields, unread };
        let results = Results {
            format: read.take("format").unwrap_or(0),
            valid: read.take("valid").unwrap_or(Valid::Unknown),
            verdict: read.take("verdict").unwrap_or_default(),
            interrupted: read.take("interrupted").unwrap_or(false),
            ops: read.take("ops").unwrap_or_default(),
            pace: read.take("pace"),
            faults: read.take("faults").unwrap_or_default(),
            checkers,
            linearizability: read.take("linearizability"),
            linearizability_counts: read.take("linearizability-in-verdict").unwrap_or(false),
            error: read.take("error"),
            unread: Vec::new(),
        };
        let Fields { fields, mut unread } = read;
        unread.extend(fields);
        Results { unread, ..results }
    }
}

/// A `results.json` being read: each field taken by its name, as its type or else into
/// `unread`.
struct Fields {
    fields: serde_json::Map<String, Value>,
    unread: Vec<(String, Value)>,
}

impl Fields {
    fn take<T: DeserializeOwned>(&mut self, name: &str) -> Option<T> {
        let value = self.fields.remove(name)?;
        match serde_json::from_value(value.clone()) {
            Ok(typed) => Some(typed),
            Err(_) => {
                self.unread.push((name.to_string(), value));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use splitbrain_checker::fencing::Fencing;

    #[test]
    fn known_sections_are_typed_and_the_rest_kept_as_json() {
        let results = Results::read(json!({
            "valid": "unknown",
            "interrupted": true,
            "ops": {"total": 3},
            "fencing": {"not": "a fencing result"},
            "linearizability": {"valid": false, "model": "register", "failures": []},
        }));
        assert_eq!(results.valid, Valid::Unknown);
        assert!(results.interrupted);
        assert_eq!(results.ops.total, 3);
        assert_eq!(results.format, 0, "a file before the format was numbered");
        assert!(results.checkers.get::<Fencing>().is_none());
        let names: Vec<&str> = results.unread.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["fencing", "linearizability"]);
    }
}
