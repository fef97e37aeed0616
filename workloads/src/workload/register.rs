//! The `register` workload, Jepsen's cas-register: clients read, write and compare-and-set
//! small integers in a few Redis keys, each key a register of its own. The history is what
//! the linearizability checker takes with the `cas-register` model, key by key: a replicated
//! deployment that loses a write or serves a stale read shows up as a history no single
//! register could have produced.
//!
//! Ops: `read` (an `ok` carries the value read, `null` for a missing key), `write` (the value
//! written) and `cas` (`[expected, new]`; `fail` when the register held something else).
//! A write or cas whose reply never came is `info`; a read that failed changed nothing and is
//! `fail`.

use std::sync::Arc;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use splitbrain_checker::{Op, OpType, Process};
use tokio_util::sync::CancellationToken;

use super::lock::{Shared, WorkloadError};
use super::{data_server, final_read, unsettled, Workload, WorkloadKind, PACE};
use crate::{ClientConfig, Recorder, Server};

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
};

/// Values are drawn from this few, as Jepsen's are, so that compare-and-sets often succeed
/// and a stale read is likely to be told apart from a fresh one.
const VALUES: i64 = 5;

/// Sets a key to a new value only if it holds the expected one; 1 if it did, else 0.
const COMPARE_AND_SET: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[2])
    return 1
end
return 0
";

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
        let script = Arc::new(redis::Script::new(COMPARE_AND_SET));
        let mut workers = tokio::task::JoinSet::new();
        for worker in 0..self.concurrency {
            let server = data_server(&groups[worker % groups.len()], KIND.name)
                .map_err(WorkloadError::Client)?;
            let client = Worker {
                process: worker as u64,
                concurrency: self.concurrency as u64,
                keys: self.keys,
                server,
                script: script.clone(),
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
        let mut server = data_server(&groups[0], KIND.name).map_err(WorkloadError::Client)?;
        for index in 0..self.keys {
            let key = RegisterWorkload::register(index);
            let get = redis::cmd("GET").arg(&key).clone();
            let value = |value: Option<i64>| value.into();
            final_read(&mut server, recorder, index as u64, &key, &get, value).await;
        }
        Ok(())
    }
}

/// One client process of the workload.
struct Worker {
    process: u64,
    concurrency: u64,
    keys: usize,
    server: Server,
    script: Arc<redis::Script>,
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
                    let get = redis::cmd("GET").arg(&key).clone();
                    match self.server.query::<Option<i64>>(&get).await {
                        Ok(value) => op(self.process, OpType::Ok, "read").value(value),
                        Err(e) => op(self.process, OpType::Fail, "read").error(e.to_string()),
                    }
                }
                1 => {
                    let value = self.rng.random_range(0..VALUES);
                    let write = |kind| op(self.process, kind, "write").value(value);
                    recorder.record(write(OpType::Invoke));
                    let set = redis::cmd("SET").arg(&key).arg(value).clone();
                    match self.server.query::<()>(&set).await {
                        Ok(()) => write(OpType::Ok),
                        Err(e) => write(unsettled(&e)).error(e.to_string()),
                    }
                }
                _ => {
                    let pair = [
                        self.rng.random_range(0..VALUES),
                        self.rng.random_range(0..VALUES),
                    ];
                    let cas = |kind| op(self.process, kind, "cas").value(pair.to_vec());
                    recorder.record(cas(OpType::Invoke));
                    let (expected, new) = (pair[0].to_string(), pair[1].to_string());
                    let reply = self
                        .server
                        .eval::<i64>(&self.script, &[&key], &[&expected, &new])
                        .await;
                    match reply {
                        Ok(1) => cas(OpType::Ok),
                        Ok(_) => cas(OpType::Fail).error("register held another value"),
                        Err(e) => cas(unsettled(&e)).error(e.to_string()),
                    }
                }
            };
            let unknown = done.kind == OpType::Info;
            let done = match done.kind {
                OpType::Ok => done.nodes(vec![self.server.name().to_string()]),
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
