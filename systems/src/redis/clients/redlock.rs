//! Redlock, as the reference article specifies it: SET NX PX on all N independent masters in
//! parallel, each with a per-node timeout far below the TTL; the lock is held when a majority
//! granted it and validity = TTL - elapsed - (TTL x drift + 2 ms) is still positive. After a
//! failed attempt it releases on every node, and retries after an exponential backoff with
//! random jitter.
//!
//! Two variants: without jitter (`--no-jitter`), clients that collided retry in lockstep and
//! can split the vote again and again, the livelock the spec's random delay exists to break;
//! and sequential acquisition (`--acquire sequential`), one node after another as some
//! libraries do, which spends more of the validity on the way.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::future::join_all;
use rand::Rng;

use splitbrain_checker::acquisition;

use super::{
    held_by_another, new_token, set_if_absent, ClientConfig, ClientKind, Fences, Grant, LockClient,
    NodeConn, NodeError, Outcome, COMPARE_AND_DELETE,
};
use crate::redis::{Layout, RedisDeployment};

pub(super) const KIND: ClientKind = ClientKind {
    name: "redlock",
    summary: "Redlock over N independent masters: majority, validity with clock drift",
    fences: Fences::Never,
    checks_lease: true,
    build,
};

/// Clock drift allowance as a share of the TTL (antirez's spec and most libraries: 1%).
const CLOCK_DRIFT_FACTOR: f64 = 0.01;
/// Fixed part of the drift allowance.
const DRIFT_FLOOR: Duration = Duration::from_millis(2);
/// First retry delay; it doubles with each failure up to [`RETRY_CAP`].
const RETRY_BASE: Duration = Duration::from_millis(20);
const RETRY_CAP: Duration = Duration::from_millis(400);

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    if config.nodes.is_empty() {
        return Err("redlock needs at least one node".into());
    }
    let redis = config.connection::<RedisDeployment>(KIND.name)?;
    if matches!(redis.layout, Layout::Sentinel(_)) {
        return Err(
            "redlock needs independent masters, and this deployment's nodes replicate \
             one master; use --deployment redlock"
                .into(),
        );
    }
    if matches!(redis.layout, Layout::Cluster) {
        return Err(
            "redlock needs independent masters, and a Redis Cluster's masters each own \
             their own slots (a key lives on one of them, so no quorum can form); use \
             --deployment redlock, or --client set-nx-px on a cluster"
                .into(),
        );
    }
    let timeout = node_timeout(config.ttl);
    Ok(Box::new(Redlock {
        nodes: config
            .nodes
            .iter()
            .map(|(name, addr)| NodeConn::new(name.clone(), *addr, timeout))
            .collect(),
        release: redis::Script::new(COMPARE_AND_DELETE),
        jitter: config.options.jitter,
        sequential: config.options.sequential,
    }))
}

/// The per-node timeout: 1% of the TTL, between 10 and 50 ms (the spec asks for 5-50 ms
/// against a 10 s TTL, so that a dead node cannot eat the lease).
fn node_timeout(ttl: Duration) -> Duration {
    (ttl / 100).clamp(Duration::from_millis(10), Duration::from_millis(50))
}

fn drift(ttl: Duration) -> Duration {
    ttl.mul_f64(CLOCK_DRIFT_FACTOR) + DRIFT_FLOOR
}

struct Redlock {
    nodes: Vec<NodeConn>,
    release: redis::Script,
    jitter: bool,
    sequential: bool,
}

impl Redlock {
    fn quorum(&self) -> usize {
        self.nodes.len() / 2 + 1
    }

    /// Why an attempt that `granted` nodes granted missed the quorum: the lock is held
    /// elsewhere, the vote split between contenders, or too few nodes answered.
    ///
    /// `replies` are `SET ... NX GET` replies: `None` granted, `Some(token)` refused by the
    /// holder of `token` on that node.
    fn no_quorum(&self, granted: usize, replies: &[Result<Option<String>, NodeError>]) -> String {
        let mut holders: HashMap<&str, usize> = HashMap::new();
        for holder in replies.iter().filter_map(|r| r.as_ref().ok()?.as_deref()) {
            *holders.entry(holder).or_default() += 1;
        }
        let strongest = holders.values().copied().max().unwrap_or(0);
        let unanswered = replies.iter().filter(|r| r.is_err()).count();
        let n = self.nodes.len();
        if strongest >= self.quorum() {
            format!("{} on {strongest}/{n} nodes", held_by_another())
        } else if unanswered == 0 {
            format!(
                "{}: {granted}/{n} granted, the rest split between {} other contender{}",
                acquisition::SPLIT_VOTE,
                holders.len(),
                if holders.len() == 1 { "" } else { "s" }
            )
        } else {
            format!("no quorum: {granted}/{n} granted, {unanswered} unreachable or timed out")
        }
    }

