//! MariaDB's named lock, as Rails' `with_advisory_lock`, Laravel's `Cache::lock` on a MySQL
//! store and django-mysql's `Lock` take it: `GET_LOCK(name, timeout)`, held by the
//! connection's session until `RELEASE_LOCK(name)` or the session's end. The server waits up
//! to half the TTL for the lock. The lease is the session's: the server's `wait_timeout` is the
//! TTL, and the holder pings every third of it. A counter row drawn once the lock is granted
//! numbers the grants: the fencing token MariaDB does not give.

use std::time::Duration;

use async_trait::async_trait;

use splitbrain_checker::Renewal;
use splitbrain_workloads::{
    held_by_another, ClientConfig, ClientKind, CrashPoint, Fences, Grant, LockClient, Outcome,
};

use super::session::MySession;
use super::Server;
use crate::session_error::SessionError;

pub(crate) const KIND: ClientKind = ClientKind {
    name: "mysql-get-lock",
    summary: "MariaDB: GET_LOCK, held by the session until RELEASE_LOCK or it ends (the \
              server's wait_timeout); a counter row fences",
    fences: Fences::Always,
    checks_lease: true,
    build,
};

/// How long an acquire whose answer was lost keeps trying to end the session that may hold
/// the lock: as long as a cut link may last, as PostgreSQL's clients do.
const GIVE_BACK_PATIENCE: Duration = Duration::from_secs(10);

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    config.connection::<Server>(KIND.name)?;
    let [(node, addr)] = config.nodes.as_slice() else {
        return Err(format!("{} takes one MariaDB server", KIND.name));
    };
    if config.ttl < Duration::from_secs(2) || config.ttl.subsec_nanos() != 0 {
        return Err(format!(
            "{} makes the server's wait_timeout its lease, which counts whole seconds; use a \
             --ttl of 2s or more, in whole seconds",
            KIND.name
        ));
    }
    Ok(Box::new(GetLock {
        session: MySession::new(node.clone(), *addr, config.ttl),
        crash: config.crash.clone(),
    }))
}

/// A lock client on a MariaDB session: connects ahead of the first acquire, renews a held
/// lock's lease with a ping every third of the TTL, and dies holding it where the run's crash
/// point says so.
struct GetLock {
    session: MySession,
    crash: CrashPoint,
}

/// A call's result as an operation's outcome.
fn outcome<T>(result: Result<T, SessionError>) -> Outcome<T> {
    match result {
        Ok(value) => Outcome::Ok(value),
        Err(SessionError::Busy(e) | SessionError::Definite(e)) => Outcome::Fail(e),
        Err(SessionError::Indeterminate(e)) => Outcome::Info(e),
    }
}

#[async_trait]
impl LockClient for GetLock {
    async fn prepare(&mut self) -> Result<(), String> {
        // Connecting is no part of an acquire; a server that is down now is the acquire's
        // to find.
        let _ = self.session.connect().await;
        Ok(())
    }

    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        match self.session.get_lock(resource).await {
            Ok(fence) => {
                if self.crash.crash_now() {
                    self.session.close();
                    return Outcome::Info("crashed: the client died holding the lock".into());
                }
                Outcome::Ok(Grant {
                    token: format!("{}-{fence}", self.session.node()),
                    // The server ends the session no sooner than a TTL after it last heard
                    // from the client, which was just now.
                    validity: ttl,
                    nodes: vec![self.session.node()],
                    fence: Some(fence),
                })
            }
            Err(SessionError::Busy(_)) => Outcome::Fail(held_by_another()),
            Err(SessionError::Definite(e)) => Outcome::Fail(e),
            // As etcd's clients revoke the lease of such an attempt: once the session it ran
            // on is gone, the attempt certainly holds nothing (a lock it may have been granted
            // went with the session, and its client never acted under it).
            Err(SessionError::Indeterminate(e)) => {
                match self.session.end_abandoned(GIVE_BACK_PATIENCE).await {
                    Ok(()) => Outcome::Fail(format!(
                        "{e}; ended the session that may have been granted it, so nothing is \
                         held"
                    )),
                    Err(why) => Outcome::Info(format!("{e}; {why}")),
                }
            }
        }
    }

    async fn release(&mut self, resource: &str, _grant: &Grant) -> Outcome<()> {
        match outcome(self.session.release_lock(resource).await) {
            Outcome::Ok(false) => Outcome::Fail(
                "the lock was no longer ours: the session that held it had ended".into(),
            ),
            Outcome::Ok(true) => Outcome::Ok(()),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }

    fn renewal_interval(&self, ttl: Duration) -> Option<Duration> {
        Some(ttl / 3)
    }

    /// The session answered, so the server has just heard from its client and will not end
    /// it for another TTL.
    async fn renew(&mut self, _resource: &str, _grant: &Grant, ttl: Duration) -> Outcome<()> {
        outcome(self.session.ping(ttl / 3).await)
    }

    fn retry_delay(&mut self, _failures: u32) -> Duration {
        // The server already made the acquire wait for the lock.
        Duration::from_millis(rand::random_range(5..=25))
    }

    /// The lock is the session's, and ends with its connection: a reset under the holder
    /// frees it at once, whatever its last ping promised.
    fn renewal(&self) -> Option<Renewal> {
        Some(Renewal::Connection)
    }
}
