//! PostgreSQL: one server, whose advisory locks the article recommends ("it is physically
//! impossible for a client to forget to release the lock or for the lock to expire
//! prematurely"). The server is also the database the `lock-set` document lives in, as an
//! application keeps its data beside its locks.

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_postgres::NoTls;

use splitbrain_compose::image::{Recipe, NODE_ENTRY_POINT};
use splitbrain_compose::System;

/// The port the server listens on.
pub const POSTGRES_PORT: u16 = 5432;

pub struct Postgres;

pub static SERVER: Postgres = Postgres;

/// The server: Debian's PostgreSQL, a cluster made at build time, iptables, and the node entry
/// point that crashes and restarts the server in place (keeping its data directory).
static IMAGE: Recipe = Recipe {
    repository: "splitbrain/postgres-node",
    context: &[
        ("Dockerfile", include_str!("image/Dockerfile"), 0o644),
        NODE_ENTRY_POINT,
    ],
    args: &[],
};

impl System for Postgres {
    fn name(&self) -> &'static str {
        "postgres-15"
    }

    fn summary(&self) -> &'static str {
        "Debian bookworm's PostgreSQL 15 (the postgres deployment's)"
    }

    fn image(&self) -> &'static Recipe {
        &IMAGE
    }

    fn port(&self) -> u16 {
        POSTGRES_PORT
    }

    fn command(&self, args: Vec<String>) -> Vec<String> {
        // PostgreSQL refuses to run as root; setpriv drops to its user and execs, so that the
        // entry point's crash kills the postmaster itself.
        [
            "setpriv",
            "--reuid=postgres",
            "--regid=postgres",
            "--init-groups",
            "postgres",
        ]
        .into_iter()
        .map(String::from)
        .chain(args)
        .collect()
    }

    fn probe(&self, addr: SocketAddr) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async move { query_one(addr, "SELECT 1::text").await.map(drop) })
    }

    fn version(&self, addr: SocketAddr) -> BoxFuture<'static, Option<String>> {
        Box::pin(async move {
            let version = query_one(addr, "SHOW server_version").await.ok()?;
            // `15.14 (Debian 15.14-0+deb12u1)`: the number is what matters.
            let number = version.split_whitespace().next()?;
            Some(format!("postgres {number}"))
        })
    }

    fn log_file(&self) -> &'static str {
        "postgres.log"
    }

    fn clock_faults_reach(&self) -> bool {
        // The node image has no clock shim; and an advisory lock keeps no time at all.
        false
    }

    fn serves_storage(&self) -> bool {
        true
    }
}

/// One text value from the server, asked on a connection of its own, given a second.
async fn query_one(addr: SocketAddr, sql: &'static str) -> Result<String, String> {
    let params = format!(
        "host={} port={} user=postgres dbname=postgres connect_timeout=1",
        addr.ip(),
        addr.port()
    );
    let attempt = async {
        let (client, connection) = tokio_postgres::connect(&params, NoTls).await?;
        let connection = tokio::spawn(connection);
        let row = client.query_one(sql, &[]).await;
        drop(client);
        let _ = connection.await;
        row.map(|row| row.get::<_, String>(0))
    };
    match tokio::time::timeout(Duration::from_secs(1), attempt).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".into()),
    }
}
