//! PostgreSQL's transaction-level advisory lock: `BEGIN`, then `pg_advisory_xact_lock` on the
//! resource's hash, held until the transaction ends and impossible to release otherwise. In
//! `lock-set` the critical section reads and writes the document inside that transaction, and
//! its write commits it: the lock cannot outlive the write, and a write whose session the
//! server ended never commits. It needs no fencing token, and has none: a number drawn inside
//! the transaction is drawn again after a crash that rolled it back.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::advisory::{give_back, outcome, Advisory, AdvisoryClient};
use super::{
    held_by_another, new_token, ClientConfig, ClientKind, Fences, Grant, LockClient, Outcome,
};
use super::{lock, PgSession, SessionError};

pub(crate) const KIND: ClientKind = ClientKind {
    name: "pg-advisory-xact",
    summary: "PostgreSQL: pg_advisory_xact_lock in the transaction that makes lock-set's \
              write, which releases it on commit",
    fences: Fences::Never,
    checks_lease: true,
    build,
};

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    AdvisoryClient::build(config, KIND.name, TransactionLock::default())
}

#[derive(Default)]
struct TransactionLock {
    /// Whether a granted lock's transaction is open on the session.
    open: bool,
}

impl TransactionLock {
    /// Runs a transaction-ending statement (`COMMIT`, `ROLLBACK`).
    async fn end(
        &mut self,
        session: &mut PgSession,
        statement: &'static str,
    ) -> Result<(), SessionError> {
        self.open = false;
        session
            .call(|client| async move { client.batch_execute(statement).await })
            .await
    }
}

#[async_trait]
impl Advisory for TransactionLock {
    async fn acquire(
        &mut self,
        session: &mut PgSession,
        resource: &str,
        ttl: Duration,
    ) -> Outcome<Grant> {
        let begin = session
            .call(|client| async move { client.batch_execute("BEGIN").await })
            .await;
        if let Err(e) = begin {
            // Nothing is locked before the lock statement, whatever became of this one.
            return Outcome::Fail(e.to_string());
        }
        match lock(session, "pg_advisory_xact_lock", resource, false).await {
            Ok((pid, _)) => {
                self.open = true;
                Outcome::Ok(Grant {
                    token: format!("{pid}-{}", new_token()),
                    validity: ttl,
                    nodes: vec![session.node()],
                    fence: None,
                })
            }
            Err(refused @ (SessionError::Busy(_) | SessionError::Definite(_))) => {
                // The failed statement aborted the transaction: end it before the next try.
                let _ = self.end(session, "ROLLBACK").await;
                match refused {
                    SessionError::Busy(_) => Outcome::Fail(held_by_another()),
                    other => Outcome::Fail(other.to_string()),
                }
            }
            Err(SessionError::Indeterminate(e)) => give_back(session, e).await,
        }
    }

    async fn release(&mut self, session: &mut PgSession, _resource: &str) -> Outcome<()> {
        // After lock-set's write has committed, this commits nothing and says so in a
        // warning; the lock went with the write.
        outcome(self.end(session, "COMMIT").await)
    }

    fn transaction(&self, session: &PgSession) -> Option<Arc<tokio_postgres::Client>> {
        self.open.then(|| session.client()).flatten()
    }
}
