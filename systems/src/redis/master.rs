//! The server a single-server lock client talks to: one fixed node; the master of a
//! Sentinel-watched deployment, found through the Sentinels as real clients find it and found
//! again after any error, since a failover moves it; or the master of a key's slot in a Redis
//! Cluster, routed by its slot map as cluster clients route.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use redis::FromRedisValue;

use splitbrain_workloads::ClientConfig;

use super::node::{NodeConn, NodeError};
use super::{Layout, RedisDeployment, Sentinels};

/// Where a single-server client sends its commands.
pub enum Server {
    Node(NodeConn),
    Master(MasterConn),
    Cluster(ClusterConn),
}

impl Server {
    /// The deployment's one node, or its master as the Sentinels name it; or why the
    /// deployment does not fit `who`, which needs one server to talk to.
    pub fn of(config: &ClientConfig, who: &str, timeout: Duration) -> Result<Server, String> {
        Server::on(config.connection(who)?, &config.nodes, who, timeout)
    }

    /// [`Server::of`] a Redis deployment's nodes.
    pub fn on(
        redis: &RedisDeployment,
        nodes: &[(String, SocketAddr)],
        who: &str,
        timeout: Duration,
    ) -> Result<Server, String> {
        match (&redis.layout, nodes) {
            (Layout::Cluster, nodes) => Ok(Server::Cluster(ClusterConn::new(nodes, timeout))),
            (Layout::Sentinel(sentinels), nodes) => {
                Ok(Server::Master(MasterConn::new(sentinels, nodes, timeout)))
            }
            (Layout::Standalone, [(node, addr)]) => {
                Ok(Server::Node(NodeConn::new(node.clone(), *addr, timeout)))
            }
            (Layout::Standalone, nodes) => Err(format!(
                "{who} works on one Redis server, and this deployment has {} independent \
                 nodes; use --deployment single, sentinel or cluster",
                nodes.len()
            )),
        }
    }

    /// The node the last command went to.
    pub fn name(&self) -> &str {
        match self {
            Server::Node(node) => node.name(),
            Server::Master(master) => master.current.as_ref().map_or("?", NodeConn::name),
            Server::Cluster(cluster) => cluster.name(),
        }
    }

    pub async fn query<T: FromRedisValue>(&mut self, cmd: &redis::Cmd) -> Result<T, NodeError> {
        match self {
            Server::Node(node) => node.query(cmd).await,
            Server::Master(master) => {
                let node = master.resolve().await?;
                let reply = node.query(cmd).await;
                master.settle(reply)
            }
            Server::Cluster(cluster) => {
                let key = key_of(cmd);
                cluster.route(key.as_deref(), Request::Command(cmd)).await
            }
        }
    }

    pub async fn eval<T: FromRedisValue>(
        &mut self,
        script: &redis::Script,
        keys: &[&str],
        args: &[&str],
    ) -> Result<T, NodeError> {
        match self {
            Server::Node(node) => node.eval(script, keys, args).await,
            Server::Master(master) => {
                let node = master.resolve().await?;
                let reply = node.eval(script, keys, args).await;
                master.settle(reply)
            }
            Server::Cluster(cluster) => {
                let key = keys.first().map(|key| key.as_bytes());
                cluster
                    .route(key, Request::Script(script, keys, args))
                    .await
            }
        }
    }
}

/// A Redis Cluster client of our own, routing as cluster clients do (Jedis, redis-py): each
/// command goes to the master that the slot map names for its key's slot; the map is read
/// with `CLUSTER SLOTS` from one node, corrected by each `MOVED`, and read again, from the next
/// node in turn, after any other failure, so that a node cut off with a stale view is not the
/// only one asked. Not redis-rs's cluster client, for two reasons: every op records the node
/// that answered it (coverage counts the writes a demoted master acknowledged), and a
/// `CLUSTERDOWN` or `TRYAGAIN` reply is a refusal, which redis-rs retries past the op's
/// timeout, turning an op that certainly failed into one of unknown outcome.
pub struct ClusterConn {
    nodes: Vec<NodeConn>,
    /// Where each node of `nodes` is reached, which is also the address it announces.
    addrs: Vec<SocketAddr>,
    /// Slot ranges (first, last, index into `nodes`); empty until read.
    slots: Vec<(u16, u16, usize)>,
    /// The node to read the slot map from next.
    next_source: usize,
    /// The node the last command went to (where `WAIT`, which names no key, must go too).
    last: usize,
}

