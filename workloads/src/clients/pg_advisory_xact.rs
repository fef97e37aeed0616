//! PostgreSQL's transaction-level advisory lock: `BEGIN`, then `pg_advisory_xact_lock` on the
//! resource's hash, held until the transaction ends and impossible to release otherwise. In
//! `lock-set` the critical section reads and writes the document inside that transaction, and
//! its write commits it: the lock cannot outlive the write, and a write whose session the
//! server ended never commits. It needs no fencing token, and has none: a number drawn inside
//! the transaction is drawn again after a crash that rolled it back.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{
    held_by_another, new_token, ClientConfig, ClientKind, Fences, Grant, LockClient, Outcome,
};
use crate::postgres::{give_back, keep_alive, lock, outcome, PgError, PgSession};
use crate::CrashPoint;

pub(super) const KIND: ClientKind = ClientKind {
    name: "pg-advisory-xact",
    summary: "PostgreSQL: pg_advisory_xact_lock in the transaction that makes lock-set's \
              write, which releases it on commit",
    speaks: Some("postgres"),
    fences: Fences::Never,
    build,
};

fn build(config: &ClientConfig) -> Result<Box<dyn LockClient>, String> {
    Ok(Box::new(PgAdvisoryXact {
        session: PgSession::new(config, KIND.name)?,
        crash: config.crash.clone(),
        in_transaction: false,
    }))
}

struct PgAdvisoryXact {
    session: PgSession,
    crash: CrashPoint,
    /// Whether a granted lock's transaction is open on the session.
    in_transaction: bool,
}

impl PgAdvisoryXact {
    /// Runs a transaction-ending statement (`COMMIT`, `ROLLBACK`).
    async fn end(&mut self, statement: &'static str) -> Result<(), PgError> {
        self.in_transaction = false;
        self.session
            .call(|client| async move { client.batch_execute(statement).await })
            .await
    }
}

#[async_trait]
impl LockClient for PgAdvisoryXact {
    async fn prepare(&mut self) -> Result<(), String> {
        let _ = self.session.connected().await;
        Ok(())
    }

    async fn acquire(&mut self, resource: &str, ttl: Duration) -> Outcome<Grant> {
        let begin = self
            .session
            .call(|client| async move { client.batch_execute("BEGIN").await })
            .await;
        match begin {
            Ok(()) => {}
            Err(PgError::Busy(e) | PgError::Definite(e)) => return Outcome::Fail(e),
            // Nothing is locked before the lock statement.
            Err(PgError::Indeterminate(e)) => return Outcome::Fail(e),
        }
        match lock(&mut self.session, "pg_advisory_xact_lock", resource, false).await {
            Ok((pid, _)) => {
                self.in_transaction = true;
                if self.crash.crash_now() {
                    self.session.close();
                    return Outcome::Info("crashed: the client died holding the lock".into());
                }
                Outcome::Ok(Grant {
                    token: format!("{pid}-{}", new_token()),
                    validity: ttl,
                    nodes: vec![self.session.node()],
                    fence: None,
                })
            }
            Err(refused @ (PgError::Busy(_) | PgError::Definite(_))) => {
                // The failed statement aborted the transaction: end it before the next try.
                let _ = self.end("ROLLBACK").await;
                match refused {
                    PgError::Busy(_) => Outcome::Fail(held_by_another()),
                    other => Outcome::Fail(other.to_string()),
                }
            }
            Err(PgError::Indeterminate(e)) => give_back(&mut self.session, e).await,
        }
    }

    async fn release(&mut self, _resource: &str, _grant: &Grant) -> Outcome<()> {
        // After lock-set's write has committed, this commits nothing and says so in a
        // warning; the lock went with the write.
        outcome(self.end("COMMIT").await)
    }

    fn renewal_interval(&self, ttl: Duration) -> Option<Duration> {
        Some(ttl / 3)
    }

    async fn renew(&mut self, _resource: &str, _grant: &Grant, ttl: Duration) -> Outcome<()> {
        keep_alive(&self.session, ttl).await
    }

    fn retry_delay(&mut self, _failures: u32) -> Duration {
        Duration::from_millis(rand::random_range(5..=25))
    }

    fn transaction(&self) -> Option<Arc<tokio_postgres::Client>> {
        self.in_transaction.then(|| self.session.client()).flatten()
    }
}
