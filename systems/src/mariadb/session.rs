//! A lock client's session on the MariaDB server: one connection, made when needed, whose
//! server-side session is what holds its named locks. Each call is bounded in time and its
//! error sorted into "certainly not done" and "may have been done"; after the latter the
//! connection is dropped, and the next acquire ends that session from a new one
//! ([`MySession::end_abandoned`]), so that whatever it may hold is gone.
//!
//! The session's lease is the server's `wait_timeout`, set to the TTL: the server ends a
//! session whose client has sent nothing for that long, and with it the session's locks. Unlike
//! PostgreSQL's keepalive, which a frozen client's kernel answers, this counts the client's own
//! commands: a holder that stops pinging loses its lock a TTL later, paused or cut off alike.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::Instant;

use futures_util::future::BoxFuture;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, DriverError, Error, OptsBuilder};

use crate::session_error::SessionError;

/// How long a call may take beyond the server-side lock wait before its outcome is unknown.
pub const OP_TIMEOUT: Duration = Duration::from_secs(2);
/// The counter that numbers grants: a holder draws from it once its lock is granted, so each
/// grant's number is above every earlier holder's, a fencing token. A row, not a sequence:
/// a sequence's cache hands out numbers again after a crash.
const DRAW_FENCE: &str = "UPDATE splitbrain.fence SET n = LAST_INSERT_ID(n + 1)";

/// One client process's session.
pub struct MySession {
    node: String,
    addr: SocketAddr,
    /// The lease: how long the server lets the session's client stay silent.
    ttl: Duration,
    /// How long the server may make an acquire wait for the lock.
    wait: Duration,
    conn: Option<Conn>,
    /// When the server last answered on the connection.
    last_heard: Instant,
    /// The name of a lock each session takes at connect, by which a later session finds it
    /// (`IS_USED_LOCK` names its connection): connection ids start again after a restart, a
    /// lock held by a session that no longer exists does not.
    marker: Option<String>,
    /// The marker of a session dropped after an unknown outcome, which may hold a lock until
    /// the server ends it.
    abandoned: Option<String>,
}

impl MySession {
    /// A session on the server `node` at `addr`, whose lease (the server's `wait_timeout`) is
    /// `ttl`, in whole seconds.
    pub fn new(node: String, addr: SocketAddr, ttl: Duration) -> MySession {
        MySession {
            node,
            addr,
            ttl,
            // As etcd's lock waits: half the lease, then try again.
            wait: ttl / 2,
            conn: None,
            last_heard: Instant::now(),
            marker: None,
            abandoned: None,
        }
    }

    /// The node every grant comes from.
    pub fn node(&self) -> String {
        self.node.clone()
    }

    /// Connects the session if it has no connection.
    pub async fn connect(&mut self) -> Result<(), String> {
        if self.conn.is_none() {
            let marker = format!("splitbrain-session-{:016x}", rand::random::<u64>());
            self.conn = Some(self.open(&marker).await?);
            self.last_heard = Instant::now();
            self.marker = Some(marker);
        }
        Ok(())
    }

