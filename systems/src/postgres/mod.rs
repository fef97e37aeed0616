//! PostgreSQL, which the article recommends: one server, its session-level advisory lock and
//! its transaction-level one. The server is also the database `lock-set`'s document lives in,
//! as an application keeps its data beside its locks.

mod clients;
mod server;
mod session;
mod topology;

use std::net::SocketAddr;
use std::sync::Arc;

use splitbrain_compose::{System, Topology};
use splitbrain_workloads::{ClientKind, Connection, Description};

use crate::{Reach, Service};

pub struct Postgres;

pub static POSTGRES: Postgres = Postgres;

impl Service for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn servers(&self) -> &'static [&'static dyn System] {
        static SERVERS: &[&dyn System] = &[&server::SERVER];
        SERVERS
    }

    fn topologies(&self) -> &'static [&'static dyn Topology] {
        &[&topology::Postgres]
    }

    fn clients(&self) -> &'static [ClientKind] {
        &[clients::pg_advisory::KIND, clients::pg_advisory_xact::KIND]
    }

    fn default_client(&self) -> &'static str {
        clients::pg_advisory::KIND.name
    }

    fn connection(&self, _: &'static dyn Topology, _: Reach) -> Arc<dyn Connection> {
        Arc::new(Server)
    }
}

/// A PostgreSQL server as its clients see it.
pub(crate) struct Server;

impl Connection for Server {
    fn deployment(&self) -> &'static str {
        "postgres"
    }

    fn describe(&self, nodes: &[(String, SocketAddr)]) -> Description {
        let mut fields = serde_json::Map::new();
        if let Some((_, addr)) = nodes.first() {
            let url = format!("postgresql://postgres@{addr}/postgres");
            fields.insert("connect".into(), url.into());
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
        let nodes = [("n1".to_string(), ([10, 0, 0, 11], 5432).into())];
        let description = Server.describe(&nodes);
        assert_eq!(description.roles, ["server"]);
        assert_eq!(
            description.fields["connect"],
            "postgresql://postgres@10.0.0.11:5432/postgres"
        );
    }
}
