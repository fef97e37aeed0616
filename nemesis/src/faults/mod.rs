//! Faults: one file each, registered once in [`FAULTS`]. A fault owns how it is injected and
//! how it is healed; the runner owns when.

mod kill;
mod pause;

use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;
use splitbrain_compose::{ComposeError, Deployment};

use crate::NemesisOptions;

/// A fault that can be started on some nodes and stopped (healed) again.
#[async_trait]
pub trait Fault: Sync {
    /// The name users pass to `--nemesis`.
    fn name(&self) -> &'static str;
    fn summary(&self) -> &'static str;
    /// How long the fault stays on before it is healed.
    fn duration(&self, options: &NemesisOptions) -> Duration;
    /// Which nodes to hit; by default one of Jepsen's node specs, chosen at random.
    fn targets(&self, nodes: &[String], rng: &mut StdRng) -> Vec<String> {
        jepsen_targets(nodes, rng)
    }
    async fn start(&self, deployment: &Deployment, targets: &[String]) -> Result<(), ComposeError>;
    async fn stop(&self, deployment: &Deployment, targets: &[String]) -> Result<(), ComposeError>;
}

/// Every fault, by name.
pub static FAULTS: &[&dyn Fault] = &[&kill::Kill, &pause::Pause];

/// Looks a fault up by name.
pub fn find_fault(name: &str) -> Option<&'static dyn Fault> {
    FAULTS.iter().copied().find(|f| f.name() == name)
}

/// Applies `action` to every target at once; the first error wins.
async fn join_targets<'a, F, Fut>(targets: &'a [String], action: F) -> Result<(), ComposeError>
where
    F: Fn(&'a str) -> Fut,
    Fut: std::future::Future<Output = Result<(), ComposeError>>,
{
    futures_util::future::try_join_all(targets.iter().map(|t| action(t))).await?;
    Ok(())
}

/// Jepsen's node specs, one picked at random: one node, a minority (the largest set short of
/// a majority), a majority (the smallest), or all. Losing a majority at once is what a power
/// cut or a bad deploy does, and what Redlock's delayed-restart rule is for.
fn jepsen_targets(nodes: &[String], rng: &mut StdRng) -> Vec<String> {
    let n = nodes.len();
    let count = match rng.random_range(0..4) {
        0 => 1,
        1 => (n.saturating_sub(1) / 2).max(1),
        2 => n / 2 + 1,
        _ => n,
    };
    let mut targets: Vec<String> = nodes.choose_multiple(rng, count.min(n)).cloned().collect();
    targets.sort();
    targets
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn targets_are_one_minority_majority_or_all() {
        let nodes: Vec<String> = (1..=5).map(|i| format!("n{i}")).collect();
        let mut rng = StdRng::seed_from_u64(7);
        let mut sizes = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let t = jepsen_targets(&nodes, &mut rng);
            let mut unique = t.clone();
            unique.dedup();
            assert_eq!(unique, t, "targets are distinct and sorted");
            sizes.insert(t.len());
        }
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [1, 2, 3, 5]);
        let single = vec!["n1".to_string()];
        assert_eq!(jepsen_targets(&single, &mut rng), single);
    }
}
