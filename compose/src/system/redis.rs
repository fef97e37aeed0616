//! Redis: `redis-server` (and `redis-sentinel` beside it where Sentinel watches the nodes).

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::System;
use crate::image::Recipe;

/// The port every node's Redis listens on, inside its own address.
pub const REDIS_PORT: u16 = 6379;

pub struct Redis;

pub static REDIS: Redis = Redis;

/// The Redis node: redis-server and sentinel, iptables, and the clock shim.
static IMAGE: Recipe = Recipe {
    repository: "splitbrain/redis-node",
    context: &[
        (
            "Dockerfile",
            include_str!("../../images/redis/Dockerfile"),
            0o644,
        ),
        (
            "clockshim.c",
            include_str!("../../images/redis/clockshim.c"),
            0o644,
        ),
        (
            "splitbrain-node",
            include_str!("../../images/redis/splitbrain-node"),
            0o755,
        ),
    ],
};

impl System for Redis {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn image(&self) -> &'static Recipe {
        &IMAGE
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

    fn version(&self, addr: SocketAddr) -> BoxFuture<'static, Option<String>> {
        Box::pin(async move {
            let info: String = ask(addr, redis::cmd("INFO").arg("server")).await.ok()?;
            info.lines()
                .find_map(|l| l.strip_prefix("redis_version:"))
                .map(|v| v.trim().to_string())
        })
    }

    fn log_file(&self) -> &'static str {
        "redis.log"
    }

    fn clock_faults_reach(&self) -> bool {
        true
    }
}

/// One command to one server, on a connection of its own, given a second to answer.
pub(crate) async fn ask<T: redis::FromRedisValue>(
    addr: SocketAddr,
    cmd: &redis::Cmd,
) -> Result<T, String> {
    let client = redis::Client::open(format!("redis://{addr}/")).map_err(|e| e.to_string())?;
    let attempt = async {
        let mut conn = client.get_multiplexed_async_connection().await?;
        cmd.query_async::<T>(&mut conn).await
    };
    match tokio::time::timeout(Duration::from_secs(1), attempt).await {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".into()),
    }
}
