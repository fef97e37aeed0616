//! The `lock` workload: each client process loops acquire, hold, release.
//!
//! Every acquire and release is an invoke and a completion in the history. An `info` ends the
//! process: the worker goes on under a new process id (the old id plus the concurrency), as
//! in Jepsen, since the old process may still be holding or releasing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use splitbrain_checker::{Op, OpType, Process};
use tokio_util::sync::CancellationToken;

use crate::clients::{ClientConfig, ClientKind, Outcome};
use crate::{ClientPauses, Recorder};

/// How the `lock` workload runs.
#[derive(Debug, Clone)]
pub struct LockWorkload {
    /// Client processes running at once.
    pub concurrency: usize,
    /// The lease each acquire asks for.
    pub ttl: Duration,
    /// How long to hold a granted lock; `None`: a random time that ends before 90% of the
    /// validity has passed.
    pub hold: Option<Duration>,
    /// Number of lock keys; worker `w` uses key `w % resources`.
    pub resources: usize,
}

impl LockWorkload {
    /// The lock key worker `w` contends for.
    pub fn resource(&self, worker: usize) -> String {
        if self.resources <= 1 {
            "lock".to_string()
        } else {
            format!("lock-{}", worker % self.resources)
        }
    }

    /// Runs every worker until `stop` is cancelled; each finishes its current operation (and
    /// releases a held lock) before returning. Worker `w` belongs to client group
    /// `w % groups.len()` and reaches the nodes as that group's config says.
    pub async fn run(
        &self,
        kind: &ClientKind,
        groups: &[ClientConfig],
        recorder: Arc<Recorder>,
        pauses: ClientPauses,
        stop: CancellationToken,
    ) -> Result<(), String> {
        let mut workers = tokio::task::JoinSet::new();
        for worker in 0..self.concurrency {
            let client = (kind.build)(&groups[worker % groups.len()])?;
            let this = self.clone();
            let recorder = recorder.clone();
            let stop = stop.clone();
            let pauses = pauses.clone();
            workers
                .spawn(async move { this.worker(worker, client, &recorder, &pauses, stop).await });
        }
        while let Some(joined) = workers.join_next().await {
            joined.map_err(|e| format!("a client worker crashed: {e}"))?;
        }
        Ok(())
    }

