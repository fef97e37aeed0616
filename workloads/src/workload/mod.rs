//! Workloads: what client processes do, as a stream of recorded operations.
//!
//! The lock workloads drive a lock client; the data workloads (one file each, registered in
//! [`WORKLOADS`]) talk to the deployment's master themselves and end with a final read.

pub mod lock;
pub mod register;
pub mod set;

use std::time::Duration;

use async_trait::async_trait;
use redis::FromRedisValue;
use splitbrain_checker::{Op, OpType, Process};
use tokio_util::sync::CancellationToken;

use self::lock::{Shared, WorkloadError};
use crate::node::NodeError;
use crate::{ClientConfig, Recorder, Server};

/// What the clients do, whatever they need (a lock, a register, a set, a storage): the run
/// prepares it, runs it beside the faults, and reads what survived once they are healed.
#[async_trait]
pub trait Workload: Send + Sync {
    /// The key whose master the faults on "the current master" aim at.
    fn key(&self) -> String;
    /// Gets ready before any client starts (lock-set empties its storage's document).
    async fn prepare(&self) -> Result<(), WorkloadError> {
        Ok(())
    }
    /// Runs every worker until `stop`; worker `w` uses client group `w % groups.len()`.
    async fn run(
        &self,
        groups: &[ClientConfig],
        shared: &Shared,
        stop: CancellationToken,
    ) -> Result<(), WorkloadError>;
    /// After the heal: reads what survived (through the first client group, where it reads
    /// the deployment itself).
    async fn final_read(
        &self,
        groups: &[ClientConfig],
        recorder: &Recorder,
    ) -> Result<(), WorkloadError>;
}

/// What a data workload is built from.
#[derive(Debug, Clone, Copy)]
pub struct DataOptions {
    pub concurrency: usize,
    /// How many keys to spread over, where the workload has several.
    pub keys: usize,
}

/// A workload users can name in `--workload`.
pub struct WorkloadKind {
    pub name: &'static str,
    pub summary: &'static str,
    /// How to build it, for a data workload; `None` for the lock workloads, which take a lock
    /// client.
    pub data: Option<fn(DataOptions) -> Box<dyn Workload>>,
    /// Whether it writes to the storage service under the lock.
    pub needs_storage: bool,
    /// Whether it can run on a deployment its clients see as this, or why not (the lock
    /// workloads leave that to their lock client).
    pub fits: fn(&ClientConfig) -> Result<(), String>,
}

impl std::fmt::Debug for WorkloadKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Every workload, by name.
pub static WORKLOADS: &[WorkloadKind] = &[
    WorkloadKind {
        name: "lock",
        summary: "clients loop: acquire, hold for a while, release (lock safety)",
        data: None,
        needs_storage: false,
        fits: |_| Ok(()),
    },
    WorkloadKind {
        name: "lock-set",
        summary: "under the lock, read a document from PostgreSQL, append an id, write it back \
                  (lost writes)",
        data: None,
        needs_storage: true,
        fits: |_| Ok(()),
    },
    set::KIND,
    register::KIND,
];

/// Looks a workload up by name.
pub fn find_workload(name: &str) -> Option<&'static WorkloadKind> {
    WORKLOADS.iter().find(|w| w.name == name)
}

/// How long one data command may take before its outcome is unknown.
const OP_TIMEOUT: Duration = Duration::from_secs(1);

/// Where a data workload's worker sends its commands: the one server, the Sentinels'
/// master, or the cluster; or why this deployment has no single master to talk to.
pub(crate) fn data_server(config: &ClientConfig, workload: &str) -> Result<Server, String> {
    Server::of(config, &format!("the {workload} workload"), OP_TIMEOUT)
}

/// A breath between a data workload's ops, so that a minute's history stays checkable (Jepsen's
/// clients paced theirs too).
const PACE: Duration = Duration::from_millis(5);
/// The processes that make the final reads, well clear of the workers' ids.
const FINAL_READER: u64 = 1_000_000_000;
/// How long a final read may keep trying while a master settles after the heal.
const FINAL_READ_PATIENCE: Duration = Duration::from_secs(20);

/// Reads `key` with `command` once the faults are healed, retrying while no master answers,
/// and records it as the read of final reader `reader`; `value` is what the reply records.
async fn final_read<T: FromRedisValue>(
    server: &mut Server,
    recorder: &Recorder,
    reader: u64,
    key: &str,
    command: &redis::Cmd,
    value: impl Fn(T) -> serde_json::Value,
) {
    let process = Process::Client(FINAL_READER + reader);
    recorder.record(Op::new(process, OpType::Invoke, "read").key(key));
    let started = tokio::time::Instant::now();
    let done = loop {
        match server.query::<T>(command).await {
            Ok(reply) => break Op::new(process, OpType::Ok, "read").value(value(reply)),
            Err(e) if started.elapsed() > FINAL_READ_PATIENCE => {
                break Op::new(process, OpType::Fail, "read").error(e.to_string())
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    };
    recorder.record(done.key(key));
}

/// How an update that got no good reply ends: `info` if it may have taken effect, `fail` if
/// it certainly did not.
fn unsettled(error: &NodeError) -> OpType {
    if error.is_indeterminate() {
        OpType::Info
    } else {
        OpType::Fail
    }
}
