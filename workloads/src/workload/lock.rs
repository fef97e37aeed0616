//! The `lock` and `lock-set` workloads: each client process loops acquire, hold, release.
//!
//! Every acquire and release is an invoke and a completion in the history. An `info` acquire
//! or release ends the process: the worker goes on under a new process id (the old id plus the
//! concurrency), as in Jepsen, since the old process may still be holding or releasing.
//!
//! In `lock-set` (Jepsen's name) the critical section is a read-modify-write of one document
//! in the storage: read it, hold, append a unique id, write it back. Only real mutual
//! exclusion (or fencing) keeps every acknowledged append; after the run, a final read shows
//! which survived. A storage op that times out is an `info` that leaves the process as it
//! was: the lock client is not in doubt, only that one write.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rand::Rng;
use splitbrain_checker::{Op, OpType, Process, Renewal};
use tokio_util::sync::CancellationToken;

use crate::clients::{ClientConfig, ClientKind, Grant, LockClient, Outcome};
use crate::storage::{Storage, StorageConfig, DOCUMENT};
use crate::{ClientCrashes, ClientPauses, Recorder};

use super::Workload;

/// The process that makes the final read, well clear of the workers' ids.
const FINAL_READER: u64 = 1_000_000_000;

/// How often a holder that asks its client whether it still holds ([`LockClient::asks_held`])
/// asks: this many times a TTL, and no more often than every [`MIN_ASK_STEP`].
const ASKS_PER_TTL: u32 = 10;
const MIN_ASK_STEP: Duration = Duration::from_millis(50);

/// How the `lock` workload runs.
#[derive(Clone)]
pub struct LockWorkload {
    /// The lock algorithm every worker runs.
    pub client: &'static ClientKind,
    /// Client processes running at once.
    pub concurrency: usize,
    /// The lease each acquire asks for.
    pub ttl: Duration,
    /// How long to hold a granted lock; `None`: a random time that ends before 90% of the
    /// validity has passed.
    pub hold: Option<Duration>,
    /// Number of lock keys; worker `w` uses key `w % resources`.
    pub resources: usize,
    /// A Redis Cluster hash tag every lock key starts with, pinning them all to one slot.
    pub hash_tag: Option<String>,
    /// `lock-set`: the storage each critical section reads and writes.
    pub storage: Option<StorageConfig>,
    /// Whether a holder of the harness's own clients acts only within the validity it has
    /// confirmed ([`ClientKind::checks_lease`]); `false` (`--no-lease-check`): it acts to
    /// the end of its hold whatever its renewals said, as code that never looks does.
    pub lease_check: bool,
}

/// What the client workers share: where they record, and the switches faults flip.
#[derive(Clone)]
pub struct Shared {
    pub recorder: Arc<Recorder>,
    pub pauses: ClientPauses,
    pub crashes: ClientCrashes,
}

impl LockWorkload {
    /// The lock key worker `w` contends for.
    pub fn resource(&self, worker: usize) -> String {
        let tag = match &self.hash_tag {
            Some(tag) => format!("{{{tag}}}"),
            None => String::new(),
        };
        if self.resources <= 1 {
            format!("{tag}lock")
        } else {
            format!("{tag}lock-{}", worker % self.resources)
        }
    }

    /// Whether the storage checks fencing tokens.
    fn fencing(&self) -> bool {
        self.storage.is_some_and(|storage| storage.fencing)
    }
}

#[async_trait]
impl Workload for LockWorkload {
    /// The first worker's lock key.
    fn key(&self) -> String {
        self.resource(0)
    }

    /// Prepares the storage (for `lock-set`): an empty document, no token seen.
    async fn prepare(&self) -> Result<(), WorkloadError> {
        if let Some(config) = self.storage {
            let storage = Storage::connect(config)
                .await
                .map_err(WorkloadError::Storage)?;
            storage
                .create_document()
                .await
                .map_err(WorkloadError::Storage)?;
        }
        Ok(())
    }

