//! The watchdog (lease renewal) lock, Redisson's shape: the canonical single-instance lock,
//! plus a watchdog that extends the lease every TTL/3 (Redisson: a 30 s lease renewed every
//! 10 s) with a compare-and-pexpire script, for as long as the client holds the lock. A failed
//! renewal is recorded and, as in Redisson, changes nothing else: the client carries on.

use std::time::Duration;

use async_trait::async_trait;

use super::set_nx_px::SetNxPx;
use super::{ClientConfig, ClientKind, Fences, Grant, LockClient, Outcome};

pub(super) const KIND: ClientKind = ClientKind {
    name: "watchdog",
    summary: "set-nx-px plus a lease watchdog renewing every TTL/3 (Redisson's shape)",
    fences: Fences::Never,
    checks_lease: true,
    build,
};

/// Extends the key's lease only if it still holds our token.
const COMPARE_AND_PEXPIRE: &str = r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("pexpire", KEYS[1], ARGV[2])
else
    return 0
end
"#;

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    Ok(Box::new(Watchdog {
        lock: SetNxPx::on_one_node(config, "watchdog")?,
        renew: redis::Script::new(COMPARE_AND_PEXPIRE),
    }))
}

struct Watchdog {
    lock: SetNxPx,
    renew: redis::Script,
}

#[async_trait]
impl LockClient for Watchdog {
    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        self.lock.acquire(resource, ttl).await
    }

    async fn release(&mut self, resource: &str, grant: &Grant) -> Outcome<()> {
        self.lock.release(resource, grant).await
    }

    fn retry_delay(&mut self, failures: u32) -> Duration {
        self.lock.retry_delay(failures)
    }

    fn renewal_interval(&self, ttl: Duration) -> Option<Duration> {
        Some(ttl / 3)
    }

    async fn renew(&mut self, resource: &str, grant: &Grant, ttl: Duration) -> Outcome<()> {
        let ttl_ms = ttl.as_millis().to_string();
        match self
            .lock
            .node
            .eval::<i64>(&self.renew, &[resource], &[&grant.token, &ttl_ms])
            .await
        {
            Ok(1) => Outcome::Ok(()),
            Ok(_) => Outcome::Fail("the lock was no longer ours (expired or taken)".into()),
            Err(e) if e.is_indeterminate() => Outcome::Info(e.to_string()),
            Err(e) => Outcome::Fail(e.to_string()),
        }
    }
}
