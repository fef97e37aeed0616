//! What the faults aimed at the lock's holder share: waiting for a fresh grant, and choosing
//! which of its nodes to betray.

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use splitbrain_workloads::SeenGrant;

use super::{Action, Started, Target};
use crate::NemesisOptions;

/// How long a step waits for a grant before it gives up and hits nothing.
pub(super) fn patience(options: &NemesisOptions) -> Duration {
    (options.interval * 4).max(Duration::from_secs(2))
}

/// The plan of a step aimed at the holder: no targets yet (they are the holder's nodes once a
/// grant comes); the waiting time for a grant and the seed of the choice among its nodes ride
/// in the params, so the plan stays seeded.
pub(super) fn holder_action(options: &NemesisOptions, rng: &mut StdRng) -> Action {
    Action {
        targets: Vec::new(),
        params: serde_json::json!({
            "patience_ms": patience(options).as_millis() as u64,
            "pick": rng.random::<u32>(),
        }),
    }
}

/// The nodes a step aimed at the holder hits, once the next grant comes: the fewest of its
/// nodes whose loss lets another client win (see [`betraying_set`]), and how to record it.
/// Where no grant comes within the patience, what to record instead.
pub(super) async fn aim(target: &Target, action: &Action) -> Result<Aimed, Started> {
    let Some(grant) = next_grant(target, &action.params).await else {
        return Err(Started {
            measured: Some(serde_json::json!({ "refused": "no grant within the patience" })),
            ..Started::default()
        });
    };
    let seen = Instant::now();
    let (victims, granted) = victims(target, &grant, &action.params);
    Ok(Aimed {
        seen,
        measured: serde_json::json!({ "holder": grant.process, "granted_by": granted }),
        holder: grant.process,
        victims,
    })
}

/// The nodes a step aimed at the holder hits, and what it records of the grant.
pub(super) struct Aimed {
    /// When the grant was seen: the fault acts from then, not from when it began to wait.
    pub seen: Instant,
    pub victims: Vec<String>,
    pub measured: serde_json::Value,
    /// The holder's process.
    pub holder: u64,
}

/// The next grant of the contended key given after this call, if one comes within the
/// `patience_ms` of `params`.
async fn next_grant(target: &Target, params: &serde_json::Value) -> Option<SeenGrant> {
    let patience = Duration::from_millis(params["patience_ms"].as_u64().unwrap_or(0));
    let mut grants = target.grants.clone();
    grants.mark_unchanged();
    tokio::time::timeout(patience, async {
        loop {
            grants.changed().await.ok()?;
            let grant = grants.borrow_and_update().clone();
            if let Some(grant) = grant.filter(|g| g.key == target.key) {
                return Some(grant);
            }
        }
    })
    .await
    .ok()
    .flatten()
}

/// The fewest nodes of `grant` whose loss lets another client win without the holder (see
/// [`betraying_set`]), picked with the seed in `params`; and every node that granted it.
fn victims(
    target: &Target,
    grant: &SeenGrant,
    params: &serde_json::Value,
) -> (Vec<String>, Vec<String>) {
    let all = target.deployment.node_names();
    let granted = if grant.nodes.is_empty() {
        all.clone()
    } else {
        grant.nodes.clone()
    };
    let mut rng = StdRng::seed_from_u64(params["pick"].as_u64().unwrap_or_default());
    (betraying_set(&all, &granted, &mut rng), granted)
}

/// The fewest of the `granted` nodes whose loss (a node back empty, a key expired early) lets
/// another client win a majority of `all` without the holder: the nodes not in the grant plus
/// the ones betrayed.
fn betraying_set(all: &[String], granted: &[String], rng: &mut StdRng) -> Vec<String> {
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

    fn names(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    #[test]
    fn betrays_just_enough_of_the_grant_for_another_majority() {
        let mut rng = StdRng::seed_from_u64(3);
        let all = names(5);
        // Granted by three: one of them lost, with the two others, is a majority.
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
