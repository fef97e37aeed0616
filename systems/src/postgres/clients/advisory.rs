//! What PostgreSQL's two advisory-lock clients share: each is an [`AdvisoryClient`], a
//! session whose lease is renewed by pings, with its own way to take and give back the lock
//! ([`Advisory`]); and how a session's call becomes an operation's outcome.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use splitbrain_checker::Renewal;
use tokio_postgres::Client;

use splitbrain_workloads::storage::Storage;

use super::{
    ClientConfig, CrashPoint, Grant, LockClient, Outcome, PgSession, Server, SessionError,
};

/// A call's result as an operation's outcome.
pub fn outcome<T>(result: Result<T, SessionError>) -> Outcome<T> {
    match result {
        Ok(value) => Outcome::Ok(value),
        Err(SessionError::Busy(e) | SessionError::Definite(e)) => Outcome::Fail(e),
        Err(SessionError::Indeterminate(e)) => Outcome::Info(e),
    }
}

/// How long an acquire whose answer was lost keeps trying to end the session that may hold
/// the lock: as long as a cut link may last, and etcd's clients try to revoke their lease.
const GIVE_BACK_PATIENCE: Duration = Duration::from_secs(10);

/// After an acquire whose answer was lost: ends the session it ran on, from a new one, as
/// etcd's clients revoke the lease of such an attempt. Once that session is gone, the attempt
/// certainly holds nothing (a lock it may have been granted went with the session, and its
/// client never acted under it); only when it could not be ended is the attempt unknown.
pub async fn give_back<T>(session: &mut PgSession, error: String) -> Outcome<T> {
    match session.end_abandoned(GIVE_BACK_PATIENCE).await {
        Ok(()) => Outcome::Fail(format!(
            "{error}; ended the session that may have been granted it, so nothing is held"
        )),
        Err(e) => Outcome::Info(format!("{error}; {e}")),
    }
}

/// How one advisory-lock client takes and gives back its lock on a session.
#[async_trait]
pub trait Advisory: Send + Sync {
    /// Takes the lock; a granted one is the client's until `release`.
    async fn acquire(
        &mut self,
        session: &mut PgSession,
        resource: &str,
        ttl: Duration,
    ) -> Outcome<Grant>;
    async fn release(&mut self, session: &mut PgSession, resource: &str) -> Outcome<()>;
    /// The open transaction the critical section must write in, if the lock lives in one.
    fn transaction(&self, _session: &PgSession) -> Option<Arc<Client>> {
        None
    }
}

/// A lock client on a PostgreSQL session: connects ahead of the first acquire, renews a held
/// lock's lease with a ping every third of the TTL, and dies holding it where the run's crash
/// point says so.
pub struct AdvisoryClient<A> {
    session: PgSession,
    crash: CrashPoint,
    advisory: A,
}

impl<A: Advisory + 'static> AdvisoryClient<A> {
    /// `who`'s client, or why the deployment does not fit it.
    pub fn build(
        config: &ClientConfig,
        who: &str,
        advisory: A,
    ) -> Result<Box<dyn LockClient>, String> {
        config.connection::<Server>(who)?;
        let [(node, addr)] = config.nodes.as_slice() else {
            return Err(format!("{who} takes one PostgreSQL server"));
        };
        if config.ttl < Duration::from_secs(2) {
            return Err(format!(
                "{who} makes the server's TCP keepalive its lease, which counts whole seconds; \
                 use --ttl 2s or more"
            ));
        }
        Ok(Box::new(AdvisoryClient {
            session: PgSession::new(node.clone(), *addr, config.ttl),
            crash: config.crash.clone(),
            advisory,
        }))
    }
}

#[async_trait]
impl<A: Advisory> LockClient for AdvisoryClient<A> {
    async fn prepare(&mut self) -> Result<(), String> {
        // Connecting is no part of an acquire; a server that is down now is the acquire's
        // to find.
        let _ = self.session.connected().await;
        Ok(())
    }

    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        let granted = self
            .advisory
            .acquire(&mut self.session, resource, ttl)
            .await;
        if matches!(granted, Outcome::Ok(_)) && self.crash.crash_now() {
            self.session.close();
            return Outcome::Info("crashed: the client died holding the lock".into());
        }
        granted
    }

    async fn release(&mut self, resource: &str, _grant: &Grant) -> Outcome<()> {
        self.advisory.release(&mut self.session, resource).await
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

    fn storage_in_lock(&self, fencing: bool) -> Option<Storage> {
        let transaction = self.advisory.transaction(&self.session)?;
        Some(Storage::in_transaction(transaction, fencing))
    }

    /// The server keeps the lock while the session's connection lives, which a frozen
    /// holder's kernel keeps alive: the others wait, for as long as it is frozen.
    fn renewal(&self) -> Option<Renewal> {
        Some(Renewal::Connection)
    }
}
