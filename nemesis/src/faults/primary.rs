use async_trait::async_trait;
use rand::rngs::StdRng;
use splitbrain_compose::ComposeError;

use super::partition::{apply, Grudge, Partition};
use super::{Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// Cut the current master off from its replicas and their Sentinels, Jepsen's 2013 Sentinel
/// test: the majority side promotes a replica while the old master goes on taking writes from
/// every client still talking to it. Which node is master is known only when the fault
/// starts; `measured` names it, with the grudge applied.
pub struct PrimaryPartition;

#[async_trait]
impl Fault for PrimaryPartition {
    fn name(&self) -> &'static str {
        "partition-primary"
    }

    fn family(&self) -> &'static str {
        "iptables"
    }

    fn summary(&self) -> &'static str {
        "cut the current master off from its replicas (sentinel deployment only)"
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        if !layout.sentinels {
            return Err(
                "partition-primary needs a master and replicas: use --deployment sentinel".into(),
            );
        }
        Ok(())
    }

    fn plan(&self, _layout: &Layout, _options: &NemesisOptions, _rng: &mut StdRng) -> Action {
        Action::on(Vec::new())
    }

    async fn start(&self, target: &Target, _action: &Action) -> Result<Started, ComposeError> {
        let deployment = &target.deployment;
        let Some(primary) = deployment.sentinel_master().await else {
            return Ok(Started {
                measured: Some(
                    serde_json::json!({ "refused": "the Sentinels agree on no master" }),
                ),
                background: None,
            });
        };
        let others: Vec<String> = deployment
            .nodes()
            .iter()
            .map(|n| n.name.clone())
            .filter(|n| *n != primary)
            .collect();
        let mut grudge = Grudge::new();
        grudge.insert(primary.clone(), others.clone());
        for other in &others {
            grudge.insert(other.clone(), vec![primary.clone()]);
        }
        apply(deployment, &grudge).await?;
        Ok(Started {
            measured: Some(serde_json::json!({ "primary": primary, "grudge": grudge })),
            background: None,
        })
    }

    /// The isolated node was chosen at start; healing every node's rules covers it.
    async fn stop(&self, target: &Target, _action: &Action) -> Result<(), ComposeError> {
        Partition(None).heal_all(target).await
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        Partition(None).heal_all(target).await
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        Partition(None).leftovers(target).await
    }
}
