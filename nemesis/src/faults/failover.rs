use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use splitbrain_compose::topology::{MASTER_NAME, SENTINEL_PORT};
use splitbrain_compose::ComposeError;

use super::{Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// Ask a Sentinel for a failover (`SENTINEL FAILOVER`): a replica is promoted without the
/// master being down, as an operator or an upgrade does. It is not undone; the new master
/// stays. `measured` says which node was master and what the Sentinel replied; the role
/// changes that follow are in the history as nemesis `master` observations.
pub struct Failover;

#[async_trait]
impl Fault for Failover {
    fn name(&self) -> &'static str {
        "failover"
    }

    fn summary(&self) -> &'static str {
        "promote a replica through Sentinel (SENTINEL FAILOVER); sentinel deployment only"
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        if !layout.sentinels {
            return Err("failover needs Sentinels: use --deployment sentinel".into());
        }
        Ok(())
    }

    /// Whoever is master when it starts is the target; nothing to plan.
    fn plan(&self, _layout: &Layout, _options: &NemesisOptions, _rng: &mut StdRng) -> Action {
        Action::on(Vec::new())
    }

    /// A failover takes Sentinel a few seconds; the next fault waits at least that long.
    fn hold(&self, options: &NemesisOptions, _rng: &mut StdRng) -> Duration {
        options.interval.max(Duration::from_secs(3))
    }

    async fn start(&self, target: &Target, _action: &Action) -> Result<Started, ComposeError> {
        let deployment = &target.deployment;
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
