use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use splitbrain_compose::ComposeError;

use super::kill::Kill;
use super::{Action, Fault, Started, Target};
use crate::NemesisOptions;

/// `kill` aimed at the lock's current holder, just after its grant: SIGKILL the fewest of the
/// nodes that granted it whose loss lets another client assemble a quorum without it (on
/// Redlock over five masters: one node of a three-node grant, three of a five-node one; on a
/// single server, the server), and restart them after `--restart-delay`. Random kills mostly
/// land between grants or on nodes the holder does not need; this is the restart hazard of
/// the Redlock spec, made to happen. Jepsen aims at primaries for the same reason.
pub struct KillHolder;

/// How long a step waits for a grant before it gives up and hits nothing.
fn patience(options: &NemesisOptions) -> Duration {
    (options.interval * 4).max(Duration::from_secs(2))
}

#[async_trait]
impl Fault for KillHolder {
    fn name(&self) -> &'static str {
        "kill-holder"
    }

    fn summary(&self) -> &'static str {
        "SIGKILL the nodes the lock's holder needs, just after its grant; restart after --restart-delay"
    }

    /// A killed holder's node leaves the same traces as a killed node, and heals the same way.
    fn family(&self) -> &'static str {
        Kill.family()
    }

    /// The waiting time for a grant rides in the params, so the plan stays seeded.
    fn plan(&self, _layout: &super::Layout, options: &NemesisOptions, _: &mut StdRng) -> Action {
        Action {
            targets: Vec::new(),
            params: serde_json::json!({ "patience_ms": patience(options).as_millis() as u64 }),
        }
    }

    fn hold(&self, options: &NemesisOptions, rng: &mut StdRng) -> Duration {
        Kill.hold(options, rng)
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        let patience = Duration::from_millis(action.params["patience_ms"].as_u64().unwrap_or(0));
        let mut grants = target.grants.clone();
        grants.mark_unchanged();
        let fresh = tokio::time::timeout(patience, async {
            loop {
                if grants.changed().await.is_err() {
                    return None;
                }
                let grant = grants.borrow_and_update().clone();
                if let Some(grant) = grant.filter(|g| g.key == target.key) {
                    return Some(grant);
                }
            }
        })
        .await
        .ok()
        .flatten();
        let Some(grant) = fresh else {
            return Ok(Started {
                measured: Some(serde_json::json!({ "refused": "no grant within the patience" })),
                ..Started::default()
            });
        };
        let all: Vec<String> = target
            .deployment
            .nodes()
            .iter()
            .map(|n| n.name.clone())
            .collect();
        let granted = if grant.nodes.is_empty() {
            all.clone()
        } else {
            grant.nodes.clone()
        };
        let victims = betraying_set(&all, &granted, &mut rand::rng());
        Kill.start(target, &Action::on(victims.clone())).await?;
        Ok(Started {
            measured: Some(serde_json::json!({ "holder": grant.process, "granted_by": granted })),
            targets: Some(victims),
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

/// The fewest of the `granted` nodes whose loss (and return, empty) lets another client win a
/// majority of `all` without the holder: the nodes not in the grant plus the ones killed.
fn betraying_set(all: &[String], granted: &[String], rng: &mut impl rand::Rng) -> Vec<String> {
    let quorum = all.len() / 2 + 1;
    let free = all.len() - granted.len();
    let count = quorum.saturating_sub(free).clamp(1, granted.len().max(1));
    let mut victims: Vec<String> = granted.choose_multiple(rng, count).cloned().collect();
    victims.sort();
    victims
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    #[test]
    fn kills_just_enough_of_the_grant_for_another_majority() {
        let mut rng = StdRng::seed_from_u64(3);
        let all = names(5);
        // Granted by three: one of them back empty, with the two others, is a majority.
        let three = betraying_set(&all, &all[..3], &mut rng);
        assert_eq!(three.len(), 1);
        assert!(all[..3].contains(&three[0]));
        // Granted by all five: three must forget it.
        assert_eq!(betraying_set(&all, &all, &mut rng).len(), 3);
        // A single server: the server.
        let one = names(1);
        assert_eq!(betraying_set(&one, &one, &mut rng), one);
    }
}
