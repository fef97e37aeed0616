//! What runs in a deployment's containers: a server program (its image, the command that
//! starts a node, what "answers" and "formed" mean, who leads, its version and log). A
//! topology names its system; [`crate::Deployment`] asks the system and nothing else about
//! the program. The systems themselves live in their folders of the `splitbrain-systems`
//! crate.

use std::net::SocketAddr;

use futures_util::future::BoxFuture;

use crate::image::Recipe;

/// A server program under test.
pub trait System: Sync {
    /// The name users pass to `--server`: `redis-7.0`, `valkey-8.1`, `etcd-3.4`,
    /// `zookeeper-3.8`.
    fn name(&self) -> &'static str;
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
    /// How far a node's own clock is from the host's, in milliseconds, as the server reads it
    /// (Redis's `TIME`), so that a clock fault records what it did; `Err` says why not.
    fn clock_skew_ms(&self, _addr: SocketAddr) -> BoxFuture<'static, Result<f64, String>> {
        let name = self.name();
        Box::pin(async move { Err(format!("{name} does not tell its clock")) })
    }
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