    /// Runs every worker until `stop` is cancelled; each finishes its current operation (and
    /// releases a held lock) before returning. Worker `w` belongs to client group
    /// `w % groups.len()` and reaches the nodes as that group's config says. A broken client
    /// stops every worker.
    async fn run(
        &self,
        groups: &[ClientConfig],
        shared: &Shared,
        stop: CancellationToken,
    ) -> Result<(), WorkloadError> {
        let next_id = Arc::new(AtomicU64::new(1));
        let mut workers = tokio::task::JoinSet::new();
        for worker in 0..self.concurrency {
            let config = ClientConfig {
                crash: shared.crashes.point(worker),
                ..groups[worker % groups.len()].clone()
            };
            let client = (self.client.build)(&config).map_err(WorkloadError::Client)?;
            let storage = match self.storage {
                Some(config) => Some(
                    Storage::connect(config)
                        .await
                        .map_err(WorkloadError::Storage)?,
                ),
                None => None,
            };
            let worker = Worker {
                workload: self.clone(),
                worker,
                shared: shared.clone(),
                storage,
                next_id: next_id.clone(),
                stop: stop.clone(),
            };
            workers.spawn(async move { worker.run(client).await });
        }
        let mut first_error = None;
        while let Some(joined) = workers.join_next().await {
            let result = joined
                .map_err(|e| WorkloadError::Crashed(e.to_string()))
                .and_then(|r| r);
            if let Err(e) = result {
                stop.cancel();
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The final read of the storage's document, after the clients stopped and the faults
    /// healed; a no-op for the `lock` workload.
    async fn final_read(
        &self,
        _groups: &[ClientConfig],
        recorder: &Recorder,
    ) -> Result<(), WorkloadError> {
        let Some(config) = self.storage else {
            return Ok(());
        };
        let storage = Storage::connect(StorageConfig {
            fencing: false,
            ..config
        })
        .await
        .map_err(WorkloadError::Storage)?;
        let process = Process::Client(FINAL_READER);
        recorder.record(Op::new(process, OpType::Invoke, "read").key(DOCUMENT));
        let done = match storage.read(None).await {
            Outcome::Ok(doc) => Op::new(process, OpType::Ok, "read").value(doc),
            Outcome::Fail(e) => Op::new(process, OpType::Fail, "read").error(e),
            Outcome::Info(e) => Op::new(process, OpType::Info, "read").error(e),
        };
        recorder.record(done.key(DOCUMENT));
        Ok(())
    }
}

/// Why the workload stopped before its time.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkloadError {
    /// The client could not be made for this deployment.
    #[error("{0}")]
    Client(String),
    /// The client under test broke (an external program that left the protocol).
    #[error("{0}")]
    Broken(String),
    #[error("{0}")]
    Storage(String),
    #[error("a client worker crashed: {0}")]
    Crashed(String),
}

/// How one acquire attempt ended, once recorded.
enum Attempt {
    Granted(Grant),
    Refused,
    /// The process may hold the lock or not; it retires.
    Unknown,
}

/// One client worker: its lock client, its storage connection, and where it records.
struct Worker {
    workload: LockWorkload,
    worker: usize,
    shared: Shared,
    storage: Option<Storage>,
    next_id: Arc<AtomicU64>,
    stop: CancellationToken,
}

impl Worker {
    async fn run(&self, mut client: Box<dyn LockClient>) -> Result<(), WorkloadError> {
        let (worker, stop) = (self.worker, &self.stop);
        let resource = self.workload.resource(worker);
        let concurrency = self.workload.concurrency as u64;
        let ttl = self.workload.ttl;
        let mut process = worker as u64;
        let mut failures = 0u32;
        while !stop.is_cancelled() {
            if client.prepare().await.is_err() {
                return Err(WorkloadError::Broken(client.broken().unwrap_or_default()));
            }
            let started = Instant::now();
            let acquired = self.acquire(client.as_mut(), process, &resource).await;
            if let Some(broken) = client.broken() {
                return Err(WorkloadError::Broken(broken));
            }
            let grant = match acquired {
                Attempt::Granted(grant) => grant,
                Attempt::Refused => {
                    let delay = client.retry_delay(failures);
                    failures = failures.saturating_add(1);
                    sleep_unless_stopped(delay, stop).await;
                    continue;
                }
                Attempt::Unknown => {
                    process += concurrency;
                    continue;
                }
            };
            failures = 0;

            // Release with a tenth of the validity to spare: a client that releases at the
            // last instant races its own lease, and that race is the harness's, not the lock's.
            // A client with a lease watchdog renews as it goes: it holds for `--hold` however
            // long, or else for up to two TTLs; so does a client that renews by itself. A key
            // with no expiry needs no renewal, and its holder counts on the lease it was told.
            let renew_every = client.renewal_interval(ttl);
            // A validity runs from the acquire's start, however long the acquire waited; a
            // renewed lock's hold runs from its grant.
            let (budget, counted_from) = match (renew_every, client.renewal()) {
                (None, None | Some(Renewal::Unexpiring)) => (grant.validity.mul_f64(0.9), started),
                _ => (self.workload.hold.unwrap_or(ttl * 2), Instant::now()),
            };
            // A lock in a transaction on the storage is used through that transaction; a
            // workload with no storage (`lock`) reads and writes nothing in it.
            let in_transaction = self
                .storage
                .as_ref()
                .and_then(|_| client.storage_in_lock(self.workload.fencing()));
            let storage = in_transaction.as_ref().or(self.storage.as_ref());
            let read = self.read(storage, process, &grant).await;
            let left = budget.saturating_sub(counted_from.elapsed());
            let hold = match self.workload.hold {
                Some(hold) => hold.min(left),
                None if left.is_zero() => left,
                None => left.mul_f64(rand::rng().random_range(0.0..1.0)),
            };
            // The end of the validity the holder has confirmed, where the harness keeps it to
            // one: a careful holder acts only before it.
            let careful = self.workload.lease_check && self.workload.client.checks_lease;
            let mut confirmed = careful.then(|| started + grant.validity.mul_f64(0.9));
            // A client-pause fault freezes the client in its critical section; afterwards it
            // goes on as if no time had passed. A library that may notice the pause (its
            // `is_acquired`, its renewal thread) is frozen before the hold; a careful holder
            // of the harness's own, between its last look at its lease and its write, where
            // no check can save it (Kleppmann's zombie).
            if !careful {
                self.pause_point(client.as_mut()).await;
            }
            let still_held = match renew_every {
                None if client.renewal() == Some(Renewal::Reported) => {
                    self.hold_recording_renewals(hold, client.as_mut(), process, &grant)
                        .await;
                    true
                }
                None if client.asks_held() => {
                    self.hold_asking(hold, client.as_mut(), process, &resource, &grant)
                        .await
                }
                None => {
                    sleep_unless_stopped(hold, stop).await;
                    true
                }
                Some(every) => {
                    let watchdog = Watchdog {
                        process,
                        resource: &resource,
                        every,
                        ttl,
                    };
                    let recorder = &self.shared.recorder;
                    watchdog
                        .hold(
                            hold,
                            client.as_mut(),
                            &grant,
                            recorder,
                            &mut confirmed,
                            stop,
                        )
                        .await
                }
            };
            let lease_left = confirmed.is_none_or(|until| Instant::now() < until);
            if careful {
                self.pause_point(client.as_mut()).await;
            }
            // A holder its library told that the lock is no longer its own writes nothing; a
            // careful one whose confirmed validity ran out says so instead of writing.
            if let (Some(storage), Some(doc), true) = (storage, read, still_held) {
                if lease_left {
                    self.append(storage, process, &grant, doc).await;
                } else {
                    self.skip_write(process);
                }
            }

            let released = self
                .release(client.as_mut(), process, &resource, &grant)
                .await;
            if let Some(broken) = client.broken() {
                return Err(WorkloadError::Broken(broken));
            }
            if released == OpType::Info {
                process += concurrency;
            }
        }
        Ok(())
    }

    /// A client pause's freeze point inside the critical section: an armed worker freezes
    /// here, and with it whatever runs the client outside the harness (an external program's
    /// renewal thread), as a GC pause stops every thread of a process.
    async fn pause_point(&self, client: &mut dyn LockClient) {
        let pauses = &self.shared.pauses;
        if !pauses.is_armed(self.worker) {
            return;
        }
        client.suspend(true);
        pauses.checkpoint(self.worker).await;
        client.suspend(false);
    }

    /// Holds a lock for `hold` while the client renews it by itself, recording each renewal
    /// it reports for this grant as a `renew` op: invoked when the library says it begins
    /// (or, where it says only how a renewal ended, when that report arrives), completed when
    /// the report of its end arrives.
    async fn hold_recording_renewals(
        &self,
        hold: Duration,
        client: &mut dyn LockClient,
        process: u64,
        grant: &Grant,
    ) {
        let until = tokio::time::Instant::now() + hold;
        // A renewal the library said it began, whose end is still to come.
        let mut begun = false;
        loop {
            let report = tokio::select! {
                () = tokio::time::sleep_until(until) => return,
                () = self.stop.cancelled() => return,
                report = client.next_renewal() => report,
            };
            let Some(report) = report else {
                // The client reports nothing more: hold out the rest.
                sleep_unless_stopped(until - tokio::time::Instant::now(), &self.stop).await;
                return;
            };
            if report.token != grant.token {
                tracing::debug!("a renewal report of an earlier grant, ignored: {report:?}");
                continue;
            }
            let op = |kind| {
                Op::new(Process::Client(process), kind, "renew")
                    .key(&report.resource)
                    .token(&grant.token)
            };
            if !begun {
                let mut invoke = op(OpType::Invoke);
                invoke.ttl_ms = Some(report.ttl.unwrap_or(self.workload.ttl).as_millis() as u64);
                self.shared.recorder.record(invoke);
            }
            let Some(outcome) = report.outcome else {
                begun = true;
                continue;
            };
            begun = false;
            let (kind, error) = completion(outcome);
            let mut done = op(kind);
            done.error = error;
            self.shared.recorder.record(done);
        }
    }

    /// Holds a lock for `hold` in steps, asking the client before each whether it still holds
    /// the lock (a `held` op, its answer the completion's `value`), as a holder that checks
    /// its library's `is_acquired` between steps of its work; the last question comes at the
    /// end of the hold, just before the write. Returns whether the last answer was yes: an
    /// answer of no, or none, ends the hold there.
    async fn hold_asking(
        &self,
        hold: Duration,
        client: &mut dyn LockClient,
        process: u64,
        resource: &str,
        grant: &Grant,
    ) -> bool {
        let step = (self.workload.ttl / ASKS_PER_TTL).max(MIN_ASK_STEP);
        let until = Instant::now() + hold;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            sleep_unless_stopped(step.min(left), &self.stop).await;
            let op = |kind| {
                Op::new(Process::Client(process), kind, "held")
                    .key(resource)
                    .token(&grant.token)
            };
            self.shared.recorder.record(op(OpType::Invoke));
            let held = match client.held(resource, grant).await {
                Outcome::Ok(held) => {
                    self.shared.recorder.record(op(OpType::Ok).value(held));
                    held
                }
                Outcome::Fail(e) => {
                    self.shared.recorder.record(op(OpType::Fail).error(e));
                    false
                }
                Outcome::Info(e) => {
                    self.shared.recorder.record(op(OpType::Info).error(e));
                    false
                }
            };
            if !held || Instant::now() >= until || self.stop.is_cancelled() {
                return held;
            }
        }
    }

    /// One recorded acquire attempt.
    async fn acquire(&self, client: &mut dyn LockClient, process: u64, resource: &str) -> Attempt {
        let recorder = &self.shared.recorder;
        let op = |kind| Op::new(Process::Client(process), kind, "acquire").key(resource);
        let mut invoke = op(OpType::Invoke);
        invoke.ttl_ms = Some(self.workload.ttl.as_millis() as u64);
        recorder.record(invoke);
        match client.acquire(resource, self.workload.ttl).await {
            Outcome::Ok(grant) => {
                let mut ok = op(OpType::Ok)
                    .token(&grant.token)
                    .fence(grant.fence)
                    .nodes(grant.nodes.clone());
                ok.validity_ms = Some(grant.validity.as_millis() as u64);
                ok.renewal = client.renewal();
                // The write that ends the critical section releases a lock kept in the storage.
                ok.ends_with_write =
                    self.storage.is_some() && client.storage_in_lock(false).is_some();
                recorder.record(ok);
                Attempt::Granted(grant)
            }
            Outcome::Fail(error) => {
                recorder.record(op(OpType::Fail).error(error));
                Attempt::Refused
            }
            Outcome::Info(error) => {
                let mut info = op(OpType::Info).error(error);
                if self.shared.crashes.took_crash(self.worker) {
                    // A client that died holding the lock, which a connection may have kept.
                    info.died_holding = true;
                    info.renewal = client.renewal();
                }
                recorder.record(info);
                Attempt::Unknown
            }
        }
    }

    /// One recorded release; returns how it completed.
    async fn release(
        &self,
        client: &mut dyn LockClient,
        process: u64,
        resource: &str,
        grant: &Grant,
    ) -> OpType {
        let recorder = &self.shared.recorder;
        let op = |kind| {
            Op::new(Process::Client(process), kind, "release")
                .key(resource)
                .token(&grant.token)
        };
        recorder.record(op(OpType::Invoke));
        let (kind, error) = completion(client.release(resource, grant).await);
        let mut done = op(kind);
        done.error = error;
        recorder.record(done);
        kind
    }

    /// `lock-set`: reads the document under the grant; `None` when there is no storage or
    /// the read did not succeed (then nothing is written).
    async fn read(
        &self,
        storage: Option<&Storage>,
        process: u64,
        grant: &Grant,
    ) -> Option<Vec<i64>> {
        let storage = storage?;
        let op = |kind| {
            Op::new(Process::Client(process), kind, "read")
                .key(DOCUMENT)
                .fence(grant.fence)
        };
        self.shared.recorder.record(op(OpType::Invoke));
        match storage.read(grant.fence).await {
            Outcome::Ok(doc) => {
                self.shared
                    .recorder
                    .record(op(OpType::Ok).value(doc.clone()));
                Some(doc)
            }
            Outcome::Fail(e) => {
                self.shared.recorder.record(op(OpType::Fail).error(e));
                None
            }
            Outcome::Info(e) => {
                self.shared.recorder.record(op(OpType::Info).error(e));
                None
            }
        }
    }

    /// `lock-set`: appends a fresh id to the document read earlier and writes it back.
    async fn append(&self, storage: &Storage, process: u64, grant: &Grant, mut doc: Vec<i64>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) as i64;
        let op = |kind| {
            Op::new(Process::Client(process), kind, "add")
                .key(DOCUMENT)
                .value(id)
                .fence(grant.fence)
        };
        self.shared.recorder.record(op(OpType::Invoke));
        doc.push(id);
        let (kind, error) = completion(storage.write(&doc, grant.fence).await);
        let mut done = op(kind);
        done.error = error;
        self.shared.recorder.record(done);
    }

