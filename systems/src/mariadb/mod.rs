//! MariaDB: one server and its named locks (`GET_LOCK`), which Rails' `with_advisory_lock`,
//! Laravel's and django-mysql's users rely on.

mod get_lock;
mod server;
mod session;
mod topology;

use std::net::SocketAddr;
use std::sync::Arc;

use splitbrain_compose::{System, Topology};
use splitbrain_workloads::{ClientKind, Connection, Description};

use crate::{Reach, Service};

pub struct MariaDb;

pub static MARIADB: MariaDb = MariaDb;

impl Service for MariaDb {
    fn name(&self) -> &'static str {
        "mariadb"
    }

    fn servers(&self) -> &'static [&'static dyn System] {
        static SERVERS: &[&dyn System] = &[&server::SERVER];
        SERVERS
    }

    fn topologies(&self) -> &'static [&'static dyn Topology] {
        &[&topology::MariaDb]
    }

    fn clients(&self) -> &'static [ClientKind] {
        &[get_lock::KIND]
    }

    fn default_client(&self) -> &'static str {
        get_lock::KIND.name
    }

    fn connection(&self, _: &'static dyn Topology, _: Reach) -> Arc<dyn Connection> {
        Arc::new(Server)
    }
}

/// A MariaDB server as its clients see it.
pub(crate) struct Server;

impl Connection for Server {
    fn deployment(&self) -> &'static str {
        "mariadb"
    }

    fn describe(&self, nodes: &[(String, SocketAddr)]) -> Description {
        let mut fields = serde_json::Map::new();
        if let Some((_, addr)) = nodes.first() {
            fields.insert(
                "connect".into(),
                format!("mysql://root@{addr}/splitbrain").into(),
            );
        }
        Description {
            roles: vec!["server"; nodes.len()],
            fields,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_connect_with_a_url() {
        let nodes = [("n1".to_string(), ([10, 0, 0, 11], 3306).into())];
        let description = Server.describe(&nodes);
        assert_eq!(description.roles, ["server"]);
        assert_eq!(
            description.fields["connect"],
            "mysql://root@10.0.0.11:3306/splitbrain"
        );
    }
}