    /// Compare-and-delete on every node in parallel; returns (nodes that answered, deleted).
    async fn unlock_all(&mut self, resource: &str, token: &str) -> (usize, usize) {
        let script = &self.release;
        let (keys, args) = ([resource], [token]);
        let replies = join_all(
            self.nodes
                .iter_mut()
                .map(|node| node.eval::<i64>(script, &keys, &args)),
        )
        .await;
        let answered = replies.iter().filter(|r| r.is_ok()).count();
        let deleted = replies.iter().filter(|r| matches!(r, Ok(1))).count();
        (answered, deleted)
    }
}

#[async_trait]
impl LockClient for Redlock {
    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        let token = new_token();
        let started = Instant::now();
        // With GET, a refusal names the holder's token, so that a miss can tell a lock held
        // by one client on a majority from a vote split between contenders.
        let set = set_if_absent(resource, &token, ttl).arg("GET").clone();
        let replies = if self.sequential {
            let mut replies = Vec::with_capacity(self.nodes.len());
            for node in &mut self.nodes {
                replies.push(node.query::<Option<String>>(&set).await);
            }
            replies
        } else {
            join_all(
                self.nodes
                    .iter_mut()
                    .map(|node| node.query::<Option<String>>(&set)),
            )
            .await
        };
        let elapsed = started.elapsed();
        let granted: Vec<String> = self
            .nodes
            .iter()
            .zip(&replies)
            .filter(|(_, reply)| matches!(reply, Ok(None)))
            .map(|(node, _)| node.name().to_string())
            .collect();
        let remaining = ttl.checked_sub(elapsed + drift(ttl));
        if granted.len() >= self.quorum() && remaining.is_some_and(|r| !r.is_zero()) {
            return Outcome::Ok(Grant {
                token,
                validity: ttl - drift(ttl),
                nodes: granted,
                fence: None,
            });
        }
        // Failed: release everywhere, including nodes whose reply was lost but may hold the key.
        self.unlock_all(resource, &token).await;
        let reason = if granted.len() < self.quorum() {
            self.no_quorum(granted.len(), &replies)
        } else {
            format!(
                "quorum reached but the validity was used up after {} ms",
                elapsed.as_millis()
            )
        };
        Outcome::Fail(reason)
    }

    async fn release(&mut self, resource: &str, grant: &Grant) -> Outcome<()> {
        let (answered, deleted) = self.unlock_all(resource, &grant.token).await;
        if answered < self.quorum() {
            Outcome::Info(format!(
                "only {answered}/{} nodes answered the release",
                self.nodes.len()
            ))
        } else if deleted == 0 {
            Outcome::Fail("the lock was no longer ours on any node that answered".into())
        } else {
            Outcome::Ok(())
        }
    }

    fn retry_delay(&mut self, failures: u32) -> Duration {
        let ceiling = RETRY_BASE
            .saturating_mul(1 << failures.min(8))
            .min(RETRY_CAP);
        if !self.jitter {
            return ceiling;
        }
        // Jitter: clients that failed together must not retry together (split votes).
        ceiling.mul_f64(rand::rng().random_range(0.5..1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_and_drift_follow_the_spec() {
        assert_eq!(
            node_timeout(Duration::from_secs(10)),
            Duration::from_millis(50)
        );
        assert_eq!(
            node_timeout(Duration::from_secs(2)),
            Duration::from_millis(20)
        );
        assert_eq!(
            node_timeout(Duration::from_millis(200)),
            Duration::from_millis(10)
        );
        assert_eq!(drift(Duration::from_secs(10)), Duration::from_millis(102));
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let mut client = Redlock {
            nodes: Vec::new(),
            release: redis::Script::new(COMPARE_AND_DELETE),
            jitter: true,
            sequential: false,
        };
        for _ in 0..100 {
            let first = client.retry_delay(0);
            assert!(first >= Duration::from_millis(10) && first < RETRY_BASE);
            assert!(client.retry_delay(30) < RETRY_CAP);
        }
        client.jitter = false;
        assert_eq!(client.retry_delay(0), RETRY_BASE);
        assert_eq!(client.retry_delay(1), RETRY_BASE * 2);
    }
}
