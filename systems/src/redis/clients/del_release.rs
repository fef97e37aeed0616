//! The hijacking bug: the canonical `SET key token NX PX ttl`, released by a plain `DEL`. A
//! holder that overran its lease deletes whatever key is there, which by then may be the next
//! holder's lock, and a third client walks in beside the second.

use std::time::Duration;

use async_trait::async_trait;

use super::set_nx_px::SetNxPx;
use super::{spin_delay, ClientConfig, ClientKind, Fences, Grant, LockClient, Outcome};

pub(super) const KIND: ClientKind = ClientKind {
    name: "del-release",
    summary: "SET NX PX, released by a plain DEL that may delete another client's lock",
    fences: Fences::Never,
    checks_lease: true,
    build,
};

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    Ok(Box::new(DelRelease {
        lock: SetNxPx::on_one_node(config, KIND.name)?,
    }))
}

struct DelRelease {
    lock: SetNxPx,
}

#[async_trait]
impl LockClient for DelRelease {
    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        self.lock.acquire(resource, ttl).await
    }

    async fn release(&mut self, resource: &str, _grant: &Grant) -> Outcome<()> {
        match self
            .lock
            .node
            .query::<i64>(redis::cmd("DEL").arg(resource))
            .await
        {
            // Whoever's key it was, it is gone: the client believes it released its own.
            Ok(_) => Outcome::Ok(()),
            Err(e) if e.is_indeterminate() => Outcome::Info(e.to_string()),
            Err(e) => Outcome::Fail(e.to_string()),
        }
    }

    fn retry_delay(&mut self, _failures: u32) -> Duration {
        spin_delay()
    }
}
