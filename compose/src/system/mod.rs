//! What runs in a deployment's containers: one module per server program (its image, the
//! command that starts a node, what "answers" and "formed" mean, who leads, its version and
//! log). A topology names its system; [`crate::Deployment`] asks the system and nothing else
//! about the program. Adding one is a module here, an image folder under `images/`, and a line
//! in [`SYSTEMS`].

mod etcd;
mod redis;

use std::net::SocketAddr;

use futures_util::future::BoxFuture;

use crate::image::Recipe;

pub use self::etcd::{Etcd, ETCD, ETCD_CLIENT_PORT, ETCD_PEER_PORT};
pub(crate) use self::redis::ask as ask_redis;
pub use self::redis::{Redis, REDIS, REDIS_PORT};

/// A server program under test.
pub trait System: Sync {
    /// Its name, in `test.json` and reports: `redis`, `etcd`.
    fn name(&self) -> &'static str;
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
    /// The version a node reports.
    fn version(&self, addr: SocketAddr) -> BoxFuture<'static, Option<String>>;
    /// The file name a node's log is saved under, in the run's `nodes/<node>/`.
    fn log_file(&self) -> &'static str;
    /// Whether the clock faults reach the server: the node image preloads a shim under libc's
    /// clock calls, which a program that reads the clock through the vDSO (Go) never makes.
    fn clock_faults_reach(&self) -> bool;
}

impl std::fmt::Debug for dyn System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Every server program, for `images build`.
pub static SYSTEMS: &[&dyn System] = &[&REDIS, &ETCD];
