//! Workloads: what client processes do, as a stream of recorded operations.
//!
//! The lock workloads drive a lock client; the data workloads (one file each, registered in
//! [`WORKLOADS`]) read and write the deployment's own data, through what its system gives them
//! ([`Registers`], [`Set`]), and end with a final read.

pub mod lock;
pub mod register;
pub mod set;

use std::time::Duration;

use async_trait::async_trait;
use splitbrain_checker::{Op, OpType, Process};
use tokio_util::sync::CancellationToken;

pub use crate::connection::{Registers, Set, Unsettled};

use self::lock::{Shared, WorkloadError};
use crate::{ClientConfig, Recorder};

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

/// A breath between a data workload's ops, so that a minute's history stays checkable (Jepsen's
/// clients paced theirs too).
const PACE: Duration = Duration::from_millis(5);
/// The processes that make the final reads, well clear of the workers' ids.
const FINAL_READER: u64 = 1_000_000_000;
/// How long a final read may keep trying while a master settles after the heal.
const FINAL_READ_PATIENCE: Duration = Duration::from_secs(20);

/// A final read once the faults are healed: recorded as the read of a final reader, and tried
/// again while no master answers.
struct FinalRead<'a> {
    recorder: &'a Recorder,
    process: Process,
    key: &'a str,
    started: tokio::time::Instant,
}

impl<'a> FinalRead<'a> {
    /// Records final reader `reader`'s invoke of a read of `key`.
    fn start(recorder: &'a Recorder, reader: u64, key: &'a str) -> FinalRead<'a> {
        let process = Process::Client(FINAL_READER + reader);
        recorder.record(Op::new(process, OpType::Invoke, "read").key(key));
        FinalRead {
            recorder,
            process,
            key,
            started: tokio::time::Instant::now(),
        }
    }

    /// Records how an attempt ended, if it ends the read, and says whether it did; otherwise
    /// waits a moment before the next attempt.
    async fn ended(&self, attempt: Result<serde_json::Value, Unsettled>) -> bool {
        let done = match attempt {
            Ok(value) => Op::new(self.process, OpType::Ok, "read").value(value),
            Err((_, e)) if self.started.elapsed() > FINAL_READ_PATIENCE => {
                Op::new(self.process, OpType::Fail, "read").error(e)
            }
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(250)).await;
                return false;
            }
        };
        self.recorder.record(done.key(self.key));
        true
    }
}
