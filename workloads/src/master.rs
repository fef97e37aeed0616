//! The server a single-server lock client talks to: one fixed node, or the master of a
//! Sentinel-watched deployment, found through the Sentinels as real clients find it and found
//! again after any error, since a failover moves it.

use std::net::SocketAddr;
use std::time::Duration;

use redis::FromRedisValue;

use crate::node::{NodeConn, NodeError};
use crate::{ClientConfig, Sentinels};

/// Where a single-server client sends its commands.
pub enum Server {
    Node(NodeConn),
    Master(MasterConn),
}

impl Server {
    /// The deployment's one node, or its master as the Sentinels name it; or why the
    /// deployment does not fit `who`, which needs one server to talk to.
    pub fn of(config: &ClientConfig, who: &str, timeout: Duration) -> Result<Server, String> {
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
        }
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
