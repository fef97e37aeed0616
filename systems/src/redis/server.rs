//! Redis: `redis-server` (and `redis-sentinel` beside it where Sentinel watches the nodes), in
//! the versions Debian packages: 7.0 (bookworm), 8.0 and Valkey 8.1 (trixie).

use std::net::SocketAddr;

use futures_util::future::BoxFuture;

use splitbrain_compose::clock::now_ns;
use splitbrain_compose::image::{Recipe, NODE_ENTRY_POINT};
use splitbrain_compose::System;

use super::roles::ask;

/// The port every node's Redis listens on, inside its own address.
pub const REDIS_PORT: u16 = 6379;

/// A Redis server of one version, from Debian's packages: its image differs by suite and
/// package, and everything else is the same.
pub struct Redis {
    server: &'static str,
    summary: &'static str,
    image: &'static Recipe,
}

/// The image's files, the same for every version.
const CONTEXT: &[(&str, &str, u32)] = &[
    ("Dockerfile", include_str!("image/Dockerfile"), 0o644),
    ("clockshim.c", include_str!("image/clockshim.c"), 0o644),
    NODE_ENTRY_POINT,
];

/// Debian bookworm's Redis 7.0: the default.
pub static REDIS_7_0: Redis = Redis {
    server: "redis-7.0",
    summary: "Debian bookworm's Redis 7.0 (the default on Redis deployments)",
    image: &Recipe {
        repository: "splitbrain/redis-node",
        context: CONTEXT,
        args: &[],
    },
};

/// Debian trixie's Redis 8.0.
pub static REDIS_8_0: Redis = Redis {
    server: "redis-8.0",
    summary: "Debian trixie's Redis 8.0",
    image: &Recipe {
        repository: "splitbrain/redis-8.0-node",
        context: CONTEXT,
        args: &[
            ("SUITE", "trixie"),
            ("PACKAGES", "redis-server redis-sentinel redis-tools"),
        ],
    },
};

/// Debian trixie's Valkey 8.1, the Linux Foundation's fork of Redis 7.2.
pub static VALKEY_8_1: Redis = Redis {
    server: "valkey-8.1",
    summary: "Debian trixie's Valkey 8.1, the fork of Redis 7.2",
    image: &Recipe {
        repository: "splitbrain/valkey-8.1-node",
        context: CONTEXT,
        args: &[
            ("SUITE", "trixie"),
            ("PACKAGES", "valkey-server valkey-sentinel valkey-tools"),
        ],
    },
};

impl System for Redis {
    fn name(&self) -> &'static str {
        self.server
    }

    fn summary(&self) -> &'static str {
        self.summary
    }

    fn image(&self) -> &'static Recipe {
        self.image
    }

    fn port(&self) -> u16 {
        REDIS_PORT
    }

    fn command(&self, args: Vec<String>) -> Vec<String> {
        let port = REDIS_PORT.to_string();
        let fixed = [
            "redis-server",
            "--bind",
            "0.0.0.0",
            "--protected-mode",
            "no",
            "--logfile",
            "",
            "--port",
            &port,
        ];
        fixed.iter().map(|s| s.to_string()).chain(args).collect()
    }

    fn probe(&self, addr: SocketAddr) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async move { ask::<String>(addr, &redis::cmd("PING")).await.map(drop) })
    }

    fn clock_skew_ms(&self, addr: SocketAddr) -> BoxFuture<'static, Result<f64, String>> {
        Box::pin(async move {
            let client =
                redis::Client::open(format!("redis://{addr}/")).map_err(|e| e.to_string())?;
            let mut conn = client
                .get_multiplexed_async_connection()
                .await
                .map_err(|e| e.to_string())?;
            // The host's time is taken either side of the question alone, the connection made.
            let before = now_ns();
            let (secs, micros): (i64, i64) = redis::cmd("TIME")
                .query_async(&mut conn)
                .await
                .map_err(|e| e.to_string())?;
            let after = now_ns();
            let node_ns = secs * 1_000_000_000 + micros * 1_000;
            Ok((node_ns - (before + after) / 2) as f64 / 1e6)
        })
    }

    fn version(&self, addr: SocketAddr) -> BoxFuture<'static, Option<String>> {
        Box::pin(async move {
            let info: String = ask(addr, redis::cmd("INFO").arg("server")).await.ok()?;
            let field = |name: &str| {
                info.lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(|v| v.trim().to_string())
            };
            // Valkey reports the Redis version it is compatible with as `redis_version`.
            match field("valkey_version:") {
                Some(valkey) => Some(format!("valkey {valkey}")),
                None => Some(format!("redis {}", field("redis_version:")?)),
            }
        })
    }

    fn log_file(&self) -> &'static str {
        "redis.log"
    }

    fn clock_faults_reach(&self) -> bool {
        true
    }
}