    async fn open(&self, marker: &str) -> Result<Conn, String> {
        let lease = self.ttl.as_secs_f64().ceil().max(1.0) as u64;
        let attempt = async {
            let mut conn = Conn::new(options(self.addr)).await?;
            conn.query_drop(format!("SET SESSION wait_timeout = {lease}"))
                .await?;
            conn.exec_drop("DO GET_LOCK(?, 0)", (marker,)).await?;
            Ok::<_, Error>(conn)
        };
        match tokio::time::timeout(OP_TIMEOUT, attempt).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(format!("connecting to {}: {e}", self.node)),
            Err(_) => Err(format!("connecting to {}: timed out", self.node)),
        }
    }

    /// Takes the named lock `resource`, the server waiting for it up to the session's lock
    /// wait, and draws the grant's fencing token once it is granted. A grant whose token could
    /// not be drawn is an unknown outcome: the session is dropped and ended, lock and all.
    pub async fn get_lock(&mut self, resource: &str) -> Result<u64, SessionError> {
        // A session silent for half its lease may be about to be ended by the server, and
        // one that holds no lock is as good as a new one: a new one it is, as a connection
        // pool checks an idle connection before it lends it out.
        if self.last_heard.elapsed() > self.ttl / 2 {
            self.close();
        }
        self.connect().await.map_err(SessionError::Definite)?;
        let (resource, wait) = (resource.to_string(), self.wait.as_secs_f64());
        let limit = self.wait + OP_TIMEOUT;
        let answer = self
            .call(limit, move |conn| {
                Box::pin(async move {
                    let granted: Option<Option<i64>> = conn
                        .exec_first("SELECT GET_LOCK(?, ?)", (resource, wait))
                        .await?;
                    match granted.flatten() {
                        Some(1) => {}
                        Some(_) => return Ok(Err(SessionError::Busy("GET_LOCK timed out".into()))),
                        None => {
                            return Ok(Err(SessionError::Definite("GET_LOCK returned NULL".into())))
                        }
                    }
                    let untokened = |why: String| {
                        Error::Other(
                            format!("granted, but no fencing token was drawn: {why}").into(),
                        )
                    };
                    conn.query_drop(DRAW_FENCE)
                        .await
                        .map_err(|e| untokened(e.to_string()))?;
                    let fence = conn.last_insert_id();
                    let fence =
                        fence.ok_or_else(|| untokened("the server named no number".into()))?;
                    Ok(Ok(fence))
                })
            })
            .await;
        answer.and_then(|granted| granted)
    }

    /// Releases the named lock `resource`: whether this session held it.
    pub async fn release_lock(&mut self, resource: &str) -> Result<bool, SessionError> {
        self.connect().await.map_err(SessionError::Definite)?;
        let resource = resource.to_string();
        self.call(OP_TIMEOUT, move |conn| {
            Box::pin(async move {
                let released: Option<Option<i64>> = conn
                    .exec_first("SELECT RELEASE_LOCK(?)", (resource,))
                    .await?;
                Ok(released.flatten() == Some(1))
            })
        })
        .await
    }

    /// Whether the session still answers, within `patience`: the server has just heard from
    /// its client, and will keep the session, and its locks, for another TTL. The connection
    /// is never made again here: a new one would be another session, holding nothing.
    pub async fn ping(&mut self, patience: Duration) -> Result<(), SessionError> {
        self.call(patience, |conn| Box::pin(conn.ping())).await
    }

    /// Runs `call` on the session's connection within `limit`, sorting its error. After an
    /// unknown outcome the session is dropped, and remembered as abandoned.
    async fn call<T, F>(&mut self, limit: Duration, call: F) -> Result<T, SessionError>
    where
        F: for<'c> FnOnce(&'c mut Conn) -> BoxFuture<'c, Result<T, Error>>,
    {
        let Some(mut conn) = self.conn.take() else {
            return Err(SessionError::Definite(
                "the session is gone: its connection closed".into(),
            ));
        };
        let outcome = match tokio::time::timeout(limit, call(&mut conn)).await {
            Ok(Ok(value)) => {
                self.last_heard = Instant::now();
                Ok(value)
            }
            Ok(Err(Error::Server(e))) => Err(SessionError::Definite(e.to_string())),
            // The connection was closed before the call was sent (the server ended the
            // session): nothing happened, and nothing is held any more.
            Ok(Err(e @ Error::Driver(DriverError::ConnectionClosed))) => {
                self.close();
                return Err(SessionError::Definite(format!("the session is gone: {e}")));
            }
            Ok(Err(e)) => Err(SessionError::Indeterminate(e.to_string())),
            Err(_) => Err(SessionError::Indeterminate(format!(
                "no reply within {} ms",
                limit.as_millis()
            ))),
        };
        if matches!(outcome, Err(SessionError::Indeterminate(_))) {
            self.abandoned = self.marker.take();
            self.close();
        } else {
            self.conn = Some(conn);
        }
        outcome
    }

    /// Drops the connection: the server ends the session, and frees its locks, when the
    /// close reaches it (or when `wait_timeout` finds the client silent).
    pub fn close(&mut self) {
        // Dropping a connection sends its goodbye in the background.
        self.conn = None;
        self.marker = None;
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
            let killed = self.kill(&abandoned).await;
            // A session of this search that was itself dropped holds no lock, only its marker.
            self.abandoned = Some(abandoned.clone());
            match killed {
                Ok(()) => {
                    self.abandoned = None;
                    return Ok(());
                }
                Err(e) => last = e,
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(format!(
            "the session that may hold it could not be ended within {} s: {last}",
            patience.as_secs()
        ))
    }

    /// Kills the session holding `marker`, if one still does, and checks it is gone.
    async fn kill(&mut self, marker: &str) -> Result<(), String> {
        self.connect().await?;
        let marker = marker.to_string();
        let gone = self
            .call(OP_TIMEOUT, move |conn| {
                Box::pin(async move {
                    for _ in 0..10 {
                        let holder: Option<Option<u64>> = conn
                            .exec_first("SELECT IS_USED_LOCK(?)", (&marker,))
                            .await?;
                        let Some(id) = holder.flatten() else {
                            return Ok(true);
                        };
                        // A session already on its way out is no error: it is gone once it
                        // lets go of its marker.
                        match conn.query_drop(format!("KILL CONNECTION {id}")).await {
                            Ok(()) | Err(Error::Server(_)) => {}
                            Err(e) => return Err(e),
                        }
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    Ok(false)
                })
            })
            .await;
        match gone {
            Ok(true) => Ok(()),
            Ok(false) => Err("it is still there".into()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// How every connection to the server at `addr` is made: by TCP, as root, into the database
/// the fencing counter lives in.
fn options(addr: SocketAddr) -> OptsBuilder {
    OptsBuilder::default()
        .ip_or_hostname(addr.ip().to_string())
        .tcp_port(addr.port())
        .user(Some("root"))
        .db_name(Some("splitbrain"))
        // The client would otherwise look for the server's Unix socket, on this machine.
        .prefer_socket(false)
        // Known, so that connecting asks the server nothing more.
        .wait_timeout(Some(28_800))
}

/// One text value from the server, asked on a connection of its own, given a second.
pub async fn query_once(addr: SocketAddr, sql: &'static str) -> Result<String, String> {
    let attempt = async {
        let mut conn = Conn::new(options(addr)).await?;
        let value: Option<String> = conn.query_first(sql).await?;
        let _ = conn.disconnect().await;
        Ok::<_, Error>(value.unwrap_or_default())
    };
    match tokio::time::timeout(Duration::from_secs(1), attempt).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".into()),
    }
}
