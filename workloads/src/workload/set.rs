//! The `set` workload, Jepsen's 2013 Redis test: clients add unique integers to one Redis set
//! (`SADD`) on whichever node they are told is master; after the faults are healed, a final
//! `SMEMBERS` from the master of that moment shows which acknowledged adds survived. The
//! `lost-writes` checker reads the history as it reads `lock-set`'s.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use splitbrain_checker::{Op, OpType, Process};
use tokio_util::sync::CancellationToken;

use async_trait::async_trait;

use super::lock::{Shared, WorkloadError};
use super::{data_server, final_read, unsettled, Workload, WorkloadKind, PACE};
use crate::{ClientConfig, Recorder, Server};

pub const KIND: WorkloadKind = WorkloadKind {
    name: "set",
    summary: "Jepsen 2013: clients SADD unique ids on the master they are told of (lost writes)",
    data: Some(|options| {
        Box::new(SetWorkload {
            concurrency: options.concurrency,
        })
    }),
    needs_storage: false,
    fits: |config| data_server(config, "set").map(drop),
};

/// The Redis set every client adds to.
pub const SET_KEY: &str = "set";

/// How the `set` workload runs.
#[derive(Debug, Clone)]
pub struct SetWorkload {
    pub concurrency: usize,
}

#[async_trait]
impl Workload for SetWorkload {
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
        groups: &[ClientConfig],
        recorder: &Recorder,
    ) -> Result<(), WorkloadError> {
        let mut server = data_server(&groups[0], "set").map_err(WorkloadError::Client)?;
        let smembers = redis::cmd("SMEMBERS").arg(SET_KEY).clone();
        let sorted = |mut members: Vec<i64>| {
            members.sort_unstable();
            members.into()
        };
        final_read(&mut server, recorder, 0, SET_KEY, &smembers, sorted).await;
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
            Ok(_) => op(process, OpType::Ok).nodes(vec![server.name().to_string()]),
            Err(e) => op(process, unsettled(&e)).error(e.to_string()),
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
