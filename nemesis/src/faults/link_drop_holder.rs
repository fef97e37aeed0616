//! `link-drop` aimed at the lock's holder, just after its grant: the holder's client group is
//! cut off at every node's firewall, as a machine whose network fails while it holds the lock.
//! A random `link-drop` cuts one group of several, mostly while another group holds the lock;
//! this one makes the cut-off holder whose lease the servers end while it works on.

use async_trait::async_trait;
use rand::rngs::StdRng;
use splitbrain_compose::ComposeError;

use super::holder::{aim, holder_action};
use super::link::{firewall, links_fit, Link, LinkKind};
use super::{Action, Fault, Layout, Started, Target};
use crate::links::link_name;
use crate::NemesisOptions;

pub struct LinkDropHolder;

/// What the drop is made of: the firewall rules of `link-drop`.
const DROP: Link = Link(LinkKind::Drop);

#[async_trait]
impl Fault for LinkDropHolder {
    fn name(&self) -> &'static str {
        "link-drop-holder"
    }

    fn summary(&self) -> &'static str {
        "drop the lock holder's packets at every node's firewall, just after its grant (the \
         holder's machine cut off)"
    }

    fn family(&self) -> &'static str {
        DROP.family()
    }

    fn needs_links(&self) -> bool {
        true
    }

    fn aims_when_started(&self) -> bool {
        true
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        links_fit(self.name(), layout, true)
    }

    /// The holder's group is its worker's (`process % workers`) modulo the groups, as the
    /// lock workload assigns them; both counts ride in the plan.
    fn plan(&self, layout: &Layout, options: &NemesisOptions, rng: &mut StdRng) -> Action {
        let mut action = holder_action(options, rng);
        action.params["workers"] = layout.clients.into();
        action.params["groups"] = layout.groups.into();
        action
    }

    fn repeated(&self, done: &Action, _measured: &serde_json::Value) -> (&'static str, Action) {
        (DROP.name(), Action::on(done.targets.clone()))
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        let aimed = match aim(target, action).await {
            Ok(aimed) => aimed,
            Err(nothing) => return Ok(nothing),
        };
        let count = |field: &str| action.params[field].as_u64().unwrap_or(1).max(1);
        let group = (aimed.holder % count("workers")) % count("groups");
        let links: Vec<String> = target
            .deployment
            .node_names()
            .iter()
            .map(|node| link_name(group as usize, node))
            .collect();
        for link in &links {
            firewall(target, link, "-I").await?;
        }
        Ok(Started {
            measured: Some(aimed.measured),
            targets: Some(links),
            acting_from: Some(aimed.seen),
            ..Started::default()
        })
    }

    /// The links cut were chosen at start; lifting every drop covers them, and faults run one
    /// at a time.
    async fn stop(&self, target: &Target, _action: &Action) -> Result<(), ComposeError> {
        DROP.heal_all(target).await
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        DROP.heal_all(target).await
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        DROP.leftovers(target).await
    }
}
