//! The `set` workload, Jepsen's 2013 Redis test: clients add unique integers to one set (on
//! Redis, `SADD` on whichever node they are told is master); after the faults are healed, a
//! final read of the whole set (`SMEMBERS` from the master of that moment) shows which
//! acknowledged adds survived. The
//! `lost-writes` checker reads the history as it reads `lock-set`'s.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use splitbrain_checker::{Op, OpType, Process};
use tokio_util::sync::CancellationToken;

use async_trait::async_trait;

use super::lock::{Shared, WorkloadError};
use super::{FinalRead, Set, Workload, WorkloadKind, PACE};
use crate::{ClientConfig, Recorder};

pub const KIND: WorkloadKind = WorkloadKind {
    name: "set",
    summary: "Jepsen 2013: clients SADD unique ids on the master they are told of (lost writes)",
    data: Some(|options| {
        Box::new(SetWorkload {
            concurrency: options.concurrency,
        })
    }),
    needs_storage: false,
    fits: |config| config.connection.set(&config.nodes).map(drop),
};

/// The set every client adds to.
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
            let set = config
                .connection
                .set(&config.nodes)
                .map_err(WorkloadError::Client)?;
            let recorder = shared.recorder.clone();
            let (next_id, stop) = (next_id.clone(), stop.clone());
            let concurrency = self.concurrency as u64;
            workers.spawn(async move {
                add_until_stopped(worker as u64, concurrency, set, &recorder, &next_id, &stop).await
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
        let mut set = groups[0]
            .connection
            .set(&groups[0].nodes)
            .map_err(WorkloadError::Client)?;
        let read = FinalRead::start(recorder, 0, SET_KEY);
        let sorted = |mut members: Vec<i64>| {
            members.sort_unstable();
            serde_json::Value::from(members)
        };
        while !read.ended(set.members(SET_KEY).await.map(sorted)).await {}
        Ok(())
    }
}

async fn add_until_stopped(
    worker: u64,
    concurrency: u64,
    mut set: Box<dyn Set>,
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
        let done = match set.add(SET_KEY, id).await {
            Ok(()) => op(process, OpType::Ok).nodes(vec![set.node()]),
            Err((kind, e)) => op(process, kind).error(e),
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
