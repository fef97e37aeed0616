//! The `set` workload, Jepsen's 2013 Redis test: clients add unique integers to one Redis set
//! (`SADD`) on whichever node they are told is master; after the faults are healed, a final
//! `SMEMBERS` from the master of that moment shows which acknowledged adds survived. The
//! `lost-writes` checker reads the history as it reads `lock-set`'s.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use splitbrain_checker::{Op, OpType, Process};
use tokio_util::sync::CancellationToken;

use async_trait::async_trait;

use super::lock::{Shared, WorkloadError};
use super::{data_server, DataWorkload, WorkloadKind};
use crate::node::NodeError;
use crate::{ClientConfig, Recorder, Server};

pub const KIND: WorkloadKind = WorkloadKind {
    name: "set",
    summary: "Jepsen 2013: clients SADD unique ids on the master they are told of (lost writes)",
    data: Some(|options| {
        Box::new(SetWorkload {
            concurrency: options.concurrency,
        })
    }),
};

/// The Redis set every client adds to.
pub const SET_KEY: &str = "set";

/// A breath between adds, so that a minute's history stays readable (Jepsen's clients paced
/// theirs too).
const PACE: Duration = Duration::from_millis(5);
/// How long the final read may keep trying while a master settles after the heal.
const FINAL_READ_PATIENCE: Duration = Duration::from_secs(20);
/// The process that makes the final read, well clear of the workers' ids.
const FINAL_READER: u64 = 1_000_000_000;

/// How the `set` workload runs.
#[derive(Debug, Clone)]
pub struct SetWorkload {
    pub concurrency: usize,
}

#[async_trait]
impl DataWorkload for SetWorkload {
    fn key(&self) -> String {
        SET_KEY.to_string()
    }

    async fn run(
        &self,
        groups: &[ClientConfig],
        shared: &Shared,
        stop: CancellationToken,
    ) -> Result<(), WorkloadError> {
        let next_id = Arc::new(AtomicU64::new(1));
        let mut workers = tokio::task::JoinSet::new();
        for worker in 0..self.concurrency {
            let config = &groups[worker % groups.len()];
            let server = data_server(config, "set").map_err(WorkloadError::Client)?;
            let recorder = shared.recorder.clone();
            let (next_id, stop) = (next_id.clone(), stop.clone());
            let concurrency = self.concurrency as u64;
            workers.spawn(async move {
                add_until_stopped(
                    worker as u64,
                    concurrency,
                    server,
                    &recorder,
                    &next_id,
                    &stop,
                )
                .await
            });
        }
        while let Some(joined) = workers.join_next().await {
            joined.map_err(|e| WorkloadError::Crashed(e.to_string()))?;
        }
        Ok(())
    }

    /// Reads the whole set from the master of the moment, retrying while none answers.
    async fn final_read(
        &self,
        config: &ClientConfig,
        recorder: &Recorder,
    ) -> Result<(), WorkloadError> {
        let mut server = data_server(config, "set").map_err(WorkloadError::Client)?;
        let process = Process::Client(FINAL_READER);
        recorder.record(Op::new(process, OpType::Invoke, "read").key(SET_KEY));
        let smembers = redis::cmd("SMEMBERS").arg(SET_KEY).clone();
        let started = tokio::time::Instant::now();
        let done = loop {
            match server.query::<Vec<i64>>(&smembers).await {
                Ok(mut members) => {
                    members.sort_unstable();
                    break Op::new(process, OpType::Ok, "read").value(members);
                }
                Err(e) if started.elapsed() > FINAL_READ_PATIENCE => {
                    break Op::new(process, OpType::Fail, "read").error(e.to_string())
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        };
        recorder.record(done.key(SET_KEY));
        Ok(())
    }
}

async fn add_until_stopped(
    worker: u64,
    concurrency: u64,
    mut server: Server,
    recorder: &Recorder,
    next_id: &AtomicU64,
    stop: &CancellationToken,
) {
    let mut process = worker;
    while !stop.is_cancelled() {
        let id = next_id.fetch_add(1, Ordering::Relaxed) as i64;
        let op = |process, kind| {
            Op::new(Process::Client(process), kind, "add")
                .key(SET_KEY)
                .value(id)
        };
        recorder.record(op(process, OpType::Invoke));
        let sadd = redis::cmd("SADD").arg(SET_KEY).arg(id).clone();
        let done = match server.query::<i64>(&sadd).await {
            Ok(_) => op(process, OpType::Ok),
            Err(e @ NodeError::Indeterminate { .. }) => {
                op(process, OpType::Info).error(e.to_string())
            }
            Err(e) => op(process, OpType::Fail).error(e.to_string()),
        };
        let unknown = done.kind == OpType::Info;
        recorder.record(done);
        if unknown {
            process += concurrency;
        }
        tokio::select! {
            () = tokio::time::sleep(PACE) => {}
            () = stop.cancelled() => {}
        }
    }
}
