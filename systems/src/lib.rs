//! splitbrain's systems under test, one folder each: its server programs and their images, its
//! deployments (topologies), how its clients reach a deployment (its [`Connection`]), its
//! lock clients, and where the data workloads keep their data on it. A system is registered
//! by one line in [`SERVICES`]; everything else asks this crate.
//!
//! The generic parts they plug into live elsewhere: a server program and a topology are
//! `splitbrain-compose`'s [`System`] and [`Topology`], which it brings up in containers; a
//! lock client is `splitbrain-workloads`' [`LockClient`], registered as a [`ClientKind`].
//!
//! [`LockClient`]: splitbrain_workloads::LockClient

mod etcd;
mod mariadb;
mod postgres;
mod redis;
mod session_error;
mod zookeeper;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use splitbrain_checker::words::one_of;
use splitbrain_compose::topology::Setting;
use splitbrain_compose::{System, Topology};
use splitbrain_workloads::{ClientKind, Connection, EXEC, EXEC_PREFIX};

/// A lock service: one program's servers, deployments and lock clients.
pub trait Service: Sync {
    /// The program (`redis`, `etcd`): what its servers are versions of.
    fn name(&self) -> &'static str;
    /// Every version of it that `--server` can name, the default first.
    fn servers(&self) -> &'static [&'static dyn System];
    /// Its deployments, for `--deployment`.
    fn topologies(&self) -> &'static [&'static dyn Topology];
    /// Its lock clients, for `--client`.
    fn clients(&self) -> &'static [ClientKind];
    /// The client a run uses when `--client` is left out: the program's own lock.
    fn default_client(&self) -> &'static str;
    /// How `topology`'s deployment looks to a group of its clients that reaches it so.
    fn connection(&self, topology: &'static dyn Topology, reach: Reach) -> Arc<dyn Connection>;
}

impl std::fmt::Debug for dyn Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a group of clients is told of a deployment besides its nodes' addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// Each companion (a Redis node's Sentinel) by the node it runs on, where these clients
    /// reach it, on deployments whose nodes run one.
    pub companions: Vec<(String, SocketAddr)>,
    /// Each node's own address on the run's network: what a node answers when it names
    /// another.
    pub announced: Vec<(String, IpAddr)>,
}

/// Every system under test, in the article's order: Redis, then the services it recommends.
pub static SERVICES: &[&dyn Service] = &[
    &redis::REDIS,
    &etcd::ETCD,
    &zookeeper::ZOOKEEPER,
    &postgres::POSTGRES,
    &mariadb::MARIADB,
];

/// Every deployment, by system.
pub fn topologies() -> impl Iterator<Item = &'static dyn Topology> {
    SERVICES.iter().flat_map(|s| s.topologies().iter().copied())
}

/// Every option that only some deployments take, once each, in the order the deployments
/// declare them: a setting taken by several (Redis's `persistence`) is declared alike by each.
pub fn settings() -> Vec<&'static Setting> {
    let mut settings: Vec<&'static Setting> = Vec::new();
    for setting in topologies().flat_map(|t| t.settings()) {
        if !settings.iter().any(|s| s.id == setting.id) {
            settings.push(setting);
        }
    }
    settings
}

/// Every server program and version, by system.
pub fn servers() -> impl Iterator<Item = &'static dyn System> {
    SERVICES.iter().flat_map(|s| s.servers().iter().copied())
}

/// Every lock client, by system, and last the external-program client.
pub fn clients() -> impl Iterator<Item = &'static ClientKind> {
    SERVICES
        .iter()
        .flat_map(|s| s.clients().iter())
        .chain(std::iter::once(&EXEC))
}

/// Looks a deployment up by its `--deployment` name, with its system.
pub fn find_topology(name: &str) -> Option<(&'static dyn Service, &'static dyn Topology)> {
    SERVICES.iter().find_map(|&service| {
        let topology = service.topologies().iter().find(|t| t.name() == name)?;
        Some((service, *topology))
    })
}

/// Looks a server up by its `--server` name, with its system.
pub fn find_server(name: &str) -> Option<(&'static dyn Service, &'static dyn System)> {
    SERVICES.iter().find_map(|&service| {
        let server = service.servers().iter().find(|s| s.name() == name)?;
        Some((service, *server))
    })
}

