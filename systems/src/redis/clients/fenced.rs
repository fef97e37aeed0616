//! The canonical lock plus a fencing token, the article's fix: the grant and an INCR of a
//! per-resource counter happen in one Lua script, so every grant carries a number larger than
//! every grant before it, for the storage to check. The counter lives in the same Redis as the
//! lock, so it is exactly as durable as the lock is.

use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::set_nx_px::SetNxPx;
use super::{
    held_by_another, new_token, spin_delay, ClientConfig, ClientKind, Fences, Grant, LockClient,
    NodeError, Outcome,
};

pub(super) const KIND: ClientKind = ClientKind {
    name: "fenced",
    summary: "set-nx-px plus a fencing token (INCR in the same Lua script as the SET)",
    fences: Fences::Always,
    checks_lease: true,
    build,
};

/// Takes the lock and, only if it did, issues the next fencing token.
const SET_AND_FENCE: &str = r#"
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
    return redis.call("incr", KEYS[2])
else
    return false
end
"#;

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    Ok(Box::new(Fenced {
        lock: SetNxPx::on_one_node(config, KIND.name)?,
        acquire: redis::Script::new(SET_AND_FENCE),
    }))
}

struct Fenced {
    lock: SetNxPx,
    acquire: redis::Script,
}

/// The fencing counter of a lock key, in the key's Redis Cluster slot so that one script
/// may touch both: a key with a hash tag keeps it, and one without becomes the counter's tag
/// (a key without a tag hashes as a whole, as its tag would).
fn counter(resource: &str) -> String {
    let tagged = resource
        .find('{')
        .and_then(|open| resource[open + 1..].find('}'))
        .is_some_and(|length| length > 0);
    if tagged {
        format!("{resource}:fence")
    } else {
        format!("{{{resource}}}:fence")
    }
}

#[async_trait]
impl LockClient for Fenced {
    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        let token = new_token();
        let started = Instant::now();
        let ttl_ms = ttl.as_millis().to_string();
        let counter = counter(resource);
        let reply = self
            .lock
            .node
            .eval::<Option<u64>>(&self.acquire, &[resource, &counter], &[&token, &ttl_ms])
            .await;
        match reply {
            Ok(Some(_)) if self.lock.crash.crash_now() => {
                Outcome::Info("crashed: the client died holding the lock".into())
            }
            Ok(Some(fence)) => Outcome::Ok(Grant {
                token,
                validity: ttl,
                nodes: vec![self.lock.node.name().to_string()],
                fence: Some(fence),
            }),
            Ok(None) => Outcome::Fail(held_by_another()),
            Err(e @ NodeError::Indeterminate { .. }) => {
                Outcome::Info(format!("{e} after {} ms", started.elapsed().as_millis()))
            }
            Err(e) => Outcome::Fail(e.to_string()),
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
    use super::counter;

    #[test]
    fn the_counter_shares_its_lock_keys_cluster_slot() {
        assert_eq!(counter("lock"), "{lock}:fence");
        assert_eq!(counter("{app}lock-1"), "{app}lock-1:fence");
    }
}
