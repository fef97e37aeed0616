//! MariaDB: one server, whose named locks (`GET_LOCK`) Rails' `with_advisory_lock`, Laravel's
//! and django-mysql's users take.

use std::net::SocketAddr;

use futures_util::future::BoxFuture;

use splitbrain_compose::image::{Recipe, NODE_ENTRY_POINT};
use splitbrain_compose::System;

use super::session::query_once;

/// The port the server listens on.
pub const MARIADB_PORT: u16 = 3306;

pub struct MariaDb;

pub static SERVER: MariaDb = MariaDb;

/// The server: Debian's MariaDB, its data directory made at build time, iptables, and the node
/// entry point that crashes and restarts the server in place (keeping its data directory).
static IMAGE: Recipe = Recipe {
    repository: "splitbrain/mariadb-node",
    context: &[
        ("Dockerfile", include_str!("image/Dockerfile"), 0o644),
        ("my.cnf", include_str!("image/my.cnf"), 0o644),
        NODE_ENTRY_POINT,
    ],
    args: &[],
};

impl System for MariaDb {
    fn name(&self) -> &'static str {
        "mariadb-10.11"
    }

    fn summary(&self) -> &'static str {
        "Debian bookworm's MariaDB 10.11 (the mariadb deployment's)"
    }

    fn image(&self) -> &'static Recipe {
        &IMAGE
    }

    fn port(&self) -> u16 {
        MARIADB_PORT
    }

    fn command(&self, args: Vec<String>) -> Vec<String> {
        // The server itself, not a wrapper script: the entry point's crash must kill it.
        ["mariadbd".to_string(), "--user=root".to_string()]
            .into_iter()
            .chain(args)
            .collect()
    }

    fn probe(&self, addr: SocketAddr) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async move { query_once(addr, "SELECT 1").await.map(drop) })
    }

    fn version(&self, addr: SocketAddr) -> BoxFuture<'static, Option<String>> {
        Box::pin(async move {
            let version = query_once(addr, "SELECT VERSION()").await.ok()?;
            // `10.11.18-MariaDB-0+deb12u1`: the number is what matters.
            let number = version.split('-').next()?;
            Some(format!("mariadb {number}"))
        })
    }

    fn log_file(&self) -> &'static str {
        "mariadb.log"
    }

    fn clock_faults_reach(&self) -> bool {
        // The node image has no clock shim; and a named lock keeps no time of its own.
        false
    }
}
