//! PostgreSQL's session-level advisory lock, as the article recommends it: `pg_advisory_lock`
//! on the resource's hash, held by the connection's session until `pg_advisory_unlock` or the
//! session's end. The server waits up to half the TTL for the lock (`lock_timeout`). Its lease
//! is the session's: the session sets its TCP keepalive so that the server ends it (and frees
//! its locks) once its client has been silent for the TTL, and the holder pings it every third
//! of the TTL to know it still lives. A sequence drawn once the lock is granted numbers the
//! grants: the fencing token PostgreSQL does not give.

use std::time::Duration;

use async_trait::async_trait;

use super::advisory::{give_back, outcome, Advisory, AdvisoryClient};
use super::{held_by_another, ClientConfig, ClientKind, Fences, Grant, LockClient, Outcome};
use super::{lock, PgSession, SessionError};

pub(crate) const KIND: ClientKind = ClientKind {
    name: "pg-advisory",
    summary: "PostgreSQL: pg_advisory_lock, held by the session until unlocked or it ends; a \
              sequence fences",
    fences: Fences::Always,
    checks_lease: true,
    build,
};

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    AdvisoryClient::build(config, KIND.name, SessionLock)
}

struct SessionLock;

#[async_trait]
impl Advisory for SessionLock {
    async fn acquire(
        &mut self,
        session: &mut PgSession,
        resource: &str,
        ttl: Duration,
    ) -> Outcome<Grant> {
        match lock(session, "pg_advisory_lock", resource, true).await {
            Ok((pid, fence)) => {
                let fence = fence.unwrap_or_default();
                Outcome::Ok(Grant {
                    token: format!("{pid}-{fence}"),
                    // The server ends the session no sooner than a TTL after it last heard
                    // from the client, which was just now.
                    validity: ttl,
                    nodes: vec![session.node()],
                    fence: Some(fence as u64),
                })
            }
            Err(SessionError::Busy(_)) => Outcome::Fail(held_by_another()),
            Err(SessionError::Definite(e)) => Outcome::Fail(e),
            Err(SessionError::Indeterminate(e)) => give_back(session, e).await,
        }
    }

    async fn release(&mut self, session: &mut PgSession, resource: &str) -> Outcome<()> {
        let resource = resource.to_string();
        let unlocked = session
            .call(|client| async move {
                let row = client
                    .query_one("SELECT pg_advisory_unlock(hashtext($1))", &[&resource])
                    .await?;
                Ok(row.get::<_, bool>(0))
            })
            .await;
        match outcome(unlocked) {
            Outcome::Ok(false) => Outcome::Fail(
                "the lock was no longer ours: the session that held it had ended".into(),
            ),
            Outcome::Ok(true) => Outcome::Ok(()),
            Outcome::Fail(e) => Outcome::Fail(e),
            Outcome::Info(e) => Outcome::Info(e),
        }
    }
}
