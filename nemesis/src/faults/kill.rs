use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use splitbrain_compose::{ComposeError, Deployment};

use super::{join_targets, Action, Fault, Started};
use crate::NemesisOptions;

/// SIGKILL the target nodes' Redis, then start them again after the restart delay. What a
/// restarted node remembers is the deployment's persistence policy.
pub struct Kill;

#[async_trait]
impl Fault for Kill {
    fn name(&self) -> &'static str {
        "kill"
    }

    fn summary(&self) -> &'static str {
        "SIGKILL nodes, restart them after --restart-delay"
    }

    fn hold(&self, options: &NemesisOptions, _rng: &mut StdRng) -> Duration {
        options.restart_delay
    }

    async fn start(
        &self,
        deployment: &Deployment,
        action: &Action,
    ) -> Result<Started, ComposeError> {
        join_targets(&action.targets, |node| deployment.kill(node)).await?;
        Ok(Started::default())
    }

    async fn stop(&self, deployment: &Deployment, action: &Action) -> Result<(), ComposeError> {
        join_targets(&action.targets, |node| deployment.restart(node)).await
    }

    async fn heal_all(&self, deployment: &Deployment) -> Result<(), ComposeError> {
        let down: Vec<String> = deployment
            .health()
            .await?
            .into_iter()
            .filter(|(_, state)| !state.running)
            .map(|(node, _)| node)
            .collect();
        join_targets(&down, |node| deployment.restart(node)).await
    }

    async fn leftovers(&self, deployment: &Deployment) -> Result<Vec<String>, ComposeError> {
        Ok(deployment
            .health()
            .await?
            .into_iter()
            .filter(|(_, state)| !state.running)
            .map(|(node, _)| format!("{node} is not running"))
            .collect())
    }
}
