use async_trait::async_trait;
use splitbrain_compose::ComposeError;

use super::{join_targets, Action, Fault, Started, Target};

/// Freeze the target nodes (every process stopped, connections left open), then thaw them.
/// Clients see timeouts, not refused connections.
pub struct Pause;

#[async_trait]
impl Fault for Pause {
    fn name(&self) -> &'static str {
        "pause"
    }

    fn summary(&self) -> &'static str {
        "freeze nodes (SIGSTOP) for about one --nemesis-interval, then resume them"
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        let deployment = &target.deployment;
        join_targets(&action.targets, |node| deployment.pause(node)).await?;
        Ok(Started::default())
    }

    async fn stop(&self, target: &Target, action: &Action) -> Result<(), ComposeError> {
        let deployment = &target.deployment;
        join_targets(&action.targets, |node| deployment.resume(node)).await
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        let deployment = &target.deployment;
        for (node, state) in deployment.health().await? {
            if state.paused {
                deployment.resume(&node).await?;
            }
        }
        Ok(())
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        let deployment = &target.deployment;
        Ok(deployment
            .health()
            .await?
            .into_iter()
            .filter(|(_, state)| state.paused)
            .map(|(node, _)| format!("{node} is paused"))
            .collect())
    }
}
