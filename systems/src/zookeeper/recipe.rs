//! ZooKeeper's lock recipe, as Curator's `InterProcessMutex` runs it: an ephemeral sequential
//! node under the lock's persistent node; the lowest sequence holds the lock, and every other
//! node watches only the one just before it (no herd when the holder goes). The lock lives as
//! long as the holder's session: the lease is the session timeout (`--ttl`), which the client
//! library keeps alive by itself with pings. The holder's node's `czxid` (the transaction that
//! created it: global, rising) is the fencing token. Released by deleting the node.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use splitbrain_checker::{acquisition, Renewal};
use zookeeper_client as zk;

use splitbrain_workloads::{
    new_token, spin_delay, ClientConfig, ClientKind, CrashPoint, Fences, Grant, LockClient, Outcome,
};

use super::session::{check_ttl, ZkConn, ZkError};
use super::topology::TICK;
use super::Ensemble;

pub(super) const KIND: ClientKind = ClientKind {
    name: "zk-recipe",
    summary: "ZooKeeper's lock recipe (ephemeral sequential nodes, watch the predecessor); the \
              node's czxid fences",
    fences: Fences::Always,
    // The library keeps the session, and the lock, alive with pings it does not report:
    // there is no validity the harness could hold the holder to.
    checks_lease: false,
    build,
};

/// The persistent node under which each lock is a node of its own.
const LOCKS: &str = "/locks";
/// How long an attempt whose outcome is unknown keeps trying to delete its node: long enough
/// for the session to move to another member (the library gives up a silent connection
/// after 2/5 of the session timeout) and for an election (measured: 0.6 s after a leader
/// was killed, 2.7 s after it was cut off).
const WITHDRAW_PATIENCE: Duration = Duration::from_secs(5);
/// How long past its timeout an abandoned session may still live on the servers: they expire
/// sessions a tick at a time, and a ping sent just before it was abandoned may still be on a
/// slowed link (link faults delay a packet by about a second, with jitter).
const SESSION_END_MARGIN: Duration = Duration::from_millis(TICK.as_millis() as u64 + 2_000);

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    config.connection::<Ensemble>(KIND.name)?;
    check_ttl(config.ttl)?;
    Ok(Box::new(ZkRecipe {
        zk: ZkConn::new(&config.nodes, config.ttl),
        crash: config.crash.clone(),
        made: HashSet::new(),
    }))
}

struct ZkRecipe {
    zk: ZkConn,
    crash: CrashPoint,
    /// The lock nodes known to exist (persistent, so made once).
    made: HashSet<String>,
}

/// How a wait in the lock's queue ended.
enum Turn {
    /// Our node is the lowest: the lock is ours.
    Ours,
    /// Still behind another node when the wait ran out.
    Queued,
    /// Our node is gone: the session that owned it ended.
    Lost(String),
    /// A call's answer was lost.
    Unknown(String),
}

impl ZkRecipe {
    /// Makes the lock's persistent node, if not made yet. It holds nothing, so a failure
    /// here is definite whatever it was.
    async fn lock_node(&mut self, resource: &str) -> Result<String, String> {
        let dir = format!("{LOCKS}/{resource}");
        if self.made.contains(&dir) {
            return Ok(dir);
        }
        let path = dir.clone();
        self.zk
            .call(|c| async move {
                let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
                c.mkdir(&path, &persistent).await
            })
            .await
            .map_err(|e| format!("making {dir}: {e}"))?;
        self.made.insert(dir.clone());
        Ok(dir)
    }

    /// Waits until `me` is the lowest node under `dir`, or until `deadline`.
    async fn wait_turn(&mut self, dir: &str, me: &str, deadline: Instant) -> Turn {
        loop {
            let path = dir.to_string();
            let children = match self
                .zk
                .call(|c| async move { c.list_children(&path).await })
                .await
            {
                Ok(children) => children,
                Err(ZkError::Indeterminate(e)) => return Turn::Unknown(e),
                Err(e) => return Turn::Lost(e.to_string()),
            };
            let queue = queue_order(&children);
            let Some(at) = queue.iter().position(|node| *node == me) else {
                return Turn::Lost("our node is gone: its session ended".into());
            };
            if at == 0 {
                return Turn::Ours;
            }
            let predecessor = format!("{dir}/{}", queue[at - 1]);
            let watched = self
                .zk
                .call(|c| async move { c.check_and_watch_stat(&predecessor).await })
                .await;
            let watcher = match watched {
                Ok((Some(_), watcher)) => watcher,
                // Gone between the listing and the watch: look again.
                Ok((None, _)) => continue,
                Err(ZkError::Indeterminate(e)) => return Turn::Unknown(e),
                Err(e) => return Turn::Lost(e.to_string()),
            };
            let left = deadline.saturating_duration_since(Instant::now());
            match self.zk.wait(watcher.changed(), left).await {
                None => return Turn::Queued,
                Some(event) if event.session_state.is_terminated() => {
                    return Turn::Lost(format!("the session ended ({:?})", event.session_state))
                }
                Some(_) => {}
            }
        }
    }

