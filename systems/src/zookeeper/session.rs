//! A ZooKeeper session as a lock client process holds one: every member in the connect
//! string, the session timeout the lock's lease is, each call bounded in time, each error
//! sorted into "certainly not done" and "may have been done".
//!
//! The session lives on a runtime of its own, on a thread of its own, as a client library's
//! session lives in the client's process: freezing that runtime ([`ZkConn::freeze`]) stops
//! the session's pings with the rest of the client, as a GC pause stops every thread (the
//! server then expires the session while the client sleeps, which is the hazard the client
//! pause is there to show), and ending it without closing the session is a crash.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use zookeeper_client as zk;

/// How long one call may take before its outcome is unknown: a write is committed by a
/// quorum's fsync, which takes longer than a Redis command on a busy machine.
pub const OP_TIMEOUT: Duration = Duration::from_secs(2);

/// The session timeouts the zookeeper deployment grants: 2 to 20 ticks of 500 ms. A server
/// silently raises or lowers a timeout outside them, and the holder would count on a lease
/// the server does not keep, so clients refuse such a `--ttl` before the run.
pub const SESSION_TIMEOUTS: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(10));

/// What went wrong with one call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZkError {
    /// The request was refused or never sent: it took no effect.
    #[error("{0}")]
    Definite(String),
    /// It may have been carried out: a timeout, a lost connection.
    #[error("{0}")]
    Indeterminate(String),
    /// The node it names does not exist (a definite answer).
    #[error("no such node")]
    NoNode,
}

impl ZkError {
    /// Sorts a library error: only a lost connection or a timeout leaves a request's fate
    /// open.
    pub fn of(error: zk::Error) -> ZkError {
        match error {
            zk::Error::ConnectionLoss | zk::Error::Timeout => {
                ZkError::Indeterminate(error.to_string())
            }
            zk::Error::NoNode => ZkError::NoNode,
            _ => ZkError::Definite(error.to_string()),
        }
    }
}

/// One client process's session with the ensemble, made at its first call and made again
/// after it ends.
pub struct ZkConn {
    cluster: String,
    ttl: Duration,
    /// The runtime the session runs on, while there is one.
    session: Option<Session>,
}

/// A live session and the runtime (and thread) it runs on.
struct Session {
    client: zk::Client,
    runtime: tokio::runtime::Handle,
    /// Dropped to thaw the runtime after [`ZkConn::freeze`]. Declared before `stop`, so that
    /// a frozen runtime thaws before it is told to stop.
    thaw: Option<std::sync::mpsc::Sender<()>>,
    /// Dropped to end the runtime, and the connection with it; the session is detached, so
    /// neither this nor dropping `client` closes it.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl ZkConn {
    /// A session with these members, for locks leased for `ttl`, made at its first call.
    pub fn new(nodes: &[(String, SocketAddr)], ttl: Duration) -> ZkConn {
        let cluster: Vec<String> = nodes.iter().map(|(_, addr)| addr.to_string()).collect();
        ZkConn {
            cluster: cluster.join(","),
            ttl,
            session: None,
        }
    }

    /// The session, made if there is none or it has ended (expired, closed): its ephemeral
    /// nodes, and the locks they are, went with it.
    pub async fn session(&mut self) -> Result<(), ZkError> {
        if let Some(session) = &self.session {
            if !session.client.state().is_terminated() {
                return Ok(());
            }
        }
        self.session = None;
        let (runtime, stop) = client_runtime()?;
        let (ttl, cluster) = (self.ttl, self.cluster.clone());
        // The session task is spawned on the runtime that connects.
        let connect = zk::Client::connector()
            .with_session_timeout(ttl)
            // NoHosts once every member was tried, instead of trying them until the timeout.
            .with_fail_eagerly()
            // Dropping the last handle would otherwise send closeSession, and the servers
            // would delete the session's nodes at once: an abandoned session (a crash, an
            // attempt cut off) must live on until the servers expire it.
            .with_detached();
        let connecting = runtime.spawn(async move { connect.connect(&cluster).await });
        let client = match tokio::time::timeout(ttl + OP_TIMEOUT, connecting).await {
            Ok(Ok(Ok(client))) => client,
            Ok(Ok(Err(e))) => return Err(ZkError::Definite(format!("connecting: {e}"))),
            Ok(Err(e)) => return Err(ZkError::Definite(format!("connecting: {e}"))),
            Err(_) => return Err(ZkError::Definite("connecting: timed out".into())),
        };
        if client.session_timeout() != ttl {
            return Err(ZkError::Definite(format!(
                "asked for a {} ms session and ZooKeeper granted {} ms",
                ttl.as_millis(),
                client.session_timeout().as_millis()
            )));
        }
        self.session = Some(Session {
            client,
            runtime,
            thaw: None,
            _stop: stop,
        });
        Ok(())
    }

