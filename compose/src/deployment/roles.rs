//! Who is master: what the Sentinels say, which nodes claim a key's cluster slot, which
//! member leads a consensus group, and waiting at bring-up until they agree.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::{Deployment, READY_TIMEOUT};
use crate::topology::{Replication, MASTER_NAME};
use crate::ComposeError;

impl Deployment {
    /// Waits until every Sentinel names the first node as master and knows every replica and
    /// every other Sentinel, and every replica is online: the deployment is what the test
    /// means it to be.
    pub(super) async fn wait_sentinels_agree(&self) -> Result<(), ComposeError> {
        let started = Instant::now();
        let master = self.nodes[0].addr.ip().to_string();
        let others = self.nodes.len() - 1;
        let mut last = String::from("no Sentinel answered");
        while started.elapsed() < READY_TIMEOUT {
            let mut agreed = 0;
            for node in &self.nodes {
                let Some(addr) = node.sentinel else { continue };
                match sentinel_view(addr).await {
                    Ok(view)
                        if view.master_ip == master
                            && view.replicas == others
                            && view.other_sentinels == others =>
                    {
                        agreed += 1
                    }
                    Ok(view) => last = format!("{}'s Sentinel sees {view:?}", node.name),
                    Err(e) => last = format!("{}'s Sentinel: {e}", node.name),
                }
            }
            let sentinels = self.nodes.iter().filter(|n| n.sentinel.is_some()).count();
            if agreed == sentinels {
                match connected_replicas(self.nodes[0].addr).await {
                    Ok(connected) if connected == others => return Ok(()),
                    Ok(connected) => {
                        last = format!("{connected} of {others} replicas connected to the master")
                    }
                    Err(e) => last = format!("the master's INFO: {e}"),
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(ComposeError::NodeNotReady {
            node: "sentinel".into(),
            seconds: READY_TIMEOUT.as_secs(),
            last_error: last,
        })
    }

    /// The node every reachable Sentinel names as master, if they agree; `None` if none
    /// answers or they disagree.
    pub async fn sentinel_master(&self) -> Option<String> {
        match self.sentinel_masters().await.as_slice() {
            [master] => Some(master.clone()),
            _ => None,
        }
    }

    /// Every node that some reachable Sentinel names as master, sorted: one in a healthy
    /// deployment, two in a split brain, none when no Sentinel answers.
    pub async fn sentinel_masters(&self) -> Vec<String> {
        let mut named = Vec::new();
        for node in &self.nodes {
            let Some(addr) = node.sentinel else { continue };
            let Ok(view) = sentinel_view(addr).await else {
                continue;
            };
            if let Some(master) = self
                .nodes
                .iter()
                .find(|n| n.addr.ip().to_string() == view.master_ip)
            {
                named.push(master.name.clone());
            }
        }
        named.sort();
        named.dedup();
        named
    }

    /// Every node that acts as master for `key`, sorted: on `sentinel`, every node some
    /// reachable Sentinel names; on `cluster`, every node that says it serves `key`'s slot as
    /// master; in a consensus group, every member some reachable member names its leader.
    /// One in a healthy deployment, two in a split brain, none when nobody answers (or the
    /// nodes stand alone).
    pub async fn masters_of(&self, key: &str) -> Vec<String> {
        match self.replication {
            Replication::Standalone => Vec::new(),
            Replication::Sentinel => self.sentinel_masters().await,
            Replication::Consensus => self.system.leaders(self.addresses()).await,
            Replication::Cluster => {
                let mut claims = self.slot_claims(key).await;
                claims.sort();
                claims.into_iter().map(|(name, _)| name).collect()
            }
        }
    }

    /// The master for `key` that the deployment's majority follows: the one the Sentinels
    /// agree on; on `cluster`, the newest claim to the slot (the highest config epoch), which
    /// is the one the other masters voted for; in a consensus group, the one leader every
    /// reachable member names.
    pub async fn master_of(&self, key: &str) -> Option<String> {
        match self.replication {
            Replication::Standalone => None,
            Replication::Sentinel => self.sentinel_master().await,
            Replication::Consensus => {
                match self.system.leaders(self.addresses()).await.as_slice() {
                    [leader] => Some(leader.clone()),
                    _ => None,
                }
            }
            Replication::Cluster => {
                let claims = self.slot_claims(key).await;
                claims
                    .into_iter()
                    .max_by_key(|(_, epoch)| *epoch)
                    .map(|(name, _)| name)
            }
        }
    }

    /// Every cluster node that claims `key`'s slot as master, with its config epoch.
    async fn slot_claims(&self, key: &str) -> Vec<(String, u64)> {
        let mut slot = None;
        for node in &self.nodes {
            if let Ok(s) =
                ask_redis::<u16>(node.addr, redis::cmd("CLUSTER").arg("KEYSLOT").arg(key)).await
            {
                slot = Some(s);
                break;
            }
        }
        let Some(slot) = slot else {
            return Vec::new();
        };
        let mut claims = Vec::new();
        for node in &self.nodes {
            if let Ok(Some(epoch)) = claims_slot(node.addr, slot).await {
                claims.push((node.name.clone(), epoch));
            }
        }
        claims
    }

    /// Waits until every node says `cluster_state:ok` with all 16384 slots assigned and
    /// every node known.
    pub(super) async fn wait_cluster_ok(&self) -> Result<(), ComposeError> {
        let started = Instant::now();
        let mut last = String::from("no node answered");
        while started.elapsed() < READY_TIMEOUT {
            let mut ok = 0;
            for node in &self.nodes {
                match cluster_info(node.addr).await {
                    Ok(info) => {
                        let field = |name: &str| {
                            info.lines()
                                .find_map(|l| l.strip_prefix(name))
                                .map(|v| v.trim().to_string())
                                .unwrap_or_default()
                        };
                        let healthy = field("cluster_state:") == "ok"
                            && field("cluster_slots_ok:") == "16384"
                            && field("cluster_known_nodes:") == self.nodes.len().to_string();
                        if healthy {
                            ok += 1;
                        } else {
                            last = format!("{}: {}", node.name, info.replace("\r\n", " "));
                        }
                    }
                    Err(e) => last = format!("{}: {e}", node.name),
                }
            }
            if ok == self.nodes.len() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(ComposeError::NodeNotReady {
            node: "cluster".into(),
            seconds: READY_TIMEOUT.as_secs(),
            last_error: last,
        })
    }
}

/// A node's `CLUSTER INFO`.
async fn cluster_info(addr: SocketAddr) -> Result<String, String> {
    ask_redis(addr, redis::cmd("CLUSTER").arg("INFO")).await
}

/// How many replicas a master has connected and in sync (`INFO replication`).
async fn connected_replicas(addr: SocketAddr) -> Result<usize, String> {
    let info: String = ask_redis(addr, redis::cmd("INFO").arg("replication")).await?;
    // One `slaveN:ip=...,state=online,...` line per replica.
    Ok(info
        .lines()
        .filter(|l| l.starts_with("slave") && l.contains("state=online"))
        .count())
}

/// What a cluster node says of itself in its `CLUSTER NODES` line: whether it is a master of
/// `slot`, and its config epoch (the newer claim wins when two nodes claim one slot).
async fn claims_slot(addr: SocketAddr, slot: u16) -> Result<Option<u64>, String> {
    let nodes: String = ask_redis(addr, redis::cmd("CLUSTER").arg("NODES")).await?;
    // <id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slot ranges...>
    let Some(own) = nodes.lines().find(|l| {
        l.split_whitespace()
            .nth(2)
            .is_some_and(|flags| flags.split(',').any(|f| f == "myself"))
    }) else {
        return Err("CLUSTER NODES has no `myself` line".into());
    };
    let fields: Vec<&str> = own.split_whitespace().collect();
    let is_master = fields[2].split(',').any(|f| f == "master");
    let covers = fields.iter().skip(8).any(|range| {
        let (low, high) = range.split_once('-').unwrap_or((range, range));
        matches!((low.parse::<u16>(), high.parse::<u16>()), (Ok(l), Ok(h)) if l <= slot && slot <= h)
    });
    let epoch = fields.get(6).and_then(|e| e.parse().ok()).unwrap_or(0);
    Ok((is_master && covers).then_some(epoch))
}

/// What one Sentinel believes about the monitored master.
#[derive(Debug)]
struct SentinelView {
    master_ip: String,
    replicas: usize,
    other_sentinels: usize,
}

async fn sentinel_view(addr: SocketAddr) -> Result<SentinelView, String> {
    let fields: Vec<String> =
        ask_redis(addr, redis::cmd("SENTINEL").arg("master").arg(MASTER_NAME)).await?;
    let field = |name: &str| {
        fields
            .chunks(2)
            .find(|pair| pair[0] == name)
            .and_then(|pair| pair.get(1))
            .cloned()
            .unwrap_or_default()
    };
    Ok(SentinelView {
        master_ip: field("ip"),
        replicas: field("num-slaves").parse().unwrap_or(0),
        other_sentinels: field("num-other-sentinels").parse().unwrap_or(0),
    })
}

/// One command to one Redis server (or Sentinel), on a connection of its own, given a second
/// to answer: how the deployment learns who is master.
pub async fn ask_redis<T: redis::FromRedisValue>(
    addr: SocketAddr,
    cmd: &redis::Cmd,
) -> Result<T, String> {
    let client = redis::Client::open(format!("redis://{addr}/")).map_err(|e| e.to_string())?;
    let attempt = async {
        let mut conn = client.get_multiplexed_async_connection().await?;
        cmd.query_async::<T>(&mut conn).await
    };
    match tokio::time::timeout(Duration::from_secs(1), attempt).await {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".into()),
    }
}
