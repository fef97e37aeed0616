use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::Rng;
use splitbrain_compose::topology::{MASTER_NAME, SENTINEL_PORT};
use splitbrain_compose::{ComposeError, Deployment, Replication};

use super::{Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// A failover without the master being down, as an operator or an upgrade does it: on
/// `sentinel`, `SENTINEL FAILOVER` asked of a Sentinel; on `cluster`, `CLUSTER FAILOVER` asked
/// of a replica of the clients' key's master (a seeded pick among them; a failover of another
/// slot's master moves no lock). It is not undone; the new master stays. `measured` says who
/// was asked, what they replied and (on `sentinel`) which node was master; the role changes
/// that follow on `sentinel` are in the history as nemesis `master` observations.
pub struct Failover;

#[async_trait]
impl Fault for Failover {
    fn name(&self) -> &'static str {
        "failover"
    }

    fn summary(&self) -> &'static str {
        "promote a replica (SENTINEL FAILOVER, or CLUSTER FAILOVER on a replica)"
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        if layout.replication == Replication::Consensus {
            return Err(
                "failover asks Redis to promote a replica, and a consensus group \
                 elects its leader itself; use partition-primary, kill-primary or \
                 pause-primary to make it elect another"
                    .into(),
            );
        }
        if !layout.replication.fails_over() {
            return Err(
                "failover needs replicas to promote: use --deployment sentinel or cluster".into(),
            );
        }
        Ok(())
    }

    /// Who is master is known only when it starts; the plan picks which replica a cluster
    /// asks, among those there are then.
    fn plan(&self, _layout: &Layout, _options: &NemesisOptions, rng: &mut StdRng) -> Action {
        Action {
            targets: Vec::new(),
            params: serde_json::json!({ "pick": rng.random::<u32>() }),
        }
    }

    /// A failover takes Sentinel a few seconds; the next fault waits at least that long.
    fn hold(&self, options: &NemesisOptions, _rng: &mut StdRng) -> Duration {
        options.interval.max(Duration::from_secs(3))
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        let deployment = &target.deployment;
        if deployment.replication() == Replication::Cluster {
            let pick = action.params["pick"].as_u64().unwrap_or_default() as usize;
            return cluster_failover(deployment, &target.key, pick).await;
        }
        let master = deployment.sentinel_master().await;
        // Any Sentinel will do; one on a node that is up and not the master, if there is one.
        let health = deployment.health().await?;
        let asked = health
            .iter()
            .filter(|(_, state)| state.running && !state.paused)
            .map(|(name, _)| name)
            .min_by_key(|name| Some(*name) == master.as_ref())
            .cloned();
        let Some(asked) = asked else {
            return Ok(Started {
                measured: Some(serde_json::json!({ "refused": "no node is up" })),
                background: None,
                targets: None,
                acting_from: None,
            });
        };
        let port = SENTINEL_PORT.to_string();
        let reply = deployment
            .exec(
                &asked,
                &[
                    "redis-cli",
                    "-p",
                    &port,
                    "SENTINEL",
                    "FAILOVER",
                    MASTER_NAME,
                ],
            )
            .await?;
        Ok(Started {
            measured: Some(serde_json::json!({
                "master": master,
                "asked": asked,
                "reply": reply.output.trim(),
            })),
            background: None,
            targets: None,
            acting_from: None,
        })
    }

    async fn stop(&self, _target: &Target, _action: &Action) -> Result<(), ComposeError> {
        Ok(())
    }

    async fn heal_all(&self, _target: &Target) -> Result<(), ComposeError> {
        Ok(())
    }

    async fn leftovers(&self, _target: &Target) -> Result<Vec<String>, ComposeError> {
        Ok(Vec::new())
    }
}

/// Asks one of the cluster's replicas (the `pick`-th of those up) to take over its master.
async fn cluster_failover(
    deployment: &Deployment,
    key: &str,
    pick: usize,
) -> Result<Started, ComposeError> {
    let master = deployment.master_of(key).await;
    let master_ip = master
        .as_deref()
        .and_then(|name| deployment.node(name).ok())
        .map(|node| node.addr.ip().to_string());
    let (mut replicas, mut of_the_master) = (Vec::new(), Vec::new());
    for (name, state) in deployment.health().await? {
        if !state.running || state.paused {
            continue;
        }
        // A replica's ROLE: `slave`, its master's address and port, its link state, offset.
        let role = deployment.exec(&name, &["redis-cli", "ROLE"]).await?;
        let mut lines = role.output.lines();
        if lines.next() == Some("slave") {
            if master_ip.is_some() && lines.next() == master_ip.as_deref() {
                of_the_master.push(name.clone());
            }
            replicas.push(name);
        }
    }
    if !of_the_master.is_empty() {
        replicas = of_the_master;
    }
    if replicas.is_empty() {
        return Ok(Started {
            measured: Some(serde_json::json!({ "refused": "no replica is up" })),
            background: None,
            targets: None,
            acting_from: None,
        });
    }
    let asked = &replicas[pick % replicas.len()];
    let reply = deployment
        .exec(asked, &["redis-cli", "CLUSTER", "FAILOVER"])
        .await?;
    Ok(Started {
        measured: Some(serde_json::json!({ "asked": asked, "reply": reply.output.trim() })),
        background: None,
        targets: None,
        acting_from: None,
    })
}
