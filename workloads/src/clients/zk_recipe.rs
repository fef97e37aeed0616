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

use super::set_nx_px::spin_delay;
use super::{speaks, ClientConfig, ClientKind, Fences, Grant, LockClient, Outcome};
use crate::zookeeper::{check_ttl, ZkConn, ZkError};
use crate::CrashPoint;

pub(super) const KIND: ClientKind = ClientKind {
    name: "zk-recipe",
    summary: "ZooKeeper's lock recipe (ephemeral sequential nodes, watch the predecessor); the \
              node's czxid fences",
    speaks: Some("zookeeper"),
    fences: Fences::Always,
    build,
};

/// The persistent node under which each lock is a node of its own.
const LOCKS: &str = "/locks";

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    speaks(config, KIND.name, "zookeeper")?;
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
                Err(ZkError::Definite(e)) => return Turn::Lost(e),
                Err(ZkError::Indeterminate(e)) => return Turn::Unknown(e),
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
                Err(ZkError::Definite(e)) => return Turn::Lost(e),
                Err(ZkError::Indeterminate(e)) => return Turn::Unknown(e),
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

    /// Deletes our node after a wait that ran out: definitely not held if the delete went
    /// through, else unknown (and the session is abandoned, which deletes it in time).
    async fn leave_queue(&mut self, node: String) -> Outcome<Grant> {
        let queued = format!("{}: still queued", acquisition::HELD);
        match self
            .zk
            .call(|c| async move { c.delete(&node, None).await })
            .await
        {
            Ok(()) => Outcome::Fail(queued),
            Err(e) => self.give_up(format!("{queued}, and deleting our node: {e}")),
        }
    }

    /// After an attempt whose outcome is unknown: a node this session made may exist, and may
    /// even become the holder, for as long as the session lives. Abandoning the session (the
    /// server expires it a session timeout later, and its nodes with it) bounds that, as a
    /// Curator client gives up a session it cannot trust.
    fn give_up(&mut self, error: String) -> Outcome<Grant> {
        self.zk.abandon();
        Outcome::Info(format!("{error}; abandoned the session"))
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
        let _ = self.zk.client().await;
        Ok(())
    }

    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        let started = Instant::now();
        let dir = match self.lock_node(resource).await {
            Ok(dir) => dir,
            Err(e) => return Outcome::Fail(e),
        };
        // The random token in the node's name tells our node from every other client's.
        let prefix = format!("{dir}/n-{}-", super::new_token());
        let path = prefix.clone();
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
            Err(ZkError::Definite(e)) => return Outcome::Fail(e),
            Err(ZkError::Indeterminate(e)) => return self.give_up(e),
        };
        let (me, fence) = (format!("{prefix}{sequence}"), stat.czxid as u64);
        let name = me.rsplit('/').next().unwrap_or_default().to_string();
        // Queued behind a holder, the session is kept alive, but an acquire that waits
        // longer than half the lease is one a caller would have given up on.
        match self.wait_turn(&dir, &name, started + ttl / 2).await {
            Turn::Ours => {}
            Turn::Queued => return self.leave_queue(me).await,
            Turn::Lost(e) => return Outcome::Fail(e),
            Turn::Unknown(e) => return self.give_up(e),
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
            Err(ZkError::Definite(e)) => Outcome::Fail(format!(
                "the lock was no longer ours (its session ended): {e}"
            )),
            Err(ZkError::Indeterminate(e)) => {
                // Our node may outlive the lost delete for as long as the session lives.
                self.zk.abandon();
                Outcome::Info(format!("{e}; abandoned the session"))
            }
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
        let config =
            |ttl| ClientConfig::new(nodes.clone(), ttl).serving(super::super::Shape::ZooKeeper);
        assert!(build(&config(Duration::from_secs(2))).is_ok());
        let error = build(&config(Duration::from_secs(30))).err().unwrap();
        assert!(error.contains("--ttl"), "{error}");
        let redis = build(&ClientConfig::new(nodes.clone(), Duration::from_secs(2)))
            .err()
            .unwrap();
        assert!(redis.contains("zk-recipe speaks zookeeper"), "{redis}");
    }
}
