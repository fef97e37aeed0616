//! A lock client's session on the PostgreSQL server: one connection, made when needed, whose
//! server-side session is what holds the advisory locks. Each call is bounded in time and its
//! error sorted into "certainly not done" and "may have been done"; after the latter the
//! connection is dropped, and an acquire ends that session from a new one
//! ([`PgSession::end_abandoned`]), so that whatever it may hold is gone.
//!
//! Both advisory-lock clients are a `clients::advisory::AdvisoryClient` around such a session.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

use crate::session_error::SessionError;

/// How long a call may take beyond the server-side lock wait before its outcome is unknown.
pub const OP_TIMEOUT: Duration = Duration::from_secs(2);
/// The sequence that numbers grants: a holder draws from it once its lock is granted, so each
/// grant's number is above every earlier holder's, a fencing token.
const FENCE_SEQUENCE: &str = "splitbrain_fence";

/// One client process's session.
pub struct PgSession {
    node: String,
    addr: SocketAddr,
    /// The lease: how long the server lets the session's client stay silent before it ends
    /// the session, and with it the session's locks.
    ttl: Duration,
    /// How long the server may make an acquire wait for the lock.
    wait: Duration,
    client: Option<Arc<Client>>,
    /// The server's name for the open session: its backend pid and start time.
    backend: Option<Backend>,
    /// A session dropped after an unknown outcome, which may hold a lock until the server
    /// ends it.
    abandoned: Option<Backend>,
}

/// A session as the server knows it: a backend pid, unique with its start time.
#[derive(Debug, Clone)]
struct Backend {
    pid: i32,
    started: String,
}

impl PgSession {
    /// A session on the server `node` at `addr`, whose lease (the server's keepalive) is
    /// `ttl`, in whole seconds.
    pub fn new(node: String, addr: SocketAddr, ttl: Duration) -> PgSession {
        PgSession {
            node,
            addr,
            ttl,
            // As etcd's lock waits: half the lease, then try again.
            wait: ttl / 2,
            client: None,
            backend: None,
            abandoned: None,
        }
    }

    /// The node every grant comes from.
    pub fn node(&self) -> String {
        self.node.clone()
    }

    /// The session's connection, connecting first if there is none or the server closed it.
    pub async fn connected(&mut self) -> Result<Arc<Client>, String> {
        if let Some(client) = self.client.as_ref().filter(|c| !c.is_closed()) {
            return Ok(client.clone());
        }
        self.client = None;
        let (client, backend) = self.connect().await?;
        let client = Arc::new(client);
        self.client = Some(client.clone());
        self.backend = Some(backend);
        Ok(client)
    }

