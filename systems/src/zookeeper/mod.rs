//! ZooKeeper, which the article recommends: an ensemble of members, and its lock recipe.

mod recipe;
mod server;
mod session;
mod topology;

use std::net::SocketAddr;
use std::sync::Arc;

use splitbrain_compose::{System, Topology};
use splitbrain_workloads::{ClientKind, Connection, Description};

use crate::{Reach, Service};

pub struct ZooKeeper;

pub static ZOOKEEPER: ZooKeeper = ZooKeeper;

impl Service for ZooKeeper {
    fn name(&self) -> &'static str {
        "zookeeper"
    }

    fn servers(&self) -> &'static [&'static dyn System] {
        static SERVERS: &[&dyn System] = &[&server::SERVER];
        SERVERS
    }

    fn topologies(&self) -> &'static [&'static dyn Topology] {
        &[&topology::ZooKeeper]
    }

    fn clients(&self) -> &'static [ClientKind] {
        &[recipe::KIND]
    }

    fn default_client(&self) -> &'static str {
        recipe::KIND.name
    }

    fn connection(&self, _: &'static dyn Topology, _: Reach) -> Arc<dyn Connection> {
        Arc::new(Ensemble)
    }
}

/// A ZooKeeper ensemble as its clients see it: any member serves a session, and forwards
/// writes to its leader.
pub(crate) struct Ensemble;

impl Connection for Ensemble {
    fn deployment(&self) -> &'static str {
        "zookeeper"
    }

    fn describe(&self, nodes: &[(String, SocketAddr)]) -> Description {
        let hosts: Vec<String> = nodes.iter().map(|(_, a)| a.to_string()).collect();
        let mut fields = serde_json::Map::new();
        fields.insert("connect".into(), hosts.join(",").into());
        Description {
            roles: vec!["member"; nodes.len()],
            fields,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_connect_to_every_member() {
        let nodes: Vec<(String, SocketAddr)> = (1..=3)
            .map(|i| (format!("n{i}"), ([10, 0, 0, 10 + i], 2181).into()))
            .collect();
        let description = Ensemble.describe(&nodes);
        assert_eq!(description.roles, ["member"; 3]);
        assert_eq!(
            description.fields["connect"],
            "10.0.0.11:2181,10.0.0.12:2181,10.0.0.13:2181"
        );
    }
}