    /// Runs one call on the session's runtime, bounded by [`OP_TIMEOUT`]. A session that
    /// expired is dropped, so that the next call makes a new one.
    pub async fn call<T, F, Fut>(&mut self, call: F) -> Result<T, ZkError>
    where
        T: Send + 'static,
        F: FnOnce(zk::Client) -> Fut,
        Fut: Future<Output = Result<T, zk::Error>> + Send + 'static,
    {
        self.session().await?;
        let session = self.session.as_ref().expect("a session was just made");
        let task = session.runtime.spawn(call(session.client.clone()));
        let abort = task.abort_handle();
        let outcome = match tokio::time::timeout(OP_TIMEOUT, task).await {
            Ok(Ok(Ok(reply))) => Ok(reply),
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(e)) => return Err(ZkError::Indeterminate(e.to_string())),
            Err(_) => {
                abort.abort();
                return Err(ZkError::Indeterminate(format!(
                    "no answer within {} ms",
                    OP_TIMEOUT.as_millis()
                )));
            }
        };
        if let Err(zk::Error::SessionExpired | zk::Error::ClientClosed) = outcome {
            self.session = None;
        }
        outcome.map_err(ZkError::of)
    }

    /// Waits, on the session's runtime, for `wait` to end, for at most `patience`; `None` when
    /// it did not.
    pub async fn wait<T, Fut>(&self, wait: Fut, patience: Duration) -> Option<T>
    where
        T: Send + 'static,
        Fut: Future<Output = T> + Send + 'static,
    {
        let session = self.session.as_ref()?;
        let task = session.runtime.spawn(wait);
        let abort = task.abort_handle();
        match tokio::time::timeout(patience, task).await {
            Ok(done) => done.ok(),
            Err(_) => {
                abort.abort();
                None
            }
        }
    }

    /// The session timeout asked for (and granted): the lock's lease.
    pub fn session_timeout(&self) -> Duration {
        self.ttl
    }

    /// Ends the session without closing it, as a crash does: the server expires it (and
    /// deletes its ephemeral nodes) a session timeout after it last heard from it.
    pub fn abandon(&mut self) {
        self.session = None;
    }

    /// Freezes (or thaws) the session's runtime: no ping leaves while frozen.
    pub fn freeze(&mut self, frozen: bool) {
        let Some(session) = &mut self.session else {
            return;
        };
        if !frozen {
            session.thaw = None;
            return;
        }
        let (thaw, frozen_until) = std::sync::mpsc::channel::<()>();
        // A blocking wait inside the runtime's only thread stops every task on it, the
        // session's included, until the sender is dropped.
        session.runtime.spawn(async move {
            let _ = frozen_until.recv();
        });
        session.thaw = Some(thaw);
    }
}

/// A single-threaded runtime on a thread of its own, which runs until the returned sender is
/// dropped.
fn client_runtime() -> Result<(tokio::runtime::Handle, tokio::sync::oneshot::Sender<()>), ZkError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ZkError::Definite(format!("starting the client's runtime: {e}")))?;
    let handle = runtime.handle().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("zookeeper-session".into())
        .spawn(move || {
            let _ = runtime.block_on(stopped);
        })
        .map_err(|e| ZkError::Definite(format!("starting the client's thread: {e}")))?;
    Ok((handle, stop))
}

/// Why a `--ttl` cannot be a session timeout on the zookeeper deployment, if it cannot.
pub fn check_ttl(ttl: Duration) -> Result<(), String> {
    let (least, most) = SESSION_TIMEOUTS;
    if ttl < least || ttl > most {
        return Err(format!(
            "a ZooKeeper lock's lease is its session timeout, which the zookeeper deployment \
             grants from {} to {} s (2 to 20 ticks of 500 ms), and --ttl is {} ms; use --ttl \
             between 1s and 10s",
            least.as_secs(),
            most.as_secs(),
            ttl.as_millis()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_connections_are_unknown_and_refusals_are_definite() {
        for unknown in [zk::Error::ConnectionLoss, zk::Error::Timeout] {
            assert!(matches!(ZkError::of(unknown), ZkError::Indeterminate(_)));
        }
        assert_eq!(ZkError::of(zk::Error::NoNode), ZkError::NoNode);
        for definite in [
            zk::Error::SessionExpired,
            zk::Error::NodeExists,
            zk::Error::NoHosts,
        ] {
            assert!(matches!(ZkError::of(definite), ZkError::Definite(_)));
        }
    }

    #[test]
    fn sessions_last_from_one_to_ten_seconds() {
        assert!(check_ttl(Duration::from_secs(1)).is_ok());
        assert!(check_ttl(Duration::from_millis(2500)).is_ok());
        assert!(check_ttl(Duration::from_secs(10)).is_ok());
        assert!(check_ttl(Duration::from_millis(999)).is_err());
        assert!(check_ttl(Duration::from_secs(11)).is_err());
    }
}
