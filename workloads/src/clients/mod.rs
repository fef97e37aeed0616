//! What a lock client is: the [`LockClient`] trait, what it is built from ([`ClientConfig`],
//! with the [`Connection`] its system describes the deployment by), and how it is registered
//! ([`ClientKind`]). The clients themselves live with the system they speak to (the
//! `splitbrain-systems` crate), except the external-program client ([`EXEC`]), which speaks
//! to any.
//!
//! A client makes one attempt per [`LockClient::acquire`]; the workload records the attempt
//! and decides when to try again, using the client's own [`LockClient::retry_delay`].

mod exec;

use std::any::Any;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use splitbrain_checker::{acquisition, Renewal};

use crate::connection::Connection;
use crate::storage::Storage;
use crate::CrashPoint;

pub use exec::{EXEC, EXEC_PREFIX};

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
    /// `pg_advisory_xact_lock`): the storage as seen inside that transaction, checking
    /// fencing tokens or not. The critical section reads and writes through it, and the
    /// write's commit releases the lock.
    fn storage_in_lock(&self, _fencing: bool) -> Option<Storage> {
        None
    }
    /// Freezes (or thaws) whatever runs the client outside the harness (an external program
    /// and everything it started), for a client pause.
    fn suspend(&mut self, _frozen: bool) {}
    /// Whether the holder asks this client, before each step of its critical section, if it
    /// still holds the lock ([`LockClient::held`]), as a user who checks a library's
    /// `is_acquired` does, and stops where it is told no.
    fn asks_held(&self) -> bool {
        false
    }
    /// Whether the client says it still holds `grant`'s lock (what the library answers: a
    /// flag it keeps, or a question to the servers).
    async fn held(&mut self, _resource: &str, _grant: &Grant) -> Outcome<bool> {
        Outcome::Fail("this client cannot say whether it holds a lock".into())
    }
}

/// A lease renewal that a client made by itself, as it reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct RenewalReport {
    pub resource: String,
    pub token: String,
    /// The lease it renewed for, from when the renewal began; `None`: the lease asked for.
    pub ttl: Option<Duration>,
    /// How it ended; `None` when the library reports that a renewal has begun, before it asks
    /// the servers (its end follows in another report), so that it is dated when it began.
    pub outcome: Option<Outcome<()>>,
}

/// What every client is built from.
#[derive(Clone)]
pub struct ClientConfig {
    /// The deployment's nodes, by name, in order, as this client reaches them.
    pub nodes: Vec<(String, SocketAddr)>,
    /// How the deployment looks to its clients, as its system says.
    pub connection: Arc<dyn Connection>,
    /// The lease each acquire asks for.
    pub ttl: Duration,
    pub options: ClientOptions,
    /// Where this client process may be crashed by the `client-crash` fault.
    pub crash: CrashPoint,
}

impl ClientConfig {
    /// A config for these nodes, with default options and no crash point.
    pub fn new(
        nodes: Vec<(String, SocketAddr)>,
        connection: Arc<dyn Connection>,
        ttl: Duration,
    ) -> ClientConfig {
        ClientConfig {
            nodes,
            connection,
            ttl,
            options: ClientOptions::default(),
            crash: CrashPoint::default(),
        }
    }

    /// The connection as the type its system made it, for `who`, one of that system's
    /// clients; or why this deployment is another system's.
    pub fn connection<T: Connection>(&self, who: &str) -> Result<&T, String> {
        let any: &dyn Any = &*self.connection;
        any.downcast_ref().ok_or_else(|| {
            format!(
                "{who} speaks to another system than this deployment's ({})",
                self.connection.deployment()
            )
        })
    }
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
    /// Whether its grants carry fencing tokens (for the storage to check with `--fencing`).
    pub fences: Fences,
    /// Whether the harness keeps its holder to the validity it has confirmed (its grant's,
    /// then its last renewal's, less a tenth): it stops holding, and writes nothing, once
    /// that has run out (`--no-lease-check` lets it act on). The harness's own clients are
    /// kept so; where a library keeps the lock alive unseen, it decides what its holder knows.
    pub checks_lease: bool,
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

/// The error of an acquire refused because another client holds the lock.
pub fn held_by_another() -> String {
    format!("{}: by another client", acquisition::HELD)
}

/// A fresh random lock token (64 random bits, hex).
pub fn new_token() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// A spin lock's retry delay with a little jitter, as most single-instance clients poll.
pub fn spin_delay() -> Duration {
    use rand::Rng;
    Duration::from_millis(rand::rng().random_range(5..=20))
}
