use std::time::Duration;

use async_trait::async_trait;
use splitbrain_compose::{ComposeError, Deployment};

use super::{join_targets, Fault};
use crate::NemesisOptions;

/// Freeze the target nodes (every process stopped, connections left open), then thaw them
/// after one nemesis interval. Clients see timeouts, not refused connections.
pub struct Pause;

#[async_trait]
impl Fault for Pause {
    fn name(&self) -> &'static str {
        "pause"
    }

    fn summary(&self) -> &'static str {
        "freeze nodes (SIGSTOP) for one --nemesis-interval, then resume them"
    }

    fn duration(&self, options: &NemesisOptions) -> Duration {
        options.interval
    }

    async fn start(&self, deployment: &Deployment, targets: &[String]) -> Result<(), ComposeError> {
        join_targets(targets, |node| deployment.pause(node)).await
    }

    async fn stop(&self, deployment: &Deployment, targets: &[String]) -> Result<(), ComposeError> {
        join_targets(targets, |node| deployment.resume(node)).await
    }
}