    /// `lock-set`: records the write a careful holder did not make, the validity it had
    /// confirmed run out: an `add` that failed without reaching the storage (with no fence,
    /// as no storage refused it).
    fn skip_write(&self, process: u64) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) as i64;
        let op = |kind| {
            Op::new(Process::Client(process), kind, "add")
                .key(DOCUMENT)
                .value(id)
        };
        self.shared.recorder.record(op(OpType::Invoke));
        self.shared.recorder.record(op(OpType::Fail).error(
            "not written: the validity the holder had confirmed (its grant's, or its last \
             renewal's, less a tenth) ran out before the write",
        ));
    }
}

/// A held lock's lease watchdog, run by the worker that holds the lock: so a paused client's
/// watchdog pauses with it, as a GC pause stops every thread of a process.
struct Watchdog<'a> {
    process: u64,
    resource: &'a str,
    every: Duration,
    ttl: Duration,
}

impl Watchdog<'_> {
    /// Holds the lock for `hold`, renewing its lease every `every` and recording each renewal.
    /// A careful holder (`confirmed` is `Some`) moves its confirmed validity to a tenth short
    /// of each `ok` renewal's lease, as etcd's clientv3 session and Redisson's watchdog do,
    /// and stops holding when it runs out, or at once when a renewal is refused (the lock is
    /// no longer its own). Returns whether it still holds the lock as far as it knows.
    async fn hold(
        &self,
        hold: Duration,
        client: &mut dyn LockClient,
        grant: &Grant,
        recorder: &Recorder,
        confirmed: &mut Option<Instant>,
        stop: &CancellationToken,
    ) -> bool {
        let until = Instant::now() + hold;
        loop {
            let end = confirmed.map_or(until, |confirmed| until.min(confirmed));
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() || stop.is_cancelled() {
                return true;
            }
            sleep_unless_stopped(self.every.min(left), stop).await;
            if Instant::now() >= end || stop.is_cancelled() {
                return true;
            }
            let op = |kind| {
                Op::new(Process::Client(self.process), kind, "renew")
                    .key(self.resource)
                    .token(&grant.token)
            };
            let mut invoke = op(OpType::Invoke);
            invoke.ttl_ms = Some(self.ttl.as_millis() as u64);
            recorder.record(invoke);
            let asked = Instant::now();
            let renewal = client.renew(self.resource, grant, self.ttl);
            // A careful holder waits for an answer only while its validity lasts: a renewal
            // still out when it runs out ends the hold there, in doubt.
            let outcome = match *confirmed {
                Some(until) => tokio::time::timeout_at(until.into(), renewal)
                    .await
                    .unwrap_or_else(|_| {
                        Outcome::Info(
                            "no answer before the validity the holder had confirmed ran out".into(),
                        )
                    }),
                None => renewal.await,
            };
            let (kind, error) = completion(outcome);
            let mut done = op(kind);
            done.error = error;
            recorder.record(done);
            match (kind, confirmed.as_mut()) {
                (OpType::Ok, Some(confirmed)) => {
                    *confirmed = (*confirmed).max(asked + self.ttl.mul_f64(0.9));
                }
                (OpType::Fail, Some(_)) => return false,
                _ => {}
            }
        }
    }
}

/// How an op that returns nothing completed, and its error.
fn completion(outcome: Outcome<()>) -> (OpType, Option<String>) {
    match outcome {
        Outcome::Ok(()) => (OpType::Ok, None),
        Outcome::Fail(e) => (OpType::Fail, Some(e)),
        Outcome::Info(e) => (OpType::Info, Some(e)),
    }
}

async fn sleep_unless_stopped(duration: Duration, stop: &CancellationToken) {
    // A zero sleep still waits for the timer wheel's next millisecond tick.
    if duration.is_zero() {
        return;
    }
    tokio::select! {
        () = tokio::time::sleep(duration) => {}
        () = stop.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_share_one_key_unless_asked_for_more() {
        let mut w = LockWorkload {
            client: &crate::EXEC,
            concurrency: 4,
            ttl: Duration::from_secs(2),
            hold: None,
            resources: 1,
            hash_tag: None,
            storage: None,
            lease_check: true,
        };
        assert_eq!(w.resource(3), "lock");
        w.resources = 2;
        assert_eq!(w.resource(3), "lock-1");
        w.hash_tag = Some("app".into());
        assert_eq!(w.resource(3), "{app}lock-1");
    }
}
