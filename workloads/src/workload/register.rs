//! The `register` workload, Jepsen's cas-register: clients read, write and compare-and-set
//! small integers in a few keys of the deployment's own data (Redis's, etcd's), each key a
//! register of its own. The history is what
//! the linearizability checker takes with the `cas-register` model, key by key: a replicated
//! deployment that loses a write or serves a stale read shows up as a history no single
//! register could have produced.
//!
//! Ops: `read` (an `ok` carries the value read, `null` for a missing key), `write` (the value
//! written) and `cas` (`[expected, new]`; `fail` when the register held something else).
//! A write or cas whose reply never came is `info`; a read that failed changed nothing and is
//! `fail`.

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use splitbrain_checker::{Op, OpType, Process};
use tokio_util::sync::CancellationToken;

use super::lock::{Shared, WorkloadError};
use super::{FinalRead, Registers, Workload, WorkloadKind, PACE};
use crate::{ClientConfig, Recorder};

pub const KIND: WorkloadKind = WorkloadKind {
    name: "register",
    summary: "read, write and compare-and-set small integers in --resources keys \
              (linearizability, cas-register)",
    data: Some(|options| {
        Box::new(RegisterWorkload {
            concurrency: options.concurrency,
            keys: options.keys.max(1),
        })
    }),
    needs_storage: false,
    fits: |config| registers(config).map(drop),
};

/// Values are drawn from this few, as Jepsen's are, so that compare-and-sets often succeed
/// and a stale read is likely to be told apart from a fresh one.
const VALUES: i64 = 5;

/// A worker's registers on this deployment, as its system keeps them, or why it has none.
fn registers(config: &ClientConfig) -> Result<Box<dyn Registers>, String> {
    config.connection.registers(&config.nodes)
}

#[derive(Debug, Clone)]
pub struct RegisterWorkload {
    pub concurrency: usize,
    pub keys: usize,
}

impl RegisterWorkload {
    fn register(index: usize) -> String {
        format!("r{index}")
    }
}

#[async_trait]
impl Workload for RegisterWorkload {
    fn key(&self) -> String {
        RegisterWorkload::register(0)
    }

    async fn run(
        &self,
        groups: &[ClientConfig],
        shared: &Shared,
        stop: CancellationToken,
    ) -> Result<(), WorkloadError> {
        let mut workers = tokio::task::JoinSet::new();
        for worker in 0..self.concurrency {
            let registers =
                registers(&groups[worker % groups.len()]).map_err(WorkloadError::Client)?;
            let client = Worker {
                process: worker as u64,
                concurrency: self.concurrency as u64,
                keys: self.keys,
                registers,
                rng: StdRng::from_os_rng(),
            };
            let (recorder, stop) = (shared.recorder.clone(), stop.clone());
            workers.spawn(async move { client.until_stopped(&recorder, &stop).await });
        }
        while let Some(joined) = workers.join_next().await {
            joined.map_err(|e| WorkloadError::Crashed(e.to_string()))?;
        }
        Ok(())
    }

    /// Reads every key once more from the master of the moment, retrying while none answers.
    async fn final_read(
        &self,
        groups: &[ClientConfig],
        recorder: &Recorder,
    ) -> Result<(), WorkloadError> {
        let mut registers = registers(&groups[0]).map_err(WorkloadError::Client)?;
        for index in 0..self.keys {
            let key = RegisterWorkload::register(index);
            let read = FinalRead::start(recorder, index as u64, &key);
            while !read
                .ended(registers.read(&key).await.map(serde_json::Value::from))
                .await
            {}
        }
        Ok(())
    }
}

/// One client process of the workload.
struct Worker {
    process: u64,
    concurrency: u64,
    keys: usize,
    registers: Box<dyn Registers>,
    rng: StdRng,
}

impl Worker {
    async fn until_stopped(mut self, recorder: &Recorder, stop: &CancellationToken) {
        while !stop.is_cancelled() {
            let key = RegisterWorkload::register(self.rng.random_range(0..self.keys));
            let op = |process, kind, f: &str| Op::new(Process::Client(process), kind, f).key(&key);
            let done = match self.rng.random_range(0..3) {
                0 => {
                    recorder.record(op(self.process, OpType::Invoke, "read"));
                    match self.registers.read(&key).await {
                        Ok(value) => op(self.process, OpType::Ok, "read").value(value),
                        // A read that got no answer changed nothing.
                        Err((_, e)) => op(self.process, OpType::Fail, "read").error(e),
                    }
                }
                1 => {
                    let value = self.rng.random_range(0..VALUES);
                    let write = |kind| op(self.process, kind, "write").value(value);
                    recorder.record(write(OpType::Invoke));
                    match self.registers.write(&key, value).await {
                        Ok(()) => write(OpType::Ok),
                        Err((kind, e)) => write(kind).error(e),
                    }
                }
                _ => {
                    let pair = [
                        self.rng.random_range(0..VALUES),
                        self.rng.random_range(0..VALUES),
                    ];
                    let cas = |kind| op(self.process, kind, "cas").value(pair.to_vec());
                    recorder.record(cas(OpType::Invoke));
                    match self.registers.cas(&key, pair[0], pair[1]).await {
                        Ok(true) => cas(OpType::Ok),
                        Ok(false) => cas(OpType::Fail).error("register held another value"),
                        Err((kind, e)) => cas(kind).error(e),
                    }
                }
            };
            let unknown = done.kind == OpType::Info;
            let done = match done.kind {
                OpType::Ok => done.nodes(vec![self.registers.node()]),
                _ => done,
            };
            recorder.record(done);
            // A process whose op may still take effect is never reused, as in Jepsen.
            if unknown {
                self.process += self.concurrency;
            }
            tokio::select! {
                () = tokio::time::sleep(PACE) => {}
                () = stop.cancelled() => {}
            }
        }
    }
}