    /// After an attempt whose outcome is unknown (its create's or a look's answer lost, or
    /// its wait run out): a node it made may exist, and may even become the holder, for as
    /// long as the session lives. Like Curator's protected mode, it finds the attempt's
    /// node by the token in its name and deletes it, trying again while the session moves
    /// to another member; once none is left the attempt certainly holds nothing. When that
    /// does not get through (the client is cut off), the session is abandoned, and the
    /// attempt is settled once the servers have expired it and its node with it.
    async fn withdraw(&mut self, dir: &str, token: &str, error: String) -> Outcome<Grant> {
        let e = match self.delete_until(dir, token, WITHDRAW_PATIENCE).await {
            Ok(()) => {
                return Outcome::Fail(format!("{error}; deleted our node, so nothing is held"))
            }
            Err(e) => e,
        };
        self.zk.abandon();
        self.outlive_session(dir, token, format!("{error}, and deleting our node: {e}"))
            .await
    }

    /// After the session was abandoned with a node of ours perhaps in the queue: waits until
    /// the servers have certainly expired it, then looks from a new session, for as long as
    /// a cut may last. With no node of ours left, the attempt certainly holds nothing (a node
    /// it made held the lock at most until the session's end, and its client never acted
    /// under it), as etcd's clients revoke an unknown attempt's lease; only when no look got
    /// through is it unknown.
    async fn outlive_session(&mut self, dir: &str, token: &str, error: String) -> Outcome<Grant> {
        tokio::time::sleep(self.zk.session_timeout() + SESSION_END_MARGIN).await;
        match self.delete_until(dir, token, WITHDRAW_PATIENCE).await {
            Ok(()) => Outcome::Fail(format!(
                "{error}; abandoned the session, which the servers have expired since, and no \
                 node of ours is left, so nothing is held"
            )),
            Err(e) => {
                self.zk.abandon();
                Outcome::Info(format!(
                    "{error}; abandoned the session, and looking again after it expired: {e}"
                ))
            }
        }
    }