/// What a cluster client sends: a command, or a script with its keys and arguments.
enum Request<'r> {
    Command(&'r redis::Cmd),
    Script(&'r redis::Script, &'r [&'r str], &'r [&'r str]),
}

impl Request<'_> {
    async fn send<T: FromRedisValue>(&self, node: &mut NodeConn) -> Result<T, NodeError> {
        match self {
            Request::Command(cmd) => node.query(cmd).await,
            Request::Script(script, keys, args) => node.eval(script, keys, args).await,
        }
    }
}

/// How many `MOVED` redirections one command follows before giving up.
const MOST_REDIRECTS: usize = 3;

impl ClusterConn {
    fn new(nodes: &[(String, SocketAddr)], timeout: Duration) -> ClusterConn {
        ClusterConn {
            nodes: nodes
                .iter()
                .map(|(name, addr)| NodeConn::new(name.clone(), *addr, timeout))
                .collect(),
            addrs: nodes.iter().map(|(_, addr)| *addr).collect(),
            slots: Vec::new(),
            next_source: 0,
            last: 0,
        }
    }

    fn name(&self) -> &str {
        self.nodes.get(self.last).map_or("?", NodeConn::name)
    }

    /// Sends `send` to the master of `key`'s slot (or, without a key, to the last node used),
    /// following `MOVED`; any other failure makes the next command read the slot map again.
    async fn route<T: FromRedisValue>(
        &mut self,
        key: Option<&[u8]>,
        request: Request<'_>,
    ) -> Result<T, NodeError> {
        let mut redirects = 0;
        loop {
            if let Some(key) = key {
                self.last = self.master_of(slot_of(key)).await?;
            }
            let reply = request.send(&mut self.nodes[self.last]).await;
            match reply {
                Err(NodeError::Redirected { ref to, .. }) if redirects < MOST_REDIRECTS => {
                    redirects += 1;
                    let Some(slot) = key.map(slot_of) else {
                        return reply;
                    };
                    match self.addrs.iter().position(|addr| addr.to_string() == *to) {
                        Some(node) => self.slots.insert(0, (slot, slot, node)),
                        None => {
                            self.slots.clear();
                            return reply;
                        }
                    }
                }
                Err(_) => {
                    self.slots.clear();
                    return reply;
                }
                Ok(_) => return reply,
            }
        }
    }

    /// The node serving `slot`, reading the slot map first if it is not known.
    async fn master_of(&mut self, slot: u16) -> Result<usize, NodeError> {
        if self.slots.is_empty() {
            self.read_slot_map().await?;
        }
        self.slots
            .iter()
            .find(|(first, last, _)| (*first..=*last).contains(&slot))
            .map(|(_, _, node)| *node)
            .ok_or_else(|| NodeError::Unreachable {
                node: "cluster".into(),
                message: format!("no node serves slot {slot}"),
            })
    }

    /// Reads `CLUSTER SLOTS` from the nodes in turn, starting after the last one asked.
    async fn read_slot_map(&mut self) -> Result<(), NodeError> {
        let ask = redis::cmd("CLUSTER").arg("SLOTS").clone();
        for _ in 0..self.nodes.len() {
            let source = self.next_source;
            self.next_source = (source + 1) % self.nodes.len();
            // Each range is [first, last, [ip, port, id, ...], replicas...].
            let Ok(ranges) = self.nodes[source]
                .query::<Vec<Vec<redis::Value>>>(&ask)
                .await
            else {
                continue;
            };
            let addrs = &self.addrs;
            self.slots = ranges
                .iter()
                .filter_map(|range| {
                    let [first, last, master, ..] = range.as_slice() else {
                        return None;
                    };
                    let [ip, port, ..] =
                        &redis::from_redis_value_ref::<Vec<redis::Value>>(master).ok()?[..]
                    else {
                        return None;
                    };
                    let ip: String = redis::from_redis_value_ref(ip).ok()?;
                    let port: u16 = redis::from_redis_value_ref(port).ok()?;
                    let node = addrs
                        .iter()
                        .position(|addr| addr.to_string() == format!("{ip}:{port}"))?;
                    let slot = |value| redis::from_redis_value_ref::<u16>(value).ok();
                    Some((slot(first)?, slot(last)?, node))
                })
                .collect();
            if !self.slots.is_empty() {
                return Ok(());
            }
        }
        Err(NodeError::Unreachable {
            node: "cluster".into(),
            message: "no node answered CLUSTER SLOTS with a slot map".into(),
        })
    }
}

/// The cluster slot of a key: CRC16 (XMODEM) of its hash tag, or of the whole key without one.
fn slot_of(key: &[u8]) -> u16 {
    let tag = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    crc16::State::<crc16::XMODEM>::calculate(tag.unwrap_or(key)) % 16384
}

/// The key a command acts on: its first argument, except for the keyless `WAIT`.
fn key_of(cmd: &redis::Cmd) -> Option<Vec<u8>> {
    let mut args = cmd.args_iter().map(|arg| match arg {
        redis::Arg::Simple(bytes) => bytes.to_vec(),
        _ => Vec::new(),
    });
    let name = args.next()?;
    (!name.eq_ignore_ascii_case(b"WAIT"))
        .then(|| args.next())
        .flatten()
}

/// The master as the Sentinels name it.
pub struct MasterConn {
    master_name: String,
    sentinels: Vec<NodeConn>,
    /// Each node by name: where it is reached, and its own address (what Sentinels report).
    nodes: Vec<(String, SocketAddr, IpAddr)>,
    timeout: Duration,
    current: Option<NodeConn>,
}

impl MasterConn {
    /// `nodes` are (name, where to reach it).
    pub fn new(
        sentinels: &Sentinels,
        nodes: &[(String, SocketAddr)],
        timeout: Duration,
    ) -> MasterConn {
        let sentinels_by_node = &sentinels.addrs;
        MasterConn {
            master_name: sentinels.master.clone(),
            sentinels: sentinels_by_node
                .iter()
                .map(|(name, addr)| NodeConn::new(format!("{name} sentinel"), *addr, timeout))
                .collect(),
            nodes: nodes
                .iter()
                .filter_map(|(name, reach)| {
                    let (_, own) = sentinels.announced.iter().find(|(n, _)| n == name)?;
                    Some((name.clone(), *reach, *own))
                })
                .collect(),
            timeout,
            current: None,
        }
    }

    /// The current master, asking the Sentinels (the first that answers) if it is not known.
    async fn resolve(&mut self) -> Result<&mut NodeConn, NodeError> {
        if self.current.is_none() {
            let ask = redis::cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg(&self.master_name)
                .clone();
            let mut answers = Vec::new();
            for sentinel in &mut self.sentinels {
                match sentinel.query::<Option<(String, u16)>>(&ask).await {
                    Ok(Some((ip, _))) => {
                        answers.push(ip);
                        break;
                    }
                    Ok(None) | Err(_) => continue,
                }
            }
            let Some(ip) = answers.pop() else {
                return Err(NodeError::Unreachable {
                    node: "sentinel".into(),
                    message: "no Sentinel named a master".into(),
                });
            };
            let Some((name, reach, _)) =
                self.nodes.iter().find(|(_, _, own)| own.to_string() == ip)
            else {
                return Err(NodeError::Unreachable {
                    node: "sentinel".into(),
                    message: format!("the Sentinels named {ip}, which is no node of this run"),
                });
            };
            self.current = Some(NodeConn::new(name.clone(), *reach, self.timeout));
        }
        Ok(self.current.as_mut().expect("resolved above"))
    }

    /// After a failed command the master may have moved: ask the Sentinels again next time.
    fn settle<T>(&mut self, reply: Result<T, NodeError>) -> Result<T, NodeError> {
        if reply.is_err() {
            self.current = None;
        }
        reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_the_slots_redis_computes() {
        // Values from CLUSTER KEYSLOT on Redis 7.
        assert_eq!(slot_of(b"foo"), 12182);
        assert_eq!(slot_of(b"lock"), 8718);
        assert_eq!(slot_of(b"{app}lock"), 6805);
        assert_eq!(slot_of(b"app"), 6805);
        assert_eq!(slot_of(b"{}lock"), 6348, "an empty tag is no tag");
    }

    #[test]
    fn commands_are_routed_by_their_first_argument_but_wait_by_none() {
        let set = redis::cmd("SET").arg("lock").arg("token").clone();
        assert_eq!(key_of(&set), Some(b"lock".to_vec()));
        assert_eq!(key_of(&redis::cmd("wait").arg(1).arg(100).clone()), None);
    }
}
