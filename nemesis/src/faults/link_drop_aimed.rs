//! `link-drop` aimed by the next grant: either the holder's client group is cut off at every
//! node's firewall just after its grant (a machine whose network fails while it holds the
//! lock), or another group is, whose clients are then waiting for the lock (a machine cut off
//! while it waits in the lock's queue). A random `link-drop` cuts one group of several, mostly
//! while another group holds the lock; `link-drop-holder` makes the cut-off holder whose lease
//! the servers end while it works on, `link-drop-waiter` the waiter whose session the servers
//! end while it waits, with its place in the queue.

use async_trait::async_trait;
use rand::rngs::StdRng;
use splitbrain_compose::ComposeError;

use super::holder::{aim, holder_action};
use super::link::{firewall, links_fit, Link, LinkKind};
use super::{Action, Fault, Layout, Started, Target};
use crate::links::link_name;
use crate::NemesisOptions;

/// Whose group the drop cuts, relative to the grant it waits for.
pub enum Aim {
    /// The group of the client just granted the lock.
    Holder,
    /// Another group, chosen by the plan's seed, once its clients have had
    /// [`WAITER_SETTLES`] to ask for the lock and join its queue (a client that started
    /// late, or is slow to start, asks just after the first grant).
    Waiter,
}

/// How long a waiter's group is left to ask for the lock after the grant, before it is cut:
/// an acquire takes a few round trips to join the queue, and more on a busy machine.
const WAITER_SETTLES: std::time::Duration = std::time::Duration::from_secs(1);

pub struct LinkDropAimed(pub Aim);

/// What the drop is made of: the firewall rules of `link-drop`.
const DROP: Link = Link(LinkKind::Drop);

impl LinkDropAimed {
    /// The group cut, given the holder's: a waiter's is one of the others, by the plan's pick.
    fn group(&self, holder_group: u64, groups: u64, pick: u64) -> u64 {
        match self.0 {
            Aim::Holder => holder_group,
            Aim::Waiter => (holder_group + 1 + pick % (groups - 1).max(1)) % groups,
        }
    }
}

#[async_trait]
impl Fault for LinkDropAimed {
    fn name(&self) -> &'static str {
        match self.0 {
            Aim::Holder => "link-drop-holder",
            Aim::Waiter => "link-drop-waiter",
        }
    }

    fn summary(&self) -> &'static str {
        match self.0 {
            Aim::Holder => {
                "drop the lock holder's packets at every node's firewall, just after its grant \
                 (the holder's machine cut off)"
            }
            Aim::Waiter => {
                "drop another client group's packets at every node's firewall, a second after \
                 a grant (a machine cut off while it waits for the lock)"
            }
        }
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
        links_fit(self.name(), layout, true)?;
        match self.0 {
            Aim::Waiter if layout.groups < 2 => Err(format!(
                "{} cuts a client group other than the holder's: use --client-groups 2 or more",
                self.name()
            )),
            _ => Ok(()),
        }
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
        let acting_from = match self.0 {
            Aim::Holder => aimed.seen,
            Aim::Waiter => {
                tokio::time::sleep(WAITER_SETTLES).await;
                std::time::Instant::now()
            }
        };
        let count = |field: &str| action.params[field].as_u64().unwrap_or(1).max(1);
        let groups = count("groups");
        let holder_group = (aimed.holder % count("workers")) % groups;
        let group = self.group(
            holder_group,
            groups,
            action.params["pick"].as_u64().unwrap_or(0),
        );
        let links: Vec<String> = target
            .deployment
            .node_names()
            .iter()
            .map(|node| link_name(group as usize, node))
            .collect();
        for link in &links {
            firewall(target, link, "-I").await?;
        }
        // `holder` in `measured` names whom the fault cut off as holder; a waiter's fault
        // cut another group, and says whose grant it came after.
        let mut measured = aimed.measured;
        if let Aim::Waiter = self.0 {
            measured["after_grant_to"] = aimed.holder.into();
            measured["group"] = format!("g{group}").into();
            if let Some(fields) = measured.as_object_mut() {
                fields.remove("holder");
            }
        }
        Ok(Started {
            measured: Some(measured),
            targets: Some(links),
            acting_from: Some(acting_from),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_is_never_the_holders_group_and_every_other_group_can_be_picked() {
        let waiter = LinkDropAimed(Aim::Waiter);
        for groups in 2..6 {
            for holder in 0..groups {
                let picked: std::collections::BTreeSet<u64> = (0..20)
                    .map(|pick| waiter.group(holder, groups, pick))
                    .collect();
                assert!(
                    !picked.contains(&holder),
                    "{groups} groups, holder {holder}"
                );
                assert_eq!(
                    picked.len() as u64,
                    groups - 1,
                    "{groups} groups, holder {holder}"
                );
            }
        }
        assert_eq!(LinkDropAimed(Aim::Holder).group(3, 5, 7), 3);
    }
}
