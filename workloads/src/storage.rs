//! The storage that the `lock-set` workload protects with the lock: one PostgreSQL row holding
//! a document (a list of ids) and `last_token`, the highest fencing token the storage has seen.
//!
//! With fencing, every access carries the holder's token and the storage refuses any token
//! below `last_token`. Reads register their token too: a holder reads, a newer holder reads and
//! writes, and the old holder's write must then be refused, or the newer holder's append is
//! overwritten by a document read before it (a token check on writes alone lets that through).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::{Client, NoTls};

use crate::Outcome;

/// The document every client appends to.
pub const DOCUMENT: &str = "doc";

/// How long one storage statement may take before its outcome is unknown.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the storage may take to accept connections after its container starts.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the storage is, and whether it checks fencing tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageConfig {
    pub addr: SocketAddr,
    pub fencing: bool,
}

/// One client's connection to the storage.
pub struct Storage {
    session: Session,
    fencing: bool,
}

/// Where a storage's statements go.
enum Session {
    /// A connection of its own, made again once the server has closed it (the storage is the
    /// deployment's own server, and a kill restarted it).
    Own {
        config: StorageConfig,
        client: tokio::sync::Mutex<Arc<Client>>,
    },
    /// The lock holder's open transaction (PostgreSQL's transaction-level advisory lock):
    /// the write commits it, and the lock goes with the commit.
    Transaction(Arc<Client>),
}

impl Storage {
    /// Connects, retrying while the server is still starting up.
    pub async fn connect(config: StorageConfig) -> Result<Storage, String> {
        let started = tokio::time::Instant::now();
        loop {
            match open(config.addr).await {
                Ok(client) => {
                    return Ok(Storage {
                        session: Session::Own {
                            config,
                            client: tokio::sync::Mutex::new(Arc::new(client)),
                        },
                        fencing: config.fencing,
                    });
                }
                Err(e) if started.elapsed() < READY_TIMEOUT => {
                    tracing::debug!("storage not ready yet: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => {
                    return Err(format!(
                        "the storage at {} did not accept a connection within {} s: {e}",
                        config.addr,
                        READY_TIMEOUT.as_secs()
                    ))
                }
            }
        }
    }

    /// The storage as seen from inside a lock holder's transaction on it: reads and writes
    /// join the transaction, and the write commits it.
    pub fn in_transaction(client: Arc<Client>, fencing: bool) -> Storage {
        Storage {
            session: Session::Transaction(client),
            fencing,
        }
    }

    /// The connection to use now: for an own connection the server closed, a new one.
    async fn client(&self) -> Result<Arc<Client>, String> {
        match &self.session {
            Session::Transaction(client) => Ok(client.clone()),
            Session::Own { config, client } => {
                let mut client = client.lock().await;
                if client.is_closed() {
                    *client = Arc::new(open(config.addr).await.map_err(|e| {
                        format!("the storage closed the connection, and reconnecting: {e}")
                    })?);
                }
                Ok(client.clone())
            }
        }
    }

    /// Creates the document, empty, with no token seen.
    pub async fn create_document(&self) -> Result<(), String> {
        self.client()
            .await?
            .batch_execute(&format!(
                "CREATE TABLE IF NOT EXISTS documents (
                     id text PRIMARY KEY,
                     doc bigint[] NOT NULL DEFAULT '{{}}',
                     last_token bigint NOT NULL DEFAULT 0
                 );
                 INSERT INTO documents (id) VALUES ('{DOCUMENT}') ON CONFLICT DO NOTHING;"
            ))
            .await
            .map_err(|e| format!("creating the document in the storage: {e}"))
    }

    /// Reads the document; with fencing, under `fence`, which the storage then remembers.
    pub async fn read(&self, fence: Option<u64>) -> Outcome<Vec<i64>> {
        let client = match self.client().await {
            Ok(client) => client,
            Err(e) => return Outcome::Fail(e),
        };
        let rows = if self.fencing {
            let fence = fence.unwrap_or_default() as i64;
            self.timed(client.query(
                "UPDATE documents SET last_token = $2 WHERE id = $1 AND last_token <= $2 \
                 RETURNING doc",
                &[&DOCUMENT, &fence],
            ))
            .await
        } else {
            self.timed(client.query("SELECT doc FROM documents WHERE id = $1", &[&DOCUMENT]))
                .await
        };
        match rows {
            Ok(rows) => match rows.first() {
                Some(row) => Outcome::Ok(row.get(0)),
                None => refused(&client, fence).await,
            },
            Err(outcome) => outcome,
        }
    }

    /// Replaces the document; with fencing, only if no newer token has been seen. Inside a
    /// lock holder's transaction, the write is done when the transaction commits.
    pub async fn write(&self, doc: &[i64], fence: Option<u64>) -> Outcome<()> {
        let client = match self.client().await {
            Ok(client) => client,
            Err(e) => return Outcome::Fail(e),
        };
        let changed = if self.fencing {
            let fence = fence.unwrap_or_default() as i64;
            self.timed(client.execute(
                "UPDATE documents SET doc = $2, last_token = $3 \
                 WHERE id = $1 AND last_token <= $3",
                &[&DOCUMENT, &doc, &fence],
            ))
            .await
        } else {
            self.timed(client.execute(
                "UPDATE documents SET doc = $2 WHERE id = $1",
                &[&DOCUMENT, &doc],
            ))
            .await
        };
        if let (Ok(_), Session::Transaction(_)) = (&changed, &self.session) {
            // The write ends the lock's transaction, refused or not: the lock goes with it.
            if let Err(outcome) = self.timed(client.batch_execute("COMMIT")).await {
                return outcome;
            }
        }
        match changed {
            Ok(0) => refused(&client, fence).await,
            Ok(_) => Outcome::Ok(()),
            Err(outcome) => outcome,
        }
    }

    /// Bounds a statement by the timeout; a timeout or a broken connection is unknown.
    async fn timed<T, U, F>(&self, statement: F) -> Result<T, Outcome<U>>
    where
        F: std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    {
        match tokio::time::timeout(STATEMENT_TIMEOUT, statement).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) if e.as_db_error().is_some() => Err(Outcome::Fail(e.to_string())),
            Ok(Err(e)) => Err(Outcome::Info(e.to_string())),
            Err(_) => Err(Outcome::Info(format!(
                "no reply from the storage within {} s",
                STATEMENT_TIMEOUT.as_secs()
            ))),
        }
    }
}

/// A connection of its own to the storage's server.
async fn open(addr: SocketAddr) -> Result<Client, tokio_postgres::Error> {
    let params = format!(
        "host={} port={} user=postgres dbname=postgres connect_timeout=5",
        addr.ip(),
        addr.port()
    );
    let (client, connection) = tokio_postgres::connect(&params, NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!("storage connection ended: {e}");
        }
    });
    Ok(client)
}

/// The outcome of an access the fencing check refused, naming the newer token.
async fn refused<T>(client: &Client, fence: Option<u64>) -> Outcome<T> {
    let newer: Option<i64> = client
        .query_opt(
            "SELECT last_token FROM documents WHERE id = $1",
            &[&DOCUMENT],
        )
        .await
        .ok()
        .flatten()
        .map(|row| row.get(0));
    Outcome::Fail(format!(
        "rejected: fencing token {} is below {} that the storage has seen",
        fence.map_or("(none)".to_string(), |f| f.to_string()),
        newer.map_or("a newer one".to_string(), |n| n.to_string())
    ))
}
