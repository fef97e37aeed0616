//! Lock clients: one file per algorithm, each registered once in [`CLIENTS`].
//!
//! A client makes one attempt per [`LockClient::acquire`]; the workload records the attempt
//! and decides when to try again, using the client's own [`LockClient::retry_delay`].

mod advisory;
mod del_release;
mod etcd_lease;
mod etcd_lock;
mod exec;
mod fenced;
mod pg_advisory;
mod pg_advisory_xact;
mod redlock;
mod set_nx_px;
mod setnx_expire;
mod wait;
mod watchdog;
mod zk_recipe;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use splitbrain_checker::{acquisition, Renewal};

use crate::CrashPoint;

pub use exec::EXEC_PREFIX;

/// The outcome of one operation, in Jepsen's terms.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// It happened.
    Ok(T),
    /// It certainly did not happen.
    Fail(String),
    /// It may or may not have happened (a timeout, a dropped connection).
    Info(String),
}

/// What a successful acquire hands the holder.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    pub token: String,
    /// How long after the acquire began the client may consider itself the holder.
    pub validity: Duration,
    /// The nodes that granted the lock.
    pub nodes: Vec<String>,
    /// The fencing token issued with the grant, by clients that issue one.
    pub fence: Option<u64>,
}

/// A lock algorithm, as one client process runs it.
#[async_trait]
pub trait LockClient: Send {
    /// One attempt to take `resource` for `ttl`.
    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant>;
    /// Gives the lock back. `Fail` means the lock was no longer this client's to release.
    async fn release(&mut self, resource: &str, grant: &Grant) -> Outcome<()>;
    /// How long to wait before the next attempt after `failures` failed attempts in a row.
    fn retry_delay(&mut self, failures: u32) -> Duration;
    /// How often a lease watchdog renews a held lock, for clients that run one.
    fn renewal_interval(&self, _ttl: Duration) -> Option<Duration> {
        None
    }
    /// Extends a held lock's lease to `ttl` from now, if it is still this client's.
    async fn renew(&mut self, _resource: &str, _grant: &Grant, _ttl: Duration) -> Outcome<()> {
        Outcome::Fail("this client has no lease watchdog".into())
    }
    /// Why this client can no longer be used (an external client program that broke the
    /// protocol), which stops the run.
    fn broken(&self) -> Option<String> {
        None
    }
    /// Gets ready for the next operation before it is recorded (an external program starts
    /// and says hello), so that start-up is never timed as part of an operation.
    async fn prepare(&mut self) -> Result<(), String> {
        Ok(())
    }
    /// Whether the client renews held leases by itself, in the background (a library's
    /// watchdog thread), and whether it reports those renewals through
    /// [`LockClient::next_renewal`].
    fn renewal(&self) -> Option<Renewal> {
        None
    }
    /// The next renewal the client made by itself; `None` when it reports none.
    async fn next_renewal(&mut self) -> Option<RenewalReport> {
        None
    }
    /// For a lock that lives in a transaction on the storage's own server (PostgreSQL's
    /// `pg_advisory_xact_lock`): the connection with that transaction open. The critical
    /// section reads and writes inside it, and the write's commit releases the lock.
    fn transaction(&self) -> Option<Arc<tokio_postgres::Client>> {
        None
    }
    /// Freezes (or thaws) whatever runs the client outside the harness (an external program
    /// and everything it started), for a client pause.
    fn suspend(&mut self, _frozen: bool) {}
}

/// A lease renewal that a client made by itself, as it reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct RenewalReport {
    pub resource: String,
    pub token: String,
    /// The lease it renewed for, from when the renewal began; `None`: the lease asked for.
    pub ttl: Option<Duration>,
    pub outcome: Outcome<()>,
}

/// What every client is built from.
#[derive(Clone)]
pub struct ClientConfig {
    /// The deployment's nodes, by name, in order.
    pub nodes: Vec<(String, SocketAddr)>,
    /// How the nodes relate, which decides how a client finds the master of a key.
    pub shape: Shape,
    /// The lease each acquire asks for.
    pub ttl: Duration,
    pub options: ClientOptions,
    /// Where this client process may be crashed by the `client-crash` fault.
    pub crash: CrashPoint,
}

/// What a deployment's nodes run and how they relate, as a client sees it: one value, so that
/// no client has to work it out again from several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// Every node stands alone: one server, or Redlock's independent masters.
    Standalone,
    /// One master with `replicas` replicas, named by these Sentinels.
    Sentinel {
        sentinels: Sentinels,
        replicas: usize,
    },
    /// A Redis Cluster: each key's slot has its master.
    Cluster,
    /// An etcd cluster: any member takes requests, and forwards writes to its leader.
    Etcd,
    /// A ZooKeeper ensemble: any member serves a session, and forwards writes to its leader.
    ZooKeeper,
    /// A PostgreSQL server.
    Postgres,
}

impl Shape {
    /// The shape of a deployment of a lock service other than Redis, whose deployments each
    /// have one shape; `None` for Redis, whose shape is its topology's.
    pub fn service(program: &str) -> Option<Shape> {
        match program {
            "etcd" => Some(Shape::Etcd),
            "zookeeper" => Some(Shape::ZooKeeper),
            "postgres" => Some(Shape::Postgres),
            _ => None,
        }
    }

    /// The program the nodes run, which a client must speak.
    pub fn program(&self) -> &'static str {
        match self {
            Shape::Standalone | Shape::Sentinel { .. } | Shape::Cluster => "redis",
            Shape::Etcd => "etcd",
            Shape::ZooKeeper => "zookeeper",
            Shape::Postgres => "postgres",
        }
    }
}

