use std::time::Duration;

use async_trait::async_trait;
use splitbrain_compose::{ComposeError, Deployment};

use super::{join_targets, Fault};
use crate::NemesisOptions;

/// SIGKILL the target nodes' Redis, then start them again after the restart delay. Without
/// persistence a restarted node has forgotten every key.
pub struct Kill;

#[async_trait]
impl Fault for Kill {
    fn name(&self) -> &'static str {
        "kill"
    }

    fn summary(&self) -> &'static str {
        "SIGKILL nodes, restart them after --restart-delay (no persistence: keys are lost)"
    }

    fn duration(&self, options: &NemesisOptions) -> Duration {
        options.restart_delay
    }

    async fn start(&self, deployment: &Deployment, targets: &[String]) -> Result<(), ComposeError> {
        join_targets(targets, |node| deployment.kill(node)).await
    }

    async fn stop(&self, deployment: &Deployment, targets: &[String]) -> Result<(), ComposeError> {
        join_targets(targets, |node| deployment.restart(node)).await
    }
}
