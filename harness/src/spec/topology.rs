//! The deployment part of a run: which lock service, in which topology, on which server.

use std::time::Duration;

use splitbrain_compose::topology::{
    ClusterOptions, NodeSpec, Persistence, SentinelOptions, TopologyOptions,
};
use splitbrain_compose::{System, Topology};
use splitbrain_systems::{find_topology, Service};

use super::catalog::{deployment_help, server_help};
use super::part::part;
use super::{names, parse};

part! {
    /// Where the lock lives.
    pub struct TopologyPart {
        @shown
        /// Deployment (the help lists every one, from the registry of systems).
        #[arg(long, default_value = "redlock", value_parser = parse::deployment, help = deployment_help())]
        #[serde(with = "names::by_name")]
        pub deployment: &'static dyn Topology,
        /// The server version the deployment runs (the help lists them, from the registry).
        #[arg(long, value_parser = parse::server, help = server_help())]
        #[serde(default, with = "names::opt_by_name", skip_serializing_if = "Option::is_none")]
        pub server: Option<&'static dyn System>,
        /// Number of nodes, for deployments where it can vary (redlock: 5).
        #[arg(long)]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub nodes: Option<usize>,
        /// What a killed node keeps: none | everysec | always (AOF fsync policy).
        #[arg(long, default_value = "none", value_parser = parse::persistence)]
        #[serde(with = "names::persistence")]
        pub persistence: Persistence,
        /// Sentinel: how many Sentinels must agree that the master is down.
        #[arg(long, default_value_t = 2, allow_hyphen_values = true, value_parser = parse::count)]
        #[serde(default)]
        pub sentinel_quorum: usize,
        /// Sentinel: how long the master must be unreachable before a Sentinel thinks it down.
        #[arg(long, default_value = "2s", value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(default, with = "names::millis")]
        pub down_after: Duration,
        /// Sentinel: the failover timeout.
        #[arg(long, default_value = "6s", value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(default, with = "names::millis")]
        pub failover_timeout: Duration,
        /// Sentinel: the master refuses writes with fewer replicas than this connected.
        #[arg(long, default_value_t = 0)]
        #[serde(default)]
        pub min_replicas_to_write: usize,
        /// Cluster: replicas per master.
        #[arg(long, default_value_t = 1)]
        #[serde(default)]
        pub cluster_replicas: usize,
        /// Cluster: how long a master may be unreachable before it is failed over.
        #[arg(long, default_value = "2s", value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(default, with = "names::millis")]
        pub cluster_node_timeout: Duration,
    }
}

impl TopologyPart {
    /// The lock service the deployment runs.
    pub fn service(&self) -> &'static dyn Service {
        let (service, _) = find_topology(self.deployment.name())
            .expect("a spec's deployment is a registered one: it was found by its name");
        service
    }

    /// The server the nodes run: `--server`, or the deployment's own.
    pub fn server(&self) -> &'static dyn System {
        self.server.unwrap_or(self.deployment.system())
    }

    pub fn options(&self) -> TopologyOptions {
        TopologyOptions {
            nodes: self.nodes,
            persistence: self.persistence,
            sentinel: SentinelOptions {
                quorum: self.sentinel_quorum,
                down_after: self.down_after,
                failover_timeout: self.failover_timeout,
                min_replicas_to_write: self.min_replicas_to_write,
            },
            cluster: ClusterOptions {
                replicas: self.cluster_replicas,
                node_timeout: self.cluster_node_timeout,
            },
        }
    }

    /// The nodes these options lay out, or why they cannot be.
    pub fn check(&self) -> Result<Vec<NodeSpec>, String> {
        let service = self.service();
        if let Some(server) = self.server {
            if !service.servers().iter().any(|s| s.name() == server.name()) {
                let theirs = splitbrain_systems::find_server(server.name())
                    .map_or("another service", |(theirs, _)| theirs.name());
                return Err(format!(
                    "--server {} is {theirs}, and --deployment {} runs {}; choose one of: {}",
                    server.name(),
                    self.deployment.name(),
                    service.name(),
                    parse::names(service.servers().iter().map(|s| s.name()))
                ));
            }
        }
        // Each node is a container at an address of its own on the run's /24 network.
        let most = splitbrain_compose::MOST_NODES;
        let cluster_nodes = 3usize.saturating_mul(self.cluster_replicas.saturating_add(1));
        if self.nodes.is_some_and(|n| n > most) || cluster_nodes > most {
            return Err(format!(
                "a deployment has at most {most} nodes (each is a container at an address of \
                 its own on the run's /24 network); lower --nodes or --cluster-replicas"
            ));
        }
        self.deployment
            .nodes(&self.options())
            .map_err(|e| format!("--deployment {}: {e}", self.deployment.name()))
    }
}
