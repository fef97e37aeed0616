use async_trait::async_trait;
use rand::rngs::StdRng;
use splitbrain_compose::clock::ClockSkew;
use splitbrain_compose::ComposeError;

use super::clock::{measure, set_all, Clock, ClockKind};
use super::holder::{aim, holder_action};
use super::{Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// A clock jump aimed at the lock's current holder, just after its grant: the clocks of the
/// fewest of the nodes that granted it whose loss lets another client win a quorum jump
/// forward past the lease (by `--clock-bump`, and at least twice the TTL), so their copies of
/// the key expire at once while the holder still counts on them. This is Kleppmann's clock
/// jump against Redlock, made to happen: a random jump mostly lands between grants, on nodes
/// the holder does not need, or backwards.
pub struct ClockHolder;

/// How far forward the clocks jump.
fn jump_ms(options: &NemesisOptions) -> i64 {
    options.clock_bump.max(options.ttl * 2).as_millis() as i64
}

#[async_trait]
impl Fault for ClockHolder {
    fn name(&self) -> &'static str {
        "clock-holder"
    }

    fn aims_when_started(&self) -> bool {
        true
    }

    fn summary(&self) -> &'static str {
        "jump the clocks of the nodes the lock's holder needs forward past its lease, just after its grant"
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        super::clock::reaches(layout)
    }

    /// Every clock fault is healed by setting every clock right.
    fn family(&self) -> &'static str {
        Clock(ClockKind::Bump).family()
    }

    fn plan(&self, _layout: &Layout, options: &NemesisOptions, rng: &mut StdRng) -> Action {
        let mut action = holder_action(options, rng);
        action.params["offset_ms"] = jump_ms(options).into();
        action
    }

    fn repeated(&self, done: &Action, _measured: &serde_json::Value) -> (&'static str, Action) {
        let bump = Clock(ClockKind::Bump);
        let params = serde_json::json!({ "offset_ms": done.params["offset_ms"] });
        (
            bump.name(),
            Action {
                targets: done.targets.clone(),
                params,
            },
        )
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        let aimed = match aim(target, action).await {
            Ok(aimed) => aimed,
            Err(nothing) => return Ok(nothing),
        };
        let offset_ms = action.params["offset_ms"].as_i64().unwrap_or_default();
        let deployment = &target.deployment;
        let skew = ClockSkew::offset(offset_ms * 1_000_000);
        set_all(deployment, &aimed.victims, skew).await?;
        let mut measured = measure(deployment, &aimed.victims).await?;
        measured["holder"] = aimed.measured["holder"].clone();
        measured["granted_by"] = aimed.measured["granted_by"].clone();
        Ok(Started {
            measured: Some(measured),
            targets: Some(aimed.victims),
            acting_from: Some(aimed.seen),
            ..Started::default()
        })
    }

    /// The nodes hit were chosen at start; setting every clock right covers them, and faults
    /// run one at a time.
    async fn stop(&self, target: &Target, _action: &Action) -> Result<(), ComposeError> {
        self.heal_all(target).await
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        Clock(ClockKind::Bump).heal_all(target).await
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        Clock(ClockKind::Bump).leftovers(target).await
    }
}
