//! The canonical lock followed by `WAIT numreplicas timeout`, as people try to make a
//! replicated lock safe. WAIT only reports how many replicas have the write; it cannot undo
//! it, and a failover can still lose it. When fewer replicas than asked acknowledge in time,
//! the client cannot judge its grant, and the history says so with an `info`.
//!
//! By default WAIT asks for every replica; `--wait-replicas N` asks for fewer, as
//! deployments do that would rather not stop taking locks when one replica is down.

use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::set_nx_px::{SetNxPx, OP_TIMEOUT};
use super::{
    spin_delay, ClientConfig, ClientKind, Fences, Grant, LockClient, Outcome, RedisDeployment,
};

pub(super) const KIND: ClientKind = ClientKind {
    name: "wait",
    summary: "set-nx-px, then WAIT for every replica, or --wait-replicas N (replicated \
              deployments only)",
    fences: Fences::Never,
    checks_lease: true,
    build,
};

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    let replicas = config
        .connection::<RedisDeployment>(KIND.name)?
        .replicas(config);
    if replicas == 0 {
        return Err(
            "wait asks WAIT for the master's replicas, and this deployment has none; \
             use --deployment sentinel or cluster, which have replicas"
                .into(),
        );
    }
    let asked = config.options.wait_replicas.unwrap_or(replicas);
    if asked > replicas {
        return Err(format!(
            "--wait-replicas {asked} asks for more replicas than the {replicas} the master has"
        ));
    }
    Ok(Box::new(Wait {
        lock: SetNxPx::on_one_node(config, KIND.name)?,
        replicas: asked,
        timeout: wait_timeout(config.ttl),
    }))
}

/// WAIT's own timeout: a tenth of the TTL, within the command timeout.
fn wait_timeout(ttl: Duration) -> Duration {
    (ttl / 10).clamp(Duration::from_millis(10), OP_TIMEOUT / 2)
}

struct Wait {
    lock: SetNxPx,
    replicas: usize,
    timeout: Duration,
}

#[async_trait]
impl LockClient for Wait {
    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        let started = Instant::now();
        let grant = match self.lock.acquire(resource, ttl).await {
            Outcome::Ok(grant) => grant,
            other => return other,
        };
        let wait = redis::cmd("WAIT")
            .arg(self.replicas)
            .arg(self.timeout.as_millis() as u64)
            .clone();
        match self.lock.node.query::<usize>(&wait).await {
            Ok(acked) if acked >= self.replicas => Outcome::Ok(grant),
            Ok(acked) => Outcome::Info(format!(
                "WAIT: {acked} of {} replicas had the lock after {} ms",
                self.replicas,
                started.elapsed().as_millis()
            )),
            Err(e) => Outcome::Info(format!("WAIT failed after the SET: {e}")),
        }
    }

    async fn release(&mut self, resource: &str, grant: &Grant) -> Outcome<()> {
        self.lock.compare_and_delete(resource, grant).await
    }

    fn retry_delay(&mut self, _failures: u32) -> Duration {
        spin_delay()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_without_replicas_is_refused() {
        let refused = build(&crate::redis::tests::config("single", 1))
            .err()
            .unwrap();
        assert!(refused.contains("has none"), "{refused}");
        let mut replicated = crate::redis::tests::config("sentinel", 3);
        assert!(build(&replicated).is_ok());
        replicated.options.wait_replicas = Some(3);
        let refused = build(&replicated).err().unwrap();
        assert!(refused.contains("than the 2"), "{refused}");
        replicated.options.wait_replicas = Some(1);
        assert!(build(&replicated).is_ok());
        assert_eq!(
            wait_timeout(Duration::from_secs(2)),
            Duration::from_millis(200)
        );
    }
}
