//! The canonical single-instance lock: `SET key token NX PX ttl`, released by a Lua
//! compare-and-delete so that a client never deletes a lock that is no longer its own.

use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{
    held_by_another, new_token, set_if_absent, spin_delay, ClientConfig, ClientKind, CrashPoint,
    Fences, Grant, LockClient, NodeError, Outcome, Server, COMPARE_AND_DELETE,
};

pub(super) const KIND: ClientKind = ClientKind {
    name: "set-nx-px",
    summary: "SET key token NX PX ttl on one node; compare-and-delete release",
    fences: Fences::Never,
    checks_lease: true,
    build,
};

/// How long one command may take before its outcome is unknown.
pub(super) const OP_TIMEOUT: Duration = Duration::from_secs(1);

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    Ok(Box::new(SetNxPx::on_one_node(config, "set-nx-px")?))
}

/// The canonical client; the watchdog client is this one plus lease renewal.
pub(super) struct SetNxPx {
    pub(super) node: Server,
    pub(super) crash: CrashPoint,
    release: redis::Script,
}

impl SetNxPx {
    /// A client of the deployment's one node, or of its master as Sentinel names it, or why
    /// the deployment does not fit `name`.
    pub(super) fn on_one_node(config: &ClientConfig, name: &str) -> Result<SetNxPx, String> {
        let node = Server::of(config, name, OP_TIMEOUT)?;
        Ok(SetNxPx {
            node,
            crash: config.crash.clone(),
            release: redis::Script::new(COMPARE_AND_DELETE),
        })
    }
}

#[async_trait]
impl LockClient for SetNxPx {
    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        let token = new_token();
        let started = Instant::now();
        let set = set_if_absent(resource, &token, ttl);
        match self.node.query::<Option<String>>(&set).await {
            Ok(Some(_)) if self.crash.crash_now() => {
                Outcome::Info("crashed: the client died holding the lock".into())
            }
            Ok(Some(_)) => Outcome::Ok(Grant {
                token,
                // The key's lease began after `started`, so `ttl` from then is a safe bound.
                validity: ttl,
                nodes: vec![self.node.name().to_string()],
                fence: None,
            }),
            Ok(None) => Outcome::Fail(held_by_another()),
            Err(e @ NodeError::Indeterminate { .. }) => {
                Outcome::Info(format!("{e} after {} ms", started.elapsed().as_millis()))
            }
            Err(e) => Outcome::Fail(e.to_string()),
        }
    }

    async fn release(&mut self, resource: &str, grant: &Grant) -> Outcome<()> {
        self.compare_and_delete(resource, grant).await
    }

    fn retry_delay(&mut self, _failures: u32) -> Duration {
        spin_delay()
    }
}

impl SetNxPx {
    /// The canonical release: delete the key only if it still holds our token.
    pub(super) async fn compare_and_delete(
        &mut self,
        resource: &str,
        grant: &Grant,
    ) -> Outcome<()> {
        match self
            .node
            .eval::<i64>(&self.release, &[resource], &[&grant.token])
            .await
        {
            Ok(1) => Outcome::Ok(()),
            Ok(_) => Outcome::Fail("the lock was no longer ours (expired or taken)".into()),
            Err(e) if e.is_indeterminate() => Outcome::Info(e.to_string()),
            Err(e) => Outcome::Fail(e.to_string()),
        }
    }
}
