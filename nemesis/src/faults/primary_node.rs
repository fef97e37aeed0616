use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use splitbrain_compose::ComposeError;

use super::kill::Kill;
use super::pause::Pause;
use super::{Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// What happens to the current master.
pub enum NodeFault {
    Kill,
    Pause,
}

/// `kill` or `pause` aimed at whichever node is master for the clients' key when the fault
/// starts (the Sentinels' master; on `cluster`, the master of the key's slot). Random
/// targets hit a replica most of the time, which tells little; this is the failover the
/// article describes. `measured` names the node hit.
pub struct PrimaryNode(pub NodeFault);

impl PrimaryNode {
    fn node_fault(&self) -> &'static dyn Fault {
        match self.0 {
            NodeFault::Kill => &Kill,
            NodeFault::Pause => &Pause,
        }
    }
}

#[async_trait]
impl Fault for PrimaryNode {
    fn name(&self) -> &'static str {
        match self.0 {
            NodeFault::Kill => "kill-primary",
            NodeFault::Pause => "pause-primary",
        }
    }

    fn aims_when_started(&self) -> bool {
        true
    }

    fn summary(&self) -> &'static str {
        match self.0 {
            NodeFault::Kill => "SIGKILL the current master, restart it after --restart-delay",
            NodeFault::Pause => "freeze the current master for about one --nemesis-interval",
        }
    }

    /// A killed master leaves the same traces as a killed node, and heals the same way.
    fn family(&self) -> &'static str {
        self.node_fault().family()
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        if !layout.replication.fails_over() {
            return Err(format!(
                "{} needs a master with replicas: use {} ({} hits random nodes anywhere)",
                self.name(),
                layout.deployments_where(|d| d.replication.fails_over()),
                self.node_fault().name()
            ));
        }
        Ok(())
    }

    fn plan(&self, _layout: &Layout, _options: &NemesisOptions, _rng: &mut StdRng) -> Action {
        Action::on(Vec::new())
    }

    fn hold(&self, options: &NemesisOptions, rng: &mut StdRng) -> Duration {
        self.node_fault().hold(options, rng)
    }

    fn repeated(&self, done: &Action, _measured: &serde_json::Value) -> (&'static str, Action) {
        (self.node_fault().name(), Action::on(done.targets.clone()))
    }

    async fn start(&self, target: &Target, _action: &Action) -> Result<Started, ComposeError> {
        let Some(master) = target.deployment.master_of(&target.key).await else {
            return Ok(Started {
                measured: Some(serde_json::json!({ "refused": "no node is master" })),
                background: None,
                targets: None,
                acting_from: None,
            });
        };
        self.node_fault()
            .start(target, &Action::on(vec![master.clone()]))
            .await?;
        Ok(Started {
            measured: Some(serde_json::json!({ "master": master })),
            background: None,
            targets: Some(vec![master]),
            acting_from: None,
        })
    }

    /// The master hit was chosen at start; healing every node covers it, and faults run one
    /// at a time.
    async fn stop(&self, target: &Target, _action: &Action) -> Result<(), ComposeError> {
        self.node_fault().heal_all(target).await
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        self.node_fault().heal_all(target).await
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        self.node_fault().leftovers(target).await
    }
}
