//! Who is master, as a replicated Redis deployment says it (Jepsen's `Primary`): what the
//! Sentinels say, which nodes claim a key's cluster slot; whether the deployment is formed
//! yet; and a failover asked for as an operator asks it.

use std::net::SocketAddr;
use std::time::Duration;

use splitbrain_compose::topology::Masters;
use splitbrain_compose::{ComposeError, Deployment};

/// The name Sentinel knows the monitored master by.
pub const MASTER_NAME: &str = "mymaster";
/// The port every Sentinel listens on, on its node's address.
pub const SENTINEL_PORT: u16 = 26379;

/// Whether every Sentinel names the first node as master and knows every replica and every
/// other Sentinel, and every replica is online: the deployment is what the test means it to
/// be. `Err` says what one of them sees instead.
pub async fn sentinels_agree(nodes: Vec<(String, SocketAddr)>) -> Result<(), String> {
    let master = nodes[0].1;
    let others = nodes.len() - 1;
    for (name, addr) in &nodes {
        match sentinel_view(sentinel_of(*addr)).await {
            Ok(view)
                if view.master_ip == master.ip().to_string()
                    && view.replicas == others
                    && view.other_sentinels == others => {}
            Ok(view) => return Err(format!("{name}'s Sentinel sees {view:?}")),
            Err(e) => return Err(format!("{name}'s Sentinel: {e}")),
        }
    }
    match connected_replicas(master).await {
        Ok(connected) if connected == others => Ok(()),
        Ok(connected) => Err(format!(
            "{connected} of {others} replicas connected to the master"
        )),
        Err(e) => Err(format!("the master's INFO: {e}")),
    }
}

/// Every node that some reachable Sentinel names as master; agreed on when there is one.
pub async fn sentinel_masters(nodes: Vec<(String, SocketAddr)>) -> Masters {
    let mut named = Vec::new();
    for (_, addr) in &nodes {
        let Ok(view) = sentinel_view(sentinel_of(*addr)).await else {
            continue;
        };
        if let Some((master, _)) = nodes
            .iter()
            .find(|(_, addr)| addr.ip().to_string() == view.master_ip)
        {
            named.push(master.clone());
        }
    }
    Masters::agreed(named)
}

/// Every cluster node that claims `key`'s slot as master; the one followed is the newest claim
/// (the highest config epoch), which is the one the other masters voted for.
pub async fn slot_masters(nodes: Vec<(String, SocketAddr)>, key: String) -> Masters {
    let mut slot = None;
    for (_, addr) in &nodes {
        if let Ok(s) = ask::<u16>(*addr, redis::cmd("CLUSTER").arg("KEYSLOT").arg(&key)).await {
            slot = Some(s);
            break;
        }
    }
    let Some(slot) = slot else {
        return Masters::default();
    };
    let mut claims = Vec::new();
    for (name, addr) in &nodes {
        if let Ok(Some(epoch)) = claims_slot(*addr, slot).await {
            claims.push((name.clone(), epoch));
        }
    }
    let followed = claims
        .iter()
        .max_by_key(|(_, epoch)| *epoch)
        .map(|(name, _)| name.clone());
    let mut all: Vec<String> = claims.into_iter().map(|(name, _)| name).collect();
    all.sort();
    Masters { all, followed }
}

/// Whether every node says `cluster_state:ok` with all 16384 slots assigned and every node
/// known; `Err` says what one says instead.
pub async fn cluster_ok(nodes: Vec<(String, SocketAddr)>) -> Result<(), String> {
    for (name, addr) in &nodes {
        let info = cluster_info(*addr)
            .await
            .map_err(|e| format!("{name}: {e}"))?;
        let field = |field: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(field))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        let healthy = field("cluster_state:") == "ok"
            && field("cluster_slots_ok:") == "16384"
            && field("cluster_known_nodes:") == nodes.len().to_string();
        if !healthy {
            return Err(format!("{name}: {}", info.replace("\r\n", " ")));
        }
    }
    Ok(())
}