    /// [`ZkRecipe::delete_ours`], tried again for up to `patience` while it fails.
    async fn delete_until(
        &mut self,
        dir: &str,
        token: &str,
        patience: Duration,
    ) -> Result<(), ZkError> {
        let started = Instant::now();
        loop {
            match self.delete_ours(dir, token).await {
                Ok(()) => return Ok(()),
                Err(e) if started.elapsed() >= patience => return Err(e),
                Err(e) => {
                    tracing::debug!("deleting the node of {token}: {e}; trying again");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    /// Deletes every node under `dir` with `token` in its name. A session that ended took
    /// its nodes with it, so listing them again on a new session finds none.
    async fn delete_ours(&mut self, dir: &str, token: &str) -> Result<(), ZkError> {
        let path = dir.to_string();
        let children = self
            .zk
            .call(|c| async move { c.list_children(&path).await })
            .await?;
        let marker = format!("-{token}-");
        for child in children.into_iter().filter(|c| c.contains(&marker)) {
            let node = format!("{dir}/{child}");
            match self
                .zk
                .call(|c| async move { c.delete(&node, None).await })
                .await
            {
                Ok(()) => {}
                // Gone already: the session ended, or an earlier delete went through.
                Err(ZkError::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The lock's queue: its nodes (`n-<token>-<sequence>`) in the order of their sequence
/// numbers, the order they were created in.
pub(crate) fn queue_order(children: &[String]) -> Vec<&str> {
    let sequence = |name: &str| -> u64 {
        name.rsplit('-')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(u64::MAX)
    };
    let mut queue: Vec<&str> = children.iter().map(String::as_str).collect();
    queue.sort_by_key(|name| (sequence(name), name.to_string()));
    queue
}

#[async_trait]
impl LockClient for ZkRecipe {
    async fn prepare(&mut self) -> Result<(), String> {
        // A session made now is not timed as part of an acquire; one that cannot be made now
        // is the next acquire's failure.
        let _ = self.zk.session().await;
        Ok(())
    }

    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        let started = Instant::now();
        let dir = match self.lock_node(resource).await {
            Ok(dir) => dir,
            Err(e) => return Outcome::Fail(e),
        };
        // The random token in the node's name tells our node from every other client's.
        let token = new_token();
        let path = format!("{dir}/n-{token}-");
        let created = self
            .zk
            .call(|c| async move {
                let ephemeral =
                    zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
                c.create(&path, b"", &ephemeral).await
            })
            .await;
        let (stat, sequence) = match created {
            Ok(created) => created,
            Err(ZkError::Indeterminate(e)) => {
                let outcome = self.withdraw(&dir, &token, e).await;
                // A create whose answer was lost may still wait in a member's pipeline and
                // commit after the look that found no node of ours: only the end of this
                // session bounds such a node's life, so the session goes too.
                self.zk.abandon();
                return outcome;
            }
            Err(e) => return Outcome::Fail(e.to_string()),
        };
        let name = format!("n-{token}-{sequence}");
        let fence = stat.czxid as u64;
        // Queued behind a holder, the session is kept alive, but an acquire that waits
        // longer than half the lease is one a caller would have given up on.
        match self.wait_turn(&dir, &name, started + ttl / 2).await {
            Turn::Ours => {}
            Turn::Queued => {
                let queued = format!("{}: still queued", acquisition::HELD);
                return self.withdraw(&dir, &token, queued).await;
            }
            Turn::Lost(e) => return Outcome::Fail(e),
            Turn::Unknown(e) => return self.withdraw(&dir, &token, e).await,
        }
        if self.crash.crash_now() {
            self.zk.abandon();
            return Outcome::Info("crashed: the client died holding the lock".into());
        }
        Outcome::Ok(Grant {
            token: name,
            // The session may expire a session timeout after the server last heard from it,
            // which was after `started`.
            validity: ttl,
            // The ensemble's leader committed the node, whichever member served the session
            // (the library does not say which): naming none lets coverage count a fault on
            // any member as one on the grant.
            nodes: Vec::new(),
            fence: Some(fence),
        })
    }

    async fn release(&mut self, resource: &str, grant: &Grant) -> Outcome<()> {
        let node = format!("{LOCKS}/{resource}/{}", grant.token);
        match self
            .zk
            .call(|c| async move { c.delete(&node, None).await })
            .await
        {
            Ok(()) => Outcome::Ok(()),
            Err(ZkError::Indeterminate(e)) => {
                // Our node may outlive the lost delete for as long as the session lives.
                self.zk.abandon();
                Outcome::Info(format!("{e}; abandoned the session"))
            }
            Err(e) => Outcome::Fail(format!(
                "the lock was no longer ours (its session ended): {e}"
            )),
        }
    }

    fn retry_delay(&mut self, _failures: u32) -> Duration {
        spin_delay()
    }

    fn renewal(&self) -> Option<Renewal> {
        // The library pings to keep the session, and the lock, alive, and says nothing.
        Some(Renewal::Silent)
    }

    fn suspend(&mut self, frozen: bool) {
        self.zk.freeze(frozen);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn the_queue_is_in_sequence_order_whatever_the_tokens() {
        let children: Vec<String> = [
            "n-ffff-0000000012",
            "n-0000-0000000010",
            "n-aaaa-0000000011",
            "n-1234-0000000009",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            queue_order(&children),
            [
                "n-1234-0000000009",
                "n-0000-0000000010",
                "n-aaaa-0000000011",
                "n-ffff-0000000012"
            ]
        );
    }

    #[test]
    fn a_ttl_the_server_would_change_is_refused() {
        let nodes = vec![("n1".to_string(), "127.0.0.1:2181".parse().unwrap())];
        let config = |ttl| ClientConfig::new(nodes.clone(), Arc::new(Ensemble), ttl);
        assert!(build(&config(Duration::from_secs(2))).is_ok());
        let error = build(&config(Duration::from_secs(30))).err().unwrap();
        assert!(error.contains("--ttl"), "{error}");
        let redis = crate::redis::tests::config("single", 1);
        let refused = build(&redis).err().unwrap();
        assert!(
            refused.contains("zk-recipe speaks to another system than this deployment's (single)"),
            "{refused}"
        );
    }
}
