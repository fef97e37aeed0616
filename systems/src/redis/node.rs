use std::net::SocketAddr;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, FromRedisValue};

/// Why a command to one node did not return a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeError {
    /// The command was never sent (no connection could be made): it certainly did not happen.
    #[error("{node}: not connected: {message}")]
    Unreachable { node: String, message: String },
    /// The command was sent but no reply came in time, or the connection broke: it may or may
    /// not have happened.
    #[error("{node}: {message}")]
    Indeterminate { node: String, message: String },
    /// The server answered with an error: it did not happen.
    #[error("{node}: server error: {message}")]
    Refused { node: String, message: String },
    /// A Redis Cluster node answered `MOVED`: the key's slot is served at `to`, and the
    /// command did not happen here.
    #[error("{node}: MOVED to {to}")]
    Redirected { node: String, to: String },
}

impl NodeError {
    /// Whether the command may have taken effect.
    pub fn is_indeterminate(&self) -> bool {
        matches!(self, NodeError::Indeterminate { .. })
    }
}

/// A connection to one Redis node that reconnects after any failure, and bounds every command
/// by one timeout (the connect and the reply together).
pub struct NodeConn {
    name: String,
    addr: SocketAddr,
    timeout: Duration,
    conn: Option<MultiplexedConnection>,
}

impl NodeConn {
    pub fn new(name: impl Into<String>, addr: SocketAddr, timeout: Duration) -> NodeConn {
        NodeConn {
            name: name.into(),
            addr,
            timeout,
            conn: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sends a command and waits for its reply.
    pub async fn query<T: FromRedisValue>(&mut self, cmd: &redis::Cmd) -> Result<T, NodeError> {
        let budget = tokio::time::Instant::now() + self.timeout;
        let mut conn = self.connect(budget).await?;
        let reply = tokio::time::timeout_at(budget, cmd.query_async::<T>(&mut conn)).await;
        self.settle(reply)
    }

    /// Runs a Lua script (EVALSHA, falling back to loading it after a restart).
    pub async fn eval<T: FromRedisValue>(
        &mut self,
        script: &redis::Script,
        keys: &[&str],
        args: &[&str],
    ) -> Result<T, NodeError> {
        let budget = tokio::time::Instant::now() + self.timeout;
        let mut conn = self.connect(budget).await?;
        let invocation = invocation(script, keys, args);
        let reply = tokio::time::timeout_at(budget, invocation.invoke_async::<T>(&mut conn)).await;
        self.settle(reply)
    }

    async fn connect(
        &mut self,
        budget: tokio::time::Instant,
    ) -> Result<MultiplexedConnection, NodeError> {
        if let Some(conn) = &self.conn {
            return Ok(conn.clone());
        }
        let unreachable = |message: String| NodeError::Unreachable {
            node: self.name.clone(),
            message,
        };
        let client = redis::Client::open(format!("redis://{}/", self.addr))
            .map_err(|e| unreachable(e.to_string()))?;
        // Our own deadline bounds everything; redis-rs's defaults (500 ms) must not cut in first.
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout));
        let conn = tokio::time::timeout_at(
            budget,
            client.get_multiplexed_async_connection_with_config(&config),
        )
        .await
        .map_err(|_| unreachable("connect timed out".into()))?
        .map_err(|e| unreachable(e.to_string()))?;
        self.conn = Some(conn.clone());
        Ok(conn)
    }

    fn settle<T>(
        &mut self,
        reply: Result<redis::RedisResult<T>, tokio::time::error::Elapsed>,
    ) -> Result<T, NodeError> {
        let error = match reply {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::Moved) => {
                return Err(NodeError::Redirected {
                    node: self.name.clone(),
                    to: e.redirect_node().map_or("?", |(to, _)| to).to_string(),
                })
            }
            Ok(Err(e)) if matches!(e.kind(), redis::ErrorKind::Server(_)) => {
                return Err(NodeError::Refused {
                    node: self.name.clone(),
                    message: e.to_string(),
                })
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("timed out after {} ms", self.timeout.as_millis()),
        };
        // The connection's state is unknown after a timeout or an I/O error: start afresh.
        self.conn = None;
        Err(NodeError::Indeterminate {
            node: self.name.clone(),
            message: error,
        })
    }
}

/// A script call with its keys and arguments.
pub(crate) fn invocation<'a>(
    script: &'a redis::Script,
    keys: &[&str],
    args: &[&str],
) -> redis::ScriptInvocation<'a> {
    let mut invocation = script.prepare_invoke();
    for key in keys {
        invocation.key(*key);
    }
    for arg in args {
        invocation.arg(*arg);
    }
    invocation
}
