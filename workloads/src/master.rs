//! The server a single-server lock client talks to: one fixed node; the master of a
//! Sentinel-watched deployment, found through the Sentinels as real clients find it and found
//! again after any error, since a failover moves it; or a Redis Cluster, through redis-rs's
//! cluster client, which follows MOVED and ASK and refreshes its slot map.

use std::net::SocketAddr;
use std::time::Duration;

use redis::FromRedisValue;

use crate::node::{invocation, NodeConn, NodeError};
use crate::{ClientConfig, Sentinels};

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
        if config.cluster {
            return ClusterConn::new(&config.nodes, timeout).map(Server::Cluster);
        }
        match (config.nodes.as_slice(), &config.sentinels) {
            (nodes, Some(sentinels)) => {
                Ok(Server::Master(MasterConn::new(sentinels, nodes, timeout)))
            }
            ([(node, addr)], None) => Ok(Server::Node(NodeConn::new(node.clone(), *addr, timeout))),
            (nodes, None) => Err(format!(
                "{who} works on one Redis server, and this deployment has {} independent \
                 nodes; use --deployment single or sentinel",
                nodes.len()
            )),
        }
    }

    /// The node the last command went to.
    pub fn name(&self) -> &str {
        match self {
            Server::Node(node) => node.name(),
            Server::Master(master) => master.current.as_ref().map_or("?", NodeConn::name),
            Server::Cluster(_) => "cluster",
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
                let timeout = cluster.timeout;
                let conn = cluster.connect().await?;
                let reply = tokio::time::timeout(timeout, cmd.query_async::<T>(conn)).await;
                cluster.settle(reply)
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
                let invocation = invocation(script, keys, args);
                let timeout = cluster.timeout;
                let conn = cluster.connect().await?;
                let reply = tokio::time::timeout(timeout, invocation.invoke_async::<T>(conn)).await;
                cluster.settle(reply)
            }
        }
    }
}

/// A Redis Cluster, as redis-rs's cluster client sees it.
pub struct ClusterConn {
    client: redis::cluster::ClusterClient,
    timeout: Duration,
    conn: Option<redis::cluster_async::ClusterConnection>,
}

impl ClusterConn {
    fn new(nodes: &[(String, SocketAddr)], timeout: Duration) -> Result<ClusterConn, String> {
        let client = redis::cluster::ClusterClientBuilder::new(
            nodes.iter().map(|(_, addr)| format!("redis://{addr}/")),
        )
        .connection_timeout(timeout)
        .response_timeout(timeout)
        .build()
        .map_err(|e| format!("the cluster client: {e}"))?;
        Ok(ClusterConn {
            client,
            timeout,
            conn: None,
        })
    }

    async fn connect(&mut self) -> Result<&mut redis::cluster_async::ClusterConnection, NodeError> {
        if self.conn.is_none() {
            let conn = tokio::time::timeout(self.timeout, self.client.get_async_connection())
                .await
                .map_err(|_| unreachable("connecting to the cluster timed out".into()))?
                .map_err(|e| unreachable(e.to_string()))?;
            self.conn = Some(conn);
        }
        Ok(self.conn.as_mut().expect("connected above"))
    }

    /// Like a node's: a server's refusal did not happen; anything else may have.
    fn settle<T>(
        &mut self,
        reply: Result<redis::RedisResult<T>, tokio::time::error::Elapsed>,
    ) -> Result<T, NodeError> {
        let message = match reply {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) if matches!(e.kind(), redis::ErrorKind::Server(_)) => {
                return Err(NodeError::Refused {
                    node: "cluster".into(),
                    message: e.to_string(),
                })
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("timed out after {} ms", self.timeout.as_millis()),
        };
        self.conn = None;
        Err(NodeError::Indeterminate {
            node: "cluster".into(),
            message,
        })
    }
}

fn unreachable(message: String) -> NodeError {
    NodeError::Unreachable {
        node: "cluster".into(),
        message,
    }
}

/// The master as the Sentinels name it.
pub struct MasterConn {
    master_name: String,
    sentinels: Vec<NodeConn>,
    /// Each node by name: where it is reached, and its own address (what Sentinels report).
    nodes: Vec<(String, SocketAddr, std::net::IpAddr)>,
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
                    let (_, sentinel) = sentinels_by_node.iter().find(|(n, _)| n == name)?;
                    Some((name.clone(), *reach, sentinel.ip()))
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
