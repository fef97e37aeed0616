use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use splitbrain_compose::ComposeError;

use super::holder::{aim, holder_action};
use super::kill::Kill;
use super::{Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// `kill` aimed at the lock's current holder, just after its grant: SIGKILL the fewest of the
/// nodes that granted it whose loss lets another client assemble a quorum without it (on
/// Redlock over five masters: one node of a three-node grant, three of a five-node one; on a
/// single server, the server), and restart them after `--restart-delay`. Random kills mostly
/// land between grants or on nodes the holder does not need; this is the restart hazard of
/// the Redlock spec, made to happen. Jepsen aims at primaries for the same reason.
pub struct KillHolder;

#[async_trait]
impl Fault for KillHolder {
    fn name(&self) -> &'static str {
        "kill-holder"
    }

    fn aims_when_started(&self) -> bool {
        true
    }

    fn summary(&self) -> &'static str {
        "SIGKILL the nodes the lock's holder needs, just after its grant; restart after --restart-delay"
    }

    /// A killed holder's node leaves the same traces as a killed node, and heals the same way.
    fn family(&self) -> &'static str {
        Kill.family()
    }

    fn plan(&self, _layout: &Layout, options: &NemesisOptions, rng: &mut StdRng) -> Action {
        holder_action(options, rng)
    }

    fn hold(&self, options: &NemesisOptions, rng: &mut StdRng) -> Duration {
        Kill.hold(options, rng)
    }

    fn repeated(&self, done: &Action, _measured: &serde_json::Value) -> (&'static str, Action) {
        (Kill.name(), Action::on(done.targets.clone()))
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        let aimed = match aim(target, action).await {
            Ok(aimed) => aimed,
            Err(nothing) => return Ok(nothing),
        };
        Kill.start(target, &Action::on(aimed.victims.clone()))
            .await?;
        Ok(Started {
            measured: Some(aimed.measured),
            targets: Some(aimed.victims),
            acting_from: Some(aimed.seen),
            ..Started::default()
        })
    }

    /// The nodes hit were chosen at start; restarting every crashed node covers them, and
    /// faults run one at a time.
    async fn stop(&self, target: &Target, _action: &Action) -> Result<(), ComposeError> {
        Kill.heal_all(target).await
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        Kill.heal_all(target).await
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        Kill.leftovers(target).await
    }
}
