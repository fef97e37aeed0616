use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::Rng;
use splitbrain_compose::ComposeError;

use super::{Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// A failover without the master being down, as an operator or an upgrade does it, asked of
/// the deployment ([`splitbrain_compose::Topology::failover`]: a Sentinel's `SENTINEL
/// FAILOVER`, or `CLUSTER FAILOVER` on a replica of the clients' key's master, a seeded pick
/// among them). It is not undone; the new master stays. `measured` says who was asked and
/// what they replied; the role changes that follow are in the history as nemesis `master`
/// observations.
pub struct Failover;

#[async_trait]
impl Fault for Failover {
    fn name(&self) -> &'static str {
        "failover"
    }

    fn summary(&self) -> &'static str {
        "promote a replica while the master is up, as an operator does"
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        if layout.replication.operator_failover {
            return Ok(());
        }
        let operator = layout.deployments_where(|d| d.replication.operator_failover);
        if layout.replication.fails_over() {
            return Err(format!(
                "failover asks the deployment to promote a replica as an operator does, and \
                 this one elects its master itself; use partition-primary, kill-primary or \
                 pause-primary to make it elect another (or {operator})"
            ));
        }
        Err(format!(
            "failover needs replicas to promote: use {operator}"
        ))
    }

    /// Who is master is known only when it starts; the plan picks which replica a cluster
    /// asks, among those there are then.
    fn plan(&self, _layout: &Layout, _options: &NemesisOptions, rng: &mut StdRng) -> Action {
        Action {
            targets: Vec::new(),
            params: serde_json::json!({ "pick": rng.random::<u32>() }),
        }
    }

    /// A failover takes a few seconds (a Sentinel's vote); the next fault waits at least that
    /// long.
    fn hold(&self, options: &NemesisOptions, _rng: &mut StdRng) -> Duration {
        options.interval.max(Duration::from_secs(3))
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        let pick = action.params["pick"].as_u64().unwrap_or_default() as usize;
        let measured = target.deployment.failover(&target.key, pick).await?;
        Ok(Started {
            measured: Some(measured),
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