/// Looks a client up by its `--client` name; `exec:<command>` is the external-program client.
pub fn find_client(name: &str) -> Option<&'static ClientKind> {
    if name.starts_with(EXEC_PREFIX) {
        return Some(&EXEC);
    }
    clients().find(|c| c.name == name)
}

/// The system a client speaks to; `None` for the external-program client, which speaks to
/// whatever its program does.
pub fn system_of(client: &ClientKind) -> Option<&'static dyn Service> {
    SERVICES
        .iter()
        .copied()
        .find(|s| s.clients().iter().any(|c| c.name == client.name))
}

/// Refuses a client of another system than `service`, naming the clients and deployments
/// that would fit.
pub fn speaks_to(client: &ClientKind, service: &dyn Service) -> Result<(), String> {
    let Some(theirs) = system_of(client) else {
        return Ok(());
    };
    if theirs.name() == service.name() {
        return Ok(());
    }
    Err(format!(
        "{} speaks {}, and this deployment runs {} (its lock clients: {}); use --deployment {}",
        client.name,
        theirs.name(),
        service.name(),
        service
            .clients()
            .iter()
            .map(|c| c.name)
            .collect::<Vec<_>>()
            .join(", "),
        one_of(
            &theirs
                .topologies()
                .iter()
                .map(|t| t.name())
                .collect::<Vec<_>>()
        )
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_unique_and_found_with_its_system() {
        for service in SERVICES {
            for topology in service.topologies() {
                let (found, _) = find_topology(topology.name()).unwrap();
                assert_eq!(found.name(), service.name(), "{}", topology.name());
                assert!(
                    service
                        .servers()
                        .iter()
                        .any(|s| s.name() == topology.system().name()),
                    "{} runs a server of its own system",
                    topology.name()
                );
            }
            for server in service.servers() {
                assert_eq!(find_server(server.name()).unwrap().0.name(), service.name());
                let same_image = servers()
                    .filter(|s| s.image().tag() == server.image().tag())
                    .count();
                assert_eq!(same_image, 1, "{} shares its image", server.name());
            }
            for client in service.clients() {
                assert_eq!(
                    system_of(find_client(client.name).unwrap()).map(|s| s.name()),
                    Some(service.name())
                );
            }
            assert!(service
                .clients()
                .iter()
                .any(|c| c.name == service.default_client()));
        }
        assert!(find_topology("nonsense").is_none());
        assert_eq!(find_client("exec:python3 x.py").unwrap().name, EXEC.name);
    }

    #[test]
    fn a_setting_several_deployments_take_is_declared_alike_by_each() {
        for topology in topologies() {
            for setting in topology.settings() {
                let first = settings().into_iter().find(|s| s.id == setting.id).unwrap();
                assert_eq!(first, setting, "{} in {}", setting.id, topology.name());
                assert!(topology.takes().contains(&setting.id));
            }
        }
    }

    /// `Settings::count`, `duration` and `choice` fall back on the default, so a default of
    /// the declared kind is what keeps them from panicking.
    #[test]
    fn every_setting_defaults_to_a_value_of_its_kind() {
        use splitbrain_compose::topology::setting::{Kind, Value};
        for setting in settings() {
            let fits = match (setting.kind, setting.default) {
                (Kind::Count { least }, Value::Count(n)) => n >= least,
                (Kind::Duration, Value::Duration(_)) => true,
                (Kind::Choice(names), Value::Choice(name)) => names.contains(&name),
                _ => false,
            };
            assert!(
                fits,
                "{}: {:?} is not a {:?}",
                setting.id, setting.default, setting.kind
            );
        }
    }

    #[test]
    fn a_client_of_another_system_is_refused_with_the_ones_that_fit() {
        let redis = find_topology("single").unwrap().0;
        let zookeeper = find_topology("zookeeper").unwrap().0;
        let recipe = find_client("zk-recipe").unwrap();
        assert_eq!(speaks_to(recipe, zookeeper), Ok(()));
        let refused = speaks_to(recipe, redis).unwrap_err();
        assert!(
            refused.starts_with("zk-recipe speaks zookeeper, and this deployment runs redis"),
            "{refused}"
        );
        assert!(refused.ends_with("use --deployment zookeeper"), "{refused}");
        let refused = speaks_to(find_client("redlock").unwrap(), zookeeper).unwrap_err();
        assert!(
            refused.ends_with("use --deployment single, redlock, sentinel or cluster"),
            "{refused}"
        );
        assert_eq!(speaks_to(&EXEC, zookeeper), Ok(()));
    }
}
