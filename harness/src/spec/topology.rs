//! The deployment part of a run: which lock service, in which topology, on which server.

use splitbrain_compose::topology::{NodeSpec, TopologyOptions};
use splitbrain_compose::{System, Topology};
use splitbrain_systems::{find_topology, Service};

use super::catalog::{deployment_help, server_help};
use super::part::part;
use super::settings::RunSettings;
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
        @flatten
        /// The options only some deployments take, as they declare them (the help lists
        /// each under its flag).
        #[command(flatten)]
        #[serde(flatten)]
        pub settings: RunSettings,
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
            settings: self.settings.0.clone(),
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
        let too_many = || {
            format!(
                "a deployment has at most {most} nodes (each is a container at an address of \
                 its own on the run's /24 network); lower --nodes"
            )
        };
        if self.nodes.is_some_and(|n| n > most) {
            return Err(too_many());
        }
        let nodes = self
            .deployment
            .nodes(&self.options())
            .map_err(|e| format!("--deployment {}: {e}", self.deployment.name()))?;
        if nodes.len() > most {
            return Err(too_many());
        }
        Ok(nodes)
    }
}