impl ClientConfig {
    /// A config for these standalone nodes, with default options and no crash point.
    pub fn new(nodes: Vec<(String, SocketAddr)>, ttl: Duration) -> ClientConfig {
        ClientConfig {
            nodes,
            shape: Shape::Standalone,
            ttl,
            options: ClientOptions::default(),
            crash: CrashPoint::default(),
        }
    }

    /// The same nodes as a master with `replicas` replicas, watched by these Sentinels.
    pub fn watched_by_sentinel(self, sentinels: Sentinels, replicas: usize) -> ClientConfig {
        ClientConfig {
            shape: Shape::Sentinel {
                sentinels,
                replicas,
            },
            ..self
        }
    }

    /// The same nodes as a Redis Cluster.
    pub fn in_cluster(self) -> ClientConfig {
        ClientConfig {
            shape: Shape::Cluster,
            ..self
        }
    }

    /// The same nodes as a lock service's (see [`Shape::service`]).
    pub fn serving(self, service: Shape) -> ClientConfig {
        ClientConfig {
            shape: service,
            ..self
        }
    }

    /// How many replicas the master has that `WAIT` can count on (only Sentinel's are known).
    pub fn replicas(&self) -> usize {
        match self.shape {
            Shape::Sentinel { replicas, .. } => replicas,
            _ => 0,
        }
    }
}

/// The Sentinels of a deployment, and the name they know the master by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sentinels {
    pub master: String,
    /// Each Sentinel by the node it runs on, and where the client reaches it (the node's
    /// address, or the client group's link to the node).
    pub addrs: Vec<(String, SocketAddr)>,
    /// Each node's own address: what a Sentinel answers when it names the master.
    pub announced: Vec<(String, std::net::IpAddr)>,
}

/// Variants that some algorithms offer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientOptions {
    /// Randomise retry delays (Redlock): without it, clients that collided retry together.
    pub jitter: bool,
    /// Ask Redlock's nodes one after another instead of all at once.
    pub sequential: bool,
    /// How many replicas `wait` asks `WAIT` for; `None` for every one.
    pub wait_replicas: Option<usize>,
    /// The program and arguments behind `--client exec:<command>`.
    pub command: Option<String>,
    /// How long an `exec:` program may take to start and answer `hello`: starting an
    /// interpreter and importing a library on a busy machine takes seconds, and start-up is
    /// never part of an operation.
    pub start_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            jitter: true,
            sequential: false,
            wait_replicas: None,
            command: None,
            start_timeout: Duration::from_secs(60),
        }
    }
}

/// A registered lock algorithm.
pub struct ClientKind {
    /// The name users pass to `--client`.
    pub name: &'static str,
    pub summary: &'static str,
    /// The program it talks to (see [`Shape::program`]); `None`: whatever an external
    /// program speaks.
    pub speaks: Option<&'static str>,
    /// Whether its grants carry fencing tokens (for the storage to check with `--fencing`).
    pub fences: Fences,
    /// Makes one client process, or says why this deployment does not suit the algorithm.
    pub build: fn(&ClientConfig) -> Result<Box<dyn LockClient>, String>,
}

/// Whether a client's grants carry fencing tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fences {
    Never,
    Always,
    /// Whatever the external program returns.
    IfProgramSays,
}

/// Every lock algorithm, by name, in the article's order: Redis's, then the alternatives it
/// recommends.
pub static CLIENTS: &[ClientKind] = &[
    setnx_expire::KIND,
    del_release::KIND,
    set_nx_px::KIND,
    watchdog::KIND,
    wait::KIND,
    fenced::KIND,
    redlock::KIND,
    etcd_lease::KIND,
    etcd_lock::KIND,
    zk_recipe::KIND,
    pg_advisory::KIND,
    pg_advisory_xact::KIND,
    exec::KIND,
];

/// Looks a client up by name; `exec:<command>` is the external-program client.
pub fn find_client(name: &str) -> Option<&'static ClientKind> {
    if name.starts_with(EXEC_PREFIX) {
        return Some(&exec::KIND);
    }
    CLIENTS.iter().find(|c| c.name == name)
}

/// Refuses, for `who`, a deployment whose nodes run another program than `program`, naming
/// the clients that speak theirs.
pub(crate) fn speaks(config: &ClientConfig, who: &str, program: &str) -> Result<(), String> {
    let theirs = config.shape.program();
    if theirs == program {
        return Ok(());
    }
    let clients: Vec<&str> = CLIENTS
        .iter()
        .filter(|c| c.speaks == Some(theirs))
        .map(|c| c.name)
        .collect();
    // The lock services' deployments are named after them.
    let deployments = match program {
        "redis" => "single, redlock, sentinel or cluster",
        service => service,
    };
    Err(format!(
        "{who} speaks {program}, and this deployment runs {theirs} (its lock clients: {}); use \
         --deployment {deployments}",
        clients.join(", ")
    ))
}

/// The error of an acquire refused because another client holds the lock.
pub(crate) fn held_by_another() -> String {
    format!("{}: by another client", acquisition::HELD)
}

/// A fresh random lock token (64 random bits, hex).
pub(crate) fn new_token() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// `SET resource token NX PX ttl`: take the key only if nobody holds it, with a lease.
pub(crate) fn set_if_absent(resource: &str, token: &str, ttl: Duration) -> redis::Cmd {
    let mut set = redis::cmd("SET");
    set.arg(resource)
        .arg(token)
        .arg("NX")
        .arg("PX")
        .arg(ttl.as_millis() as u64);
    set
}

/// Releases the key only if it still holds our token: the canonical compare-and-delete.
pub(crate) const COMPARE_AND_DELETE: &str = r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end
"#;
