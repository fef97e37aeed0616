//! The `register` workload, Jepsen's cas-register: clients read, write and compare-and-set
//! small integers in a few keys (of Redis, or of etcd), each key a register of its own. The history is what
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
use super::{
    data_server, unsettled, Workload, WorkloadKind, FINAL_READER, FINAL_READ_PATIENCE, PACE,
};
use splitbrain_etcd_api::etcdserverpb::compare::TargetUnion;
use splitbrain_etcd_api::etcdserverpb::request_op::Request;
use splitbrain_etcd_api::etcdserverpb::{PutRequest, RangeRequest};

use crate::etcd::{txn_if_equal, EtcdConn, EtcdError};
use crate::{ClientConfig, Recorder, Server, Shape};

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

/// How one register op ended short of `ok`: `fail` if it certainly did not happen, `info` if
/// it may have, with why.
type Unsettled = (OpType, String);

/// Where a worker's registers live: the keys of a Redis deployment's master, or of etcd.
#[async_trait]
trait Registers: Send {
    async fn read(&mut self, key: &str) -> Result<Option<i64>, Unsettled>;
    async fn write(&mut self, key: &str, value: i64) -> Result<(), Unsettled>;
    /// Sets `key` to `new` if it holds `expected`; whether it did.
    async fn cas(&mut self, key: &str, expected: i64, new: i64) -> Result<bool, Unsettled>;
    /// The node that answered last.
    fn node(&self) -> String;
}

/// A worker's registers on this deployment, or why it has none.
fn registers(config: &ClientConfig) -> Result<Box<dyn Registers>, String> {
    if config.shape == Shape::Etcd {
        return Ok(Box::new(EtcdRegisters(EtcdConn::new(&config.nodes))));
    }
    Ok(Box::new(RedisRegisters {
        server: data_server(config, KIND.name)?,
        script: redis::Script::new(COMPARE_AND_SET),
    }))
}

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
            let process = Process::Client(FINAL_READER + index as u64);
            recorder.record(Op::new(process, OpType::Invoke, "read").key(&key));
            let started = tokio::time::Instant::now();
            let done = loop {
                match registers.read(&key).await {
                    Ok(value) => break Op::new(process, OpType::Ok, "read").value(value),
                    Err((_, e)) if started.elapsed() > FINAL_READ_PATIENCE => {
                        break Op::new(process, OpType::Fail, "read").error(e)
                    }
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(250)).await,
                }
            };
            recorder.record(done.key(&key));
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

/// Registers as Redis keys on the deployment's master: `GET`, `SET` and a compare-and-set
/// script.
struct RedisRegisters {
    server: Server,
    script: redis::Script,
}

#[async_trait]
impl Registers for RedisRegisters {
    async fn read(&mut self, key: &str) -> Result<Option<i64>, Unsettled> {
        let get = redis::cmd("GET").arg(key).clone();
        self.server
            .query(&get)
            .await
            .map_err(|e| (unsettled(&e), e.to_string()))
    }

    async fn write(&mut self, key: &str, value: i64) -> Result<(), Unsettled> {
        let set = redis::cmd("SET").arg(key).arg(value).clone();
        self.server
            .query(&set)
            .await
            .map_err(|e| (unsettled(&e), e.to_string()))
    }

    async fn cas(&mut self, key: &str, expected: i64, new: i64) -> Result<bool, Unsettled> {
        let (expected, new) = (expected.to_string(), new.to_string());
        self.server
            .eval::<i64>(&self.script, &[key], &[&expected, &new])
            .await
            .map(|done| done == 1)
            .map_err(|e| (unsettled(&e), e.to_string()))
    }

    fn node(&self) -> String {
        self.server.name().to_string()
    }
}

/// Registers as etcd keys: a linearizable range read, a put, and a transaction that puts only
/// if the value compares equal.
struct EtcdRegisters(EtcdConn);

fn settled(error: EtcdError) -> Unsettled {
    match error {
        EtcdError::Definite(e) => (OpType::Fail, e),
        EtcdError::Indeterminate(e) => (OpType::Info, e),
    }
}

#[async_trait]
impl Registers for EtcdRegisters {
    async fn read(&mut self, key: &str) -> Result<Option<i64>, Unsettled> {
        self.0.learn_members().await;
        let get = RangeRequest {
            key: key.as_bytes().to_vec(),
            ..RangeRequest::default()
        };
        let got = self
            .0
            .call(|mut c| async move { Ok(c.kv.range(get).await?.into_inner()) })
            .await
            .map_err(settled)?;
        self.0.answered(got.header.as_ref());
        match got.kvs.first() {
            None => Ok(None),
            Some(kv) => std::str::from_utf8(&kv.value)
                .ok()
                .and_then(|v| v.parse().ok())
                .map(Some)
                .ok_or_else(|| (OpType::Fail, "the register holds no integer".to_string())),
        }
    }

    async fn write(&mut self, key: &str, value: i64) -> Result<(), Unsettled> {
        self.0.learn_members().await;
        let put = PutRequest {
            key: key.as_bytes().to_vec(),
            value: value.to_string().into_bytes(),
            ..PutRequest::default()
        };
        let put = self
            .0
            .call(|mut c| async move { Ok(c.kv.put(put).await?.into_inner()) })
            .await
            .map_err(settled)?;
        self.0.answered(put.header.as_ref());
        Ok(())
    }

    async fn cas(&mut self, key: &str, expected: i64, new: i64) -> Result<bool, Unsettled> {
        self.0.learn_members().await;
        let put = PutRequest {
            key: key.as_bytes().to_vec(),
            value: new.to_string().into_bytes(),
            ..PutRequest::default()
        };
        let expected = TargetUnion::Value(expected.to_string().into_bytes());
        let txn = txn_if_equal(key, expected, Request::RequestPut(put));
        let done = self
            .0
            .call(|mut c| async move { Ok(c.kv.txn(txn).await?.into_inner()) })
            .await
            .map_err(settled)?;
        self.0.answered(done.header.as_ref());
        Ok(done.succeeded)
    }

    fn node(&self) -> String {
        self.0.last_member()
    }
}