/// `SENTINEL FAILOVER` asked of a Sentinel: any will do, one on a node that is up and not the
/// master if there is one. Says which node was master, who was asked and what it replied.
pub async fn sentinel_failover(
    deployment: &Deployment,
    key: &str,
) -> Result<serde_json::Value, ComposeError> {
    let master = deployment.master_of(key).await;
    let health = deployment.health().await?;
    let asked = health
        .iter()
        .filter(|(_, state)| state.running && !state.paused)
        .map(|(name, _)| name)
        .min_by_key(|name| Some(*name) == master.as_ref())
        .cloned();
    let Some(asked) = asked else {
        return Ok(serde_json::json!({ "refused": "no node is up" }));
    };
    let port = SENTINEL_PORT.to_string();
    let failover = [
        "redis-cli",
        "-p",
        &port,
        "SENTINEL",
        "FAILOVER",
        MASTER_NAME,
    ];
    let reply = deployment.exec(&asked, &failover).await?;
    Ok(serde_json::json!({
        "master": master,
        "asked": asked,
        "reply": reply.output.trim(),
    }))
}

/// `CLUSTER FAILOVER` asked of one of the cluster's replicas of `key`'s master (the `pick`-th
/// of those up; any replica up where the master is not known): a failover of another slot's
/// master moves no lock.
pub async fn cluster_failover(
    deployment: &Deployment,
    key: &str,
    pick: usize,
) -> Result<serde_json::Value, ComposeError> {
    let master = deployment.master_of(key).await;
    let master_ip = master
        .as_deref()
        .and_then(|name| deployment.node(name).ok())
        .map(|node| node.addr.ip().to_string());
    let (mut replicas, mut of_the_master) = (Vec::new(), Vec::new());
    for (name, state) in deployment.health().await? {
        if !state.running || state.paused {
            continue;
        }
        // A replica's ROLE: `slave`, its master's address and port, its link state, offset.
        let role = deployment.exec(&name, &["redis-cli", "ROLE"]).await?;
        let mut lines = role.output.lines();
        if lines.next() == Some("slave") {
            if master_ip.is_some() && lines.next() == master_ip.as_deref() {
                of_the_master.push(name.clone());
            }
            replicas.push(name);
        }
    }
    if !of_the_master.is_empty() {
        replicas = of_the_master;
    }
    if replicas.is_empty() {
        return Ok(serde_json::json!({ "refused": "no replica is up" }));
    }
    let asked = &replicas[pick % replicas.len()];
    let reply = deployment
        .exec(asked, &["redis-cli", "CLUSTER", "FAILOVER"])
        .await?;
    Ok(serde_json::json!({ "asked": asked, "reply": reply.output.trim() }))
}

/// Where the Sentinel beside the node at `addr` listens.
fn sentinel_of(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip(), SENTINEL_PORT)
}

/// A node's `CLUSTER INFO`.
async fn cluster_info(addr: SocketAddr) -> Result<String, String> {
    ask(addr, redis::cmd("CLUSTER").arg("INFO")).await
}

/// How many replicas a master has connected and in sync (`INFO replication`).
async fn connected_replicas(addr: SocketAddr) -> Result<usize, String> {
    let info: String = ask(addr, redis::cmd("INFO").arg("replication")).await?;
    // One `slaveN:ip=...,state=online,...` line per replica.
    Ok(info
        .lines()
        .filter(|l| l.starts_with("slave") && l.contains("state=online"))
        .count())
}

/// What a cluster node says of itself in its `CLUSTER NODES` line: whether it is a master of
/// `slot`, and its config epoch (the newer claim wins when two nodes claim one slot).
async fn claims_slot(addr: SocketAddr, slot: u16) -> Result<Option<u64>, String> {
    let nodes: String = ask(addr, redis::cmd("CLUSTER").arg("NODES")).await?;
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
        ask(addr, redis::cmd("SENTINEL").arg("master").arg(MASTER_NAME)).await?;
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
/// to answer: how the harness learns who is master, and what a node runs.
pub async fn ask<T: redis::FromRedisValue>(
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
