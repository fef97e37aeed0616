//! etcd: a Raft group of `etcd` members, reached over its v3 gRPC API.

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::future::BoxFuture;
use splitbrain_etcd_api::etcdserverpb::{StatusRequest, StatusResponse};
use splitbrain_etcd_api::{Connection, Options};

use splitbrain_compose::image::{Recipe, NODE_ENTRY_POINT};
use splitbrain_compose::System;

/// The port members serve clients on.
pub const ETCD_CLIENT_PORT: u16 = 2379;
/// The port members talk Raft to each other on.
pub const ETCD_PEER_PORT: u16 = 2380;

pub struct Etcd;

pub static SERVER: Etcd = Etcd;

/// The etcd member: Debian's etcd-server, iptables, and the node entry point that crashes and
/// restarts the server in place (it keeps its data directory, as a crashed machine keeps its
/// disk).
static IMAGE: Recipe = Recipe {
    repository: "splitbrain/etcd-node",
    context: &[
        ("Dockerfile", include_str!("image/Dockerfile"), 0o644),
        NODE_ENTRY_POINT,
    ],
    args: &[],
};

impl System for Etcd {
    fn name(&self) -> &'static str {
        "etcd-3.4"
    }

    fn summary(&self) -> &'static str {
        "Debian bookworm's etcd 3.4 (the etcd deployment's)"
    }

    fn image(&self) -> &'static Recipe {
        &IMAGE
    }

    fn port(&self) -> u16 {
        ETCD_CLIENT_PORT
    }

    fn command(&self, args: Vec<String>) -> Vec<String> {
        std::iter::once("etcd".to_string()).chain(args).collect()
    }

    fn probe(&self, addr: SocketAddr) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async move { status(addr).await.map(drop) })
    }

    fn formed(&self, nodes: Vec<(String, SocketAddr)>) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async move {
            let mut members = Vec::new();
            for (name, addr) in &nodes {
                let status = status(*addr).await.map_err(|e| format!("{name}: {e}"))?;
                members.push((name, status));
            }
            let ids: Vec<u64> = members.iter().map(|(_, s)| member_id(s)).collect();
            for (name, status) in &members {
                if status.leader == 0 || !ids.contains(&status.leader) {
                    return Err(format!("{name} follows no leader yet"));
                }
            }
            let leader = members[0].1.leader;
            match members.iter().find(|(_, s)| s.leader != leader) {
                Some((name, _)) => Err(format!("{name} follows another leader")),
                None => Ok(()),
            }
        })
    }

    fn leaders(&self, nodes: Vec<(String, SocketAddr)>) -> BoxFuture<'static, Vec<String>> {
        Box::pin(async move {
            let mut ids = Vec::new();
            let mut named = Vec::new();
            for (name, addr) in &nodes {
                if let Ok(status) = status(*addr).await {
                    ids.push((member_id(&status), name.clone()));
                    named.push(status.leader);
                }
            }
            let mut leaders: Vec<String> = named
                .iter()
                .filter_map(|leader| ids.iter().find(|(id, _)| id == leader))
                .map(|(_, name)| name.clone())
                .collect();
            leaders.sort();
            leaders.dedup();
            leaders
        })
    }

    fn version(&self, addr: SocketAddr) -> BoxFuture<'static, Option<String>> {
        Box::pin(async move { Some(format!("etcd {}", status(addr).await.ok()?.version)) })
    }

    fn log_file(&self) -> &'static str {
        "etcd.log"
    }

    fn clock_faults_reach(&self) -> bool {
        // Go reads the clock through the vDSO, never through libc; and etcd times leases on
        // the monotonic clock anyway.
        false
    }
}

fn member_id(status: &StatusResponse) -> u64 {
    status.header.as_ref().map_or(0, |h| h.member_id)
}

/// One member's own status, asked of it alone, given a second.
async fn status(addr: SocketAddr) -> Result<StatusResponse, String> {
    let options = Options {
        connect_timeout: Duration::from_millis(500),
        timeout: Duration::from_secs(1),
        require_leader: false,
    };
    let mut client = Connection::connect(&[addr], options)?;
    let attempt = client.maintenance.status(StatusRequest {});
    match tokio::time::timeout(Duration::from_secs(1), attempt).await {
        Ok(Ok(status)) => Ok(status.into_inner()),
        Ok(Err(e)) => Err(e.message().to_string()),
        Err(_) => Err("timed out".into()),
    }
}
