//! Redis, and Valkey: the article's subject. Four deployments (one server, Redlock's
//! independent masters, a master watched by Sentinels, a Redis Cluster), the article's lock
//! clients, and the data workloads' registers and set as Redis keys.

mod clients;
mod cluster;
mod data;
mod master;
mod node;
mod redlock;
mod roles;
mod sentinel;
mod server;
mod settings;
mod single;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use serde_json::json;
use splitbrain_compose::{System, Topology};
use splitbrain_workloads::workload::{Registers, Set};
use splitbrain_workloads::{ClientConfig, ClientKind, Connection, Description};

use crate::{Reach, Service};

pub struct Redis;

pub static REDIS: Redis = Redis;

impl Service for Redis {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn servers(&self) -> &'static [&'static dyn System] {
        static SERVERS: &[&dyn System] =
            &[&server::REDIS_7_0, &server::REDIS_8_0, &server::VALKEY_8_1];
        SERVERS
    }

    fn topologies(&self) -> &'static [&'static dyn Topology] {
        &[
            &single::Single,
            &redlock::Redlock,
            &sentinel::Sentinel,
            &cluster::Cluster,
        ]
    }

    fn clients(&self) -> &'static [ClientKind] {
        clients::CLIENTS
    }

    fn default_client(&self) -> &'static str {
        "redlock"
    }

    fn connection(&self, topology: &'static dyn Topology, reach: Reach) -> Arc<dyn Connection> {
        let layout = match topology.name() {
            name if name == cluster::Cluster.name() => Layout::Cluster,
            name if name == sentinel::Sentinel.name() => Layout::Sentinel(Sentinels {
                master: roles::MASTER_NAME.into(),
                addrs: reach.companions,
                announced: reach.announced,
            }),
            _ => Layout::Standalone,
        };
        Arc::new(RedisDeployment {
            deployment: topology.name(),
            layout,
        })
    }
}

/// How a Redis deployment looks to its clients.
pub(crate) struct RedisDeployment {
    deployment: &'static str,
    layout: Layout,
}

/// How a Redis deployment's nodes relate, which decides how a client finds a key's master.
pub(crate) enum Layout {
    /// Every node stands alone: one server, or Redlock's independent masters.
    Standalone,
    /// One master (the first node at the start) and its replicas, named by these Sentinels.
    Sentinel(Sentinels),
    /// A Redis Cluster: each key's slot has its master.
    Cluster,
}

/// The Sentinels of a deployment, and the name they know the master by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sentinels {
    pub master: String,
    /// Each Sentinel by the node it runs on, and where the client reaches it (the node's
    /// address, or the client group's link to the node).
    pub addrs: Vec<(String, SocketAddr)>,
    /// Each node's own address: what a Sentinel answers when it names the master.
    pub announced: Vec<(String, IpAddr)>,
}

impl RedisDeployment {
    /// How many replicas the master has that `WAIT` can count on (only Sentinel's are known:
    /// every node but the master).
    pub(crate) fn replicas(&self, config: &ClientConfig) -> usize {
        match self.layout {
            Layout::Sentinel(_) => config.nodes.len().saturating_sub(1),
            _ => 0,
        }
    }
}

impl Connection for RedisDeployment {
    fn deployment(&self) -> &'static str {
        self.deployment
    }

    fn describe(&self, nodes: &[(String, SocketAddr)]) -> Description {
        let mut fields = serde_json::Map::new();
        let role = |i: usize| match &self.layout {
            Layout::Standalone => "master",
            // Sentinel's deployment starts with the first node as master.
            Layout::Sentinel(_) if i == 0 => "master",
            Layout::Sentinel(_) => "replica",
            Layout::Cluster => "seed",
        };
        if let Layout::Sentinel(sentinels) = &self.layout {
            let endpoint = |(name, addr): &(String, SocketAddr)| json!({"name": name, "host": addr.ip().to_string(), "port": addr.port()});
            fields.insert(
                "sentinels".into(),
                json!({
                    "master_name": sentinels.master,
                    "nodes": sentinels.addrs.iter().map(endpoint).collect::<Vec<_>>(),
                }),
            );
        }
        Description {
            roles: (0..nodes.len()).map(role).collect(),
            fields,
        }
    }

    fn registers(&self, nodes: &[(String, SocketAddr)]) -> Result<Box<dyn Registers>, String> {
        data::registers(self, nodes)
    }

    fn set(&self, nodes: &[(String, SocketAddr)]) -> Result<Box<dyn Set>, String> {
        data::set(self, nodes)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use super::*;

    fn nodes(n: u8) -> Vec<(String, SocketAddr)> {
        (1..=n)
            .map(|i| (format!("n{i}"), ([10, 0, 0, 10 + i], 6379).into()))
            .collect()
    }

    /// A client config for `n` nodes of `deployment`, its Sentinels on port 26379.
    pub(crate) fn config(deployment: &str, n: u8) -> ClientConfig {
        let (_, topology) = crate::find_topology(deployment).unwrap();
        let reach = Reach {
            companions: (1..=n)
                .map(|i| (format!("n{i}"), ([10, 0, 0, 10 + i], 26379).into()))
                .collect(),
            announced: Vec::new(),
        };
        let connection = REDIS.connection(topology, reach);
        ClientConfig::new(nodes(n), connection, Duration::from_secs(2))
    }

    #[test]
    fn a_sentinel_deployment_names_its_sentinels_and_its_first_master() {
        let config = config("sentinel", 3);
        let description = config.connection.describe(&config.nodes);
        assert_eq!(description.roles, ["master", "replica", "replica"]);
        assert_eq!(description.fields["sentinels"]["master_name"], "mymaster");
        assert_eq!(
            description.fields["sentinels"]["nodes"][2],
            json!({"name": "n3", "host": "10.0.0.13", "port": 26379})
        );
        assert_eq!(config.connection.deployment(), "sentinel");
    }

    #[test]
    fn standalone_and_cluster_nodes_are_masters_and_seeds() {
        let single = config("single", 1);
        assert_eq!(single.connection.describe(&single.nodes).roles, ["master"]);
        assert_eq!(single.connection.deployment(), "single");
        let cluster = config("cluster", 6);
        let description = cluster.connection.describe(&cluster.nodes);
        assert_eq!(description.roles[5], "seed");
        assert!(description.fields.is_empty());
    }
}
