use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use splitbrain_compose::ComposeError;

use super::{fault_length, join_targets, Action, Fault, Started, Target};
use crate::NemesisOptions;

/// SIGKILL the target nodes' servers, then start them again after the restart delay. What a
/// restarted node remembers is what its server persisted (Redis's append-only file policy).
pub struct Kill;

#[async_trait]
impl Fault for Kill {
    fn name(&self) -> &'static str {
        "kill"
    }

    fn summary(&self) -> &'static str {
        "SIGKILL nodes, restart them after --restart-delay"
    }

    /// `--restart-delay`; left to splitbrain, as long as other faults last where a failure
    /// detector paces them (a node back at once is never noticed), else at once.
    fn hold(&self, options: &NemesisOptions, rng: &mut StdRng) -> Duration {
        match (options.restart_delay, options.detector) {
            (Some(delay), _) => delay,
            (None, Some(_)) => fault_length(options, rng),
            (None, None) => Duration::ZERO,
        }
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        let deployment = &target.deployment;
        join_targets(&action.targets, |node| deployment.kill(node)).await?;
        Ok(Started::default())
    }

    async fn stop(&self, target: &Target, action: &Action) -> Result<(), ComposeError> {
        let deployment = &target.deployment;
        join_targets(&action.targets, |node| deployment.restart(node)).await
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        let deployment = &target.deployment;
        let down: Vec<String> = deployment
            .health()
            .await?
            .into_iter()
            .filter(|(_, state)| !state.running)
            .map(|(node, _)| node)
            .collect();
        join_targets(&down, |node| deployment.restart(node)).await
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        let deployment = &target.deployment;
        Ok(deployment
            .health()
            .await?
            .into_iter()
            .filter(|(_, state)| !state.running)
            .map(|(node, _)| format!("{node} is not running"))
            .collect())
    }
}
