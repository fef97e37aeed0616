//! The pre-2.6.12 anti-pattern: `SETNX key token`, then `EXPIRE key ttl` as a second command.
//! A client that dies between the two leaves a key with no expiry, and the lock is stuck for
//! good. The `client-crash` fault kills it exactly there.

use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::set_nx_px::SetNxPx;
use super::{
    held_by_another, new_token, spin_delay, ClientConfig, ClientKind, Fences, Grant, LockClient,
    NodeError, Outcome,
};

pub(super) const KIND: ClientKind = ClientKind {
    name: "setnx-expire",
    summary: "SETNX then EXPIRE as two commands; a crash between them leaves the lock forever",
    fences: Fences::Never,
    checks_lease: true,
    build,
};

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    Ok(Box::new(SetnxExpire {
        lock: SetNxPx::on_one_node(config, KIND.name)?,
    }))
}

/// Shares the canonical client's node and compare-and-delete release; only the acquire differs.
struct SetnxExpire {
    lock: SetNxPx,
}

#[async_trait]
impl LockClient for SetnxExpire {
    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        let token = new_token();
        let started = Instant::now();
        let setnx = redis::cmd("SETNX").arg(resource).arg(&token).clone();
        match self.lock.node.query::<i64>(&setnx).await {
            Ok(1) => {}
            Ok(_) => return Outcome::Fail(held_by_another()),
            Err(e @ NodeError::Indeterminate { .. }) => {
                return Outcome::Info(format!("{e} after {} ms", started.elapsed().as_millis()))
            }
            Err(e) => return Outcome::Fail(e.to_string()),
        }
        if self.lock.crash.crash_now() {
            return Outcome::Info("crashed: the client died between SETNX and EXPIRE".into());
        }
        let expire = redis::cmd("PEXPIRE")
            .arg(resource)
            .arg(ttl.as_millis() as u64)
            .clone();
        match self.lock.node.query::<i64>(&expire).await {
            Ok(1) => Outcome::Ok(Grant {
                token,
                validity: ttl,
                nodes: vec![self.lock.node.name().to_string()],
                fence: None,
            }),
            // The key vanished between the two commands (a restart): nothing is held.
            Ok(_) => Outcome::Fail("the key was gone before EXPIRE".into()),
            // The key exists without a lease; what the client does now decides whether it stays.
            Err(e) => Outcome::Info(format!("EXPIRE failed after SETNX: {e}")),
        }
    }

    async fn release(&mut self, resource: &str, grant: &Grant) -> Outcome<()> {
        self.lock.compare_and_delete(resource, grant).await
    }

    fn retry_delay(&mut self, _failures: u32) -> Duration {
        spin_delay()
    }
}