    async fn connect(&self) -> Result<(Client, Backend), String> {
        let params = format!(
            "host={} port={} user=postgres dbname=postgres connect_timeout=1 \
             keepalives_idle=1 application_name=splitbrain",
            self.addr.ip(),
            self.addr.port()
        );
        let attempt = async {
            let (client, connection) = tokio_postgres::connect(&params, NoTls).await?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!("lock session ended: {e}");
                }
            });
            client.batch_execute(&self.settings()).await?;
            // Every session makes sure the sequence exists; two making it at once collide
            // on the catalog, and the loser finds it made.
            let create = format!("CREATE SEQUENCE IF NOT EXISTS {FENCE_SEQUENCE}");
            match client.batch_execute(&create).await {
                Err(e)
                    if e.code() == Some(&SqlState::UNIQUE_VIOLATION)
                        || e.code() == Some(&SqlState::DUPLICATE_TABLE) => {}
                other => other?,
            }
            let row = client
                .query_one(
                    "SELECT pid, backend_start::text FROM pg_stat_activity \
                     WHERE pid = pg_backend_pid()",
                    &[],
                )
                .await?;
            let backend = Backend {
                pid: row.get(0),
                started: row.get(1),
            };
            Ok::<_, tokio_postgres::Error>((client, backend))
        };
        match tokio::time::timeout(OP_TIMEOUT, attempt).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(format!("connecting to {}: {e}", self.node)),
            Err(_) => Err(format!("connecting to {}: timed out", self.node)),
        }
    }

    /// The session's own settings: how long an acquire may wait, and the lease. By default
    /// the server asks after a silent client only after two hours, and a cut-off holder keeps
    /// its lock that long; these end its session once it has been silent for the TTL
    /// (keepalive probes, and a limit on unacknowledged data, which stops probes while it
    /// lasts).
    fn settings(&self) -> String {
        let seconds = |d: Duration| d.as_secs_f64().ceil().max(1.0) as u64;
        format!(
            "SET lock_timeout = {wait}; SET tcp_keepalives_idle = {idle}; \
             SET tcp_keepalives_interval = {interval}; SET tcp_keepalives_count = 2; \
             SET tcp_user_timeout = {ttl}",
            wait = self.wait.as_millis().max(1),
            idle = seconds(self.ttl / 2),
            interval = seconds(self.ttl / 4),
            ttl = self.ttl.as_millis(),
        )
    }

    /// Whether the session still answers, within `patience`: a live session still holds
    /// its locks. The connection is kept either way, and never made again: a new one would be
    /// another session, holding nothing.
    pub async fn ping(&self, patience: Duration) -> Result<(), SessionError> {
        let Some(client) = self.client.as_ref().filter(|c| !c.is_closed()) else {
            return Err(SessionError::Definite(
                "the session is gone: its connection closed".into(),
            ));
        };
        match tokio::time::timeout(patience, client.simple_query("SELECT 1")).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) if e.as_db_error().is_some() => Err(SessionError::Definite(e.to_string())),
            Ok(Err(e)) => Err(SessionError::Indeterminate(e.to_string())),
            Err(_) => Err(SessionError::Indeterminate(format!(
                "no reply within {} ms",
                patience.as_millis()
            ))),
        }
    }

    /// Drops the connection: the server ends the session, and frees its locks, when the close
    /// reaches it (or when its keepalive finds the client gone).
    pub fn close(&mut self) {
        self.client = None;
        self.backend = None;
    }

    /// Ends, from a new session, the session dropped after an unknown outcome, trying for up
    /// to `patience` (its link may be cut): once it is gone, so is any lock it was granted,
    /// which its client never learnt of and never acted under. `Err` says why it may live on.
    pub async fn end_abandoned(&mut self, patience: Duration) -> Result<(), String> {
        let Some(abandoned) = self.abandoned.clone() else {
            return Ok(());
        };
        let deadline = tokio::time::Instant::now() + patience;
        let mut last = String::new();
        while tokio::time::Instant::now() < deadline {
            match self.terminate(&abandoned).await {
                Ok(()) => {
                    self.abandoned = None;
                    return Ok(());
                }
                Err(e) => last = e,
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(format!(
            "the session that may hold it (pid {}) could not be ended within {} s: {last}",
            abandoned.pid,
            patience.as_secs()
        ))
    }

    /// Terminates `backend` (waiting up to a second for it to exit) and checks it is gone.
    async fn terminate(&mut self, backend: &Backend) -> Result<(), String> {
        let client = self.connected().await?;
        let (pid, started) = (backend.pid, backend.started.clone());
        let ended = async {
            client
                .query(
                    "SELECT pg_terminate_backend(pid, 1000) FROM pg_stat_activity \
                     WHERE pid = $1 AND backend_start::text = $2",
                    &[&pid, &started],
                )
                .await?;
            let left = client
                .query(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND backend_start::text = $2",
                    &[&pid, &started],
                )
                .await?;
            Ok::<_, tokio_postgres::Error>(left.is_empty())
        };
        match tokio::time::timeout(OP_TIMEOUT, ended).await {
            Ok(Ok(true)) => Ok(()),
            Ok(Ok(false)) => Err("it is still there".into()),
            Ok(Err(e)) => {
                self.close();
                Err(e.to_string())
            }
            Err(_) => {
                self.close();
                Err("no reply".into())
            }
        }
    }

    /// The open connection, for a transaction the lock lives in.
    pub fn client(&self) -> Option<Arc<Client>> {
        self.client.clone()
    }

    /// Runs one call on the session, bounded by the lock wait and [`OP_TIMEOUT`]; the session
    /// is closed after an unknown outcome.
    pub async fn call<T, F, Fut>(&mut self, call: F) -> Result<T, SessionError>
    where
        F: FnOnce(Arc<Client>) -> Fut,
        Fut: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let client = self.connected().await.map_err(SessionError::Definite)?;
        let outcome = match tokio::time::timeout(self.wait + OP_TIMEOUT, call(client)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
                Err(SessionError::Busy(e.to_string()))
            }
            // The server refused the statement (a terminated session says so too, and its
            // transaction is gone with it).
            Ok(Err(e)) if e.as_db_error().is_some() => Err(SessionError::Definite(e.to_string())),
            Ok(Err(e)) => Err(SessionError::Indeterminate(e.to_string())),
            Err(_) => Err(SessionError::Indeterminate(format!(
                "no reply within {} ms",
                (self.wait + OP_TIMEOUT).as_millis()
            ))),
        };
        if matches!(outcome, Err(SessionError::Indeterminate(_))) {
            self.abandoned = self.backend.take();
            self.close();
        }
        outcome
    }
}

/// Takes the advisory lock on `resource` with `lock` (`pg_advisory_lock` or
/// `pg_advisory_xact_lock`), waiting on the server up to the session's lock wait; returns the
/// session's backend pid and, with `fence`, the grant's fencing token, drawn once the lock is
/// granted (in the outer query). A token drawn inside a transaction that never commits is
/// drawn again after a crash, so only an autocommitted draw is one.
pub async fn lock(
    session: &mut PgSession,
    lock: &'static str,
    resource: &str,
    fence: bool,
) -> Result<(i32, Option<i64>), SessionError> {
    let resource = resource.to_string();
    let token = if fence {
        format!("nextval('{FENCE_SEQUENCE}')")
    } else {
        "NULL::bigint".to_string()
    };
    let sql =
        format!("SELECT pg_backend_pid(), {token} FROM (SELECT {lock}(hashtext($1))) AS granted");
    session
        .call(|client| async move {
            let row = client.query_one(&sql, &[&resource]).await?;
            Ok((row.get(0), row.get(1)))
        })
        .await
}
