//! The results store: `results/<test>/<YYYYMMDDTHHMMSS>/` with `test.json`, `history.jsonl`,
//! `results.json`, `nodes/<node>/*.log` and `splitbrain.log`, plus `latest` links.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;
use splitbrain_checker::acquisition_stats::AcquisitionStats;
use splitbrain_checker::coverage::Coverage;
use splitbrain_checker::fencing::Fencing;
use splitbrain_checker::linearizability::Linearizability;
use splitbrain_checker::lock_safety::LockSafety;
use splitbrain_checker::lost_writes::LostWrites;
use splitbrain_checker::stats::Stats;
use splitbrain_checker::stuck_lock::StuckLock;
use splitbrain_checker::{Checked, Op, OpType, Valid};

use crate::spec::TestSpec;

/// One run's folder.
pub struct RunDir {
    pub path: PathBuf,
}

impl RunDir {
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

    pub fn history(&self) -> PathBuf {
        self.path.join("history.jsonl")
    }

    pub fn nodes(&self) -> PathBuf {
        self.path.join("nodes")
    }

    pub fn log(&self) -> PathBuf {
        self.path.join("splitbrain.log")
    }

    pub fn write_json(&self, file: &str, value: &impl Serialize) -> anyhow::Result<()> {
        let path = self.path.join(file);
        let text = serde_json::to_string_pretty(value).context("serialising results")?;
        std::fs::write(&path, text + "\n").with_context(|| format!("writing {}", path.display()))
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

fn replace_symlink(target: &Path, link: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link)
        .with_context(|| format!("linking {} to {}", link.display(), target.display()))
}

/// `test.json`: what was run, with which versions.
#[derive(Debug, Serialize)]
pub struct TestRecord<'a> {
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
