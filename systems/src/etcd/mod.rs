//! etcd, which the article recommends: a Raft cluster of members, the lease lock it describes
//! and etcd's own lock API, and the `register` workload's registers as etcd keys.

mod clients;
mod connection;
mod data;
mod server;
mod topology;

use std::net::SocketAddr;
use std::sync::Arc;

use splitbrain_compose::{System, Topology};
use splitbrain_workloads::workload::Registers;
use splitbrain_workloads::{ClientKind, Connection, Description};

use crate::{Reach, Service};

pub struct Etcd;

pub static ETCD: Etcd = Etcd;

impl Service for Etcd {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn servers(&self) -> &'static [&'static dyn System] {
        static SERVERS: &[&dyn System] = &[&server::SERVER];
        SERVERS
    }

    fn topologies(&self) -> &'static [&'static dyn Topology] {
        &[&topology::Etcd]
    }

    fn clients(&self) -> &'static [ClientKind] {
        &[clients::lease::KIND, clients::lock::KIND]
    }

    fn default_client(&self) -> &'static str {
        clients::lease::KIND.name
    }

    fn connection(&self, _: &'static dyn Topology, _: Reach) -> Arc<dyn Connection> {
        Arc::new(EtcdDeployment)
    }
}

/// An etcd cluster as its clients see it: any member takes requests, and forwards writes to
/// its leader.
pub(crate) struct EtcdDeployment;

impl Connection for EtcdDeployment {
    fn deployment(&self) -> &'static str {
        "etcd"
    }

    fn describe(&self, nodes: &[(String, SocketAddr)]) -> Description {
        let endpoints: Vec<String> = nodes.iter().map(|(_, a)| format!("http://{a}")).collect();
        let mut fields = serde_json::Map::new();
        fields.insert("connect".into(), endpoints.join(",").into());
        Description {
            roles: vec!["member"; nodes.len()],
            fields,
        }
    }

    fn registers(&self, nodes: &[(String, SocketAddr)]) -> Result<Box<dyn Registers>, String> {
        Ok(data::registers(nodes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_connect_to_every_member() {
        let nodes: Vec<(String, SocketAddr)> = (1..=2)
            .map(|i| (format!("n{i}"), ([10, 0, 0, 10 + i], 2379).into()))
            .collect();
        let description = EtcdDeployment.describe(&nodes);
        assert_eq!(description.roles, ["member", "member"]);
        assert_eq!(
            description.fields["connect"],
            "http://10.0.0.11:2379,http://10.0.0.12:2379"
        );
    }
}
