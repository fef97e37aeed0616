//! What runs in a deployment's containers: one module per server program (its image, the
//! command that starts a node, what "answers" and "formed" mean, who leads, its version and
//! log). A topology names its system; [`crate::Deployment`] asks the system and nothing else
//! about the program. Adding one is a module here, an image folder under `images/`, and a line
//! in [`SYSTEMS`].

mod etcd;
mod postgres;
mod redis;
mod zookeeper;

use std::net::SocketAddr;

use futures_util::future::BoxFuture;

use crate::image::Recipe;

pub use self::etcd::{Etcd, ETCD, ETCD_CLIENT_PORT, ETCD_PEER_PORT};
pub use self::postgres::{Postgres, POSTGRES, POSTGRES_PORT};
pub(crate) use self::redis::ask as ask_redis;
pub use self::redis::{Redis, REDIS, REDIS_8_0, REDIS_PORT, VALKEY_8_1};
pub use self::zookeeper::{
    ZooKeeper, ZOOKEEPER, ZOOKEEPER_CLIENT_PORT, ZOOKEEPER_ELECTION_PORT, ZOOKEEPER_QUORUM_PORT,
};

/// A server program under test.
pub trait System: Sync {
    /// The name users pass to `--server`: `redis-7.0`, `valkey-8.1`, `etcd-3.4`,
    /// `zookeeper-3.8`.
    fn name(&self) -> &'static str;
    /// The program it is a version of (`redis`, `etcd`): a deployment runs any version of its
    /// topology's program, and clients speak to the program.
    fn family(&self) -> &'static str;
    /// One line for `--help`: where it comes from.
    fn summary(&self) -> &'static str;
    /// The image its nodes run.
    fn image(&self) -> &'static Recipe;
    /// The port clients reach each node on.
    fn port(&self) -> u16;
    /// The command that starts one node, given the topology's arguments for it (with `{n1}`,
    /// … already replaced by addresses).
    fn command(&self, args: Vec<String>) -> Vec<String>;
    /// Whether one node serves clients now; `Err` says what it answered instead.
    fn probe(&self, addr: SocketAddr) -> BoxFuture<'static, Result<(), String>>;
    /// Whether the nodes, all answering, form one deployment yet (a leader that every member
    /// follows); programs whose nodes stand alone, or are formed by their topology, say yes.
    fn formed(&self, _nodes: Vec<(String, SocketAddr)>) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
    /// Every node that some reachable member names as its leader, for programs that elect
    /// one: one in a healthy deployment, two while a cut-off leader has not yet heard of its
    /// successor.
    fn leaders(&self, _nodes: Vec<(String, SocketAddr)>) -> BoxFuture<'static, Vec<String>> {
        Box::pin(async { Vec::new() })
    }
    /// The program and version a node reports: `redis 7.0.15`, `valkey 8.1.1`.
    fn version(&self, addr: SocketAddr) -> BoxFuture<'static, Option<String>>;
    /// The file name a node's log is saved under, in the run's `nodes/<node>/`.
    fn log_file(&self) -> &'static str;
    /// Whether the clock faults reach the server: the node image preloads a shim under libc's
    /// clock calls, which a program that reads the clock through the vDSO (Go) never makes.
    fn clock_faults_reach(&self) -> bool;
    /// Whether the server is also the database that `lock-set`'s document lives in (an
    /// application that locks with PostgreSQL keeps its data there too), so that no storage
    /// service is started beside it.
    fn serves_storage(&self) -> bool {
        false
    }
}

impl std::fmt::Debug for dyn System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Every server program and version, for `--server` and `images build`.
pub static SYSTEMS: &[&dyn System] = &[
    &REDIS,
    &REDIS_8_0,
    &VALKEY_8_1,
    &ETCD,
    &ZOOKEEPER,
    &POSTGRES,
];

/// Looks a server up by its `--server` name.
pub fn find(name: &str) -> Option<&'static dyn System> {
    SYSTEMS.iter().copied().find(|s| s.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_images_are_unique_and_each_topology_runs_a_registered_server() {
        for system in SYSTEMS {
            assert_eq!(find(system.name()).map(|s| s.name()), Some(system.name()));
            let same_image = SYSTEMS
                .iter()
                .filter(|s| s.image().tag() == system.image().tag())
                .count();
            assert_eq!(same_image, 1, "{} shares its image", system.name());
        }
        for topology in crate::TOPOLOGIES {
            assert!(
                find(topology.system().name()).is_some(),
                "{}",
                topology.name()
            );
        }
    }
}