    async fn worker(
        &self,
        worker: usize,
        mut client: Box<dyn crate::LockClient>,
        recorder: &Recorder,
        pauses: &ClientPauses,
        stop: CancellationToken,
    ) {
        let resource = self.resource(worker);
        let mut process = worker as u64;
        let mut failures = 0u32;
        let ttl_ms = self.ttl.as_millis() as u64;
        while !stop.is_cancelled() {
            let mut invoke =
                Op::new(Process::Client(process), OpType::Invoke, "acquire").key(&resource);
            invoke.ttl_ms = Some(ttl_ms);
            recorder.record(invoke);
            let started = Instant::now();
            let grant = match client.acquire(&resource, self.ttl).await {
                Outcome::Ok(grant) => grant,
                Outcome::Fail(error) => {
                    recorder.record(
                        Op::new(Process::Client(process), OpType::Fail, "acquire")
                            .key(&resource)
                            .error(error),
                    );
                    let delay = client.retry_delay(failures);
                    failures = failures.saturating_add(1);
                    sleep_unless_stopped(delay, &stop).await;
                    continue;
                }
                Outcome::Info(error) => {
                    recorder.record(
                        Op::new(Process::Client(process), OpType::Info, "acquire")
                            .key(&resource)
                            .error(error),
                    );
                    process += self.concurrency as u64;
                    continue;
                }
            };
            failures = 0;
            let mut ok = Op::new(Process::Client(process), OpType::Ok, "acquire")
                .key(&resource)
                .token(&grant.token)
                .nodes(grant.nodes.clone());
            ok.validity_ms = Some(grant.validity.as_millis() as u64);
            recorder.record(ok);

            // Release with a tenth of the validity to spare: a client that releases at the
            // last instant races its own lease, and that race is the harness's, not the lock's.
            // A client with a lease watchdog renews as it goes, and may hold for up to two TTLs.
            let renew_every = client.renewal_interval(self.ttl);
            let budget = match renew_every {
                Some(_) => self.ttl * 2,
                None => grant.validity.mul_f64(0.9),
            };
            let left = budget.saturating_sub(started.elapsed());
            let hold = match self.hold {
                Some(hold) => hold.min(left),
                None if left.is_zero() => left,
                None => left.mul_f64(rand::rng().random_range(0.0..1.0)),
            };
            // A client-pause fault freezes the client here; afterwards it holds for the time
            // it planned, as if no time had passed.
            pauses.checkpoint(worker).await;
            match renew_every {
                None => sleep_unless_stopped(hold, &stop).await,
                Some(every) => {
                    let watchdog = Watchdog {
                        worker,
                        process,
                        resource: &resource,
                        every,
                        ttl: self.ttl,
                    };
                    watchdog
                        .hold(hold, client.as_mut(), &grant, recorder, pauses, &stop)
                        .await
                }
            }

            recorder.record(
                Op::new(Process::Client(process), OpType::Invoke, "release")
                    .key(&resource)
                    .token(&grant.token),
            );
            let (kind, error) = match client.release(&resource, &grant).await {
                Outcome::Ok(()) => (OpType::Ok, None),
                Outcome::Fail(e) => (OpType::Fail, Some(e)),
                Outcome::Info(e) => (OpType::Info, Some(e)),
            };
            let mut done = Op::new(Process::Client(process), kind, "release")
                .key(&resource)
                .token(&grant.token);
            done.error = error;
            recorder.record(done);
            if kind == OpType::Info {
                process += self.concurrency as u64;
            }
        }
    }
}

/// A held lock's lease watchdog, run by the worker that holds the lock: so a paused client's
/// watchdog pauses with it, as a GC pause stops every thread of a process.
struct Watchdog<'a> {
    worker: usize,
    process: u64,
    resource: &'a str,
    every: Duration,
    ttl: Duration,
}

impl Watchdog<'_> {
    /// Holds the lock for `hold`, renewing its lease every `every` and recording each renewal.
    async fn hold(
        &self,
        hold: Duration,
        client: &mut dyn crate::LockClient,
        grant: &crate::Grant,
        recorder: &Recorder,
        pauses: &ClientPauses,
        stop: &CancellationToken,
    ) {
        let mut until = Instant::now() + hold;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() || stop.is_cancelled() {
                return;
            }
            sleep_unless_stopped(self.every.min(left), stop).await;
            if Instant::now() >= until || stop.is_cancelled() {
                return;
            }
            // Frozen here, the client carries on afterwards as if no time had passed.
            until += pauses.checkpoint(self.worker).await;
            let op = |kind| {
                Op::new(Process::Client(self.process), kind, "renew")
                    .key(self.resource)
                    .token(&grant.token)
            };
            let mut invoke = op(OpType::Invoke);
            invoke.ttl_ms = Some(self.ttl.as_millis() as u64);
            recorder.record(invoke);
            let (kind, error) = match client.renew(self.resource, grant, self.ttl).await {
                Outcome::Ok(()) => (OpType::Ok, None),
                Outcome::Fail(e) => (OpType::Fail, Some(e)),
                Outcome::Info(e) => (OpType::Info, Some(e)),
            };
            let mut done = op(kind);
            done.error = error;
            recorder.record(done);
        }
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
            concurrency: 4,
            ttl: Duration::from_secs(2),
            hold: None,
            resources: 1,
        };
        assert_eq!(w.resource(3), "lock");
        w.resources = 2;
        assert_eq!(w.resource(3), "lock-1");
    }
}
