//! `test.json`: what was run. Written by `run` as the spec with the run's id, its command line
//! and versions; read back strictly as a spec (replay, shrink) or leniently for a report.

use serde::Serialize;
use serde_json::Value;

use crate::spec::TestSpec;

/// `test.json`: what was run, with which versions.
#[derive(Debug, Serialize)]
pub struct TestRecord<'a> {
    /// [`super::FORMAT`].
    pub format: u32,
    #[serde(flatten)]
    pub spec: &'a TestSpec,
    pub run_id: &'a str,
    pub started: String,
    pub command: String,
    pub versions: Versions,
}

#[derive(Debug, Default, Serialize)]
pub struct Versions {
    pub splitbrain: &'static str,
    /// The server program and its version, as the first node reports it: `redis 7.0.15`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_image: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_image: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
