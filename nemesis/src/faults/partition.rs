//! Network partitions between nodes, in Jepsen's shapes: a grudge (which node drops which
//! peers' packets) applied as iptables DROP rules inside each node's own network namespace,
//! in the partition's own chain.
//! Clients reach every node through the gateway, which no rule names: client-to-node faults
//! are a separate fault.

use std::collections::BTreeMap;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;
use splitbrain_compose::{ComposeError, Deployment};

use super::chain::Chain;
use super::{Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// Which node drops packets from which peers. Always symmetric.
pub type Grudge = BTreeMap<String, Vec<String>>;

/// Jepsen's partition shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One node cut off from all others.
    Isolate,
    /// A random minority cut off from the majority.
    Halves,
    /// Majorities ring: every node sees a majority, and no two see the same one.
    Ring,
    /// Two halves that cannot see each other, joined by one node that sees both.
    Bridge,
}

impl Shape {
    const ALL: [Shape; 4] = [Shape::Isolate, Shape::Halves, Shape::Ring, Shape::Bridge];

    fn name(self) -> &'static str {
        match self {
            Shape::Isolate => "isolate",
            Shape::Halves => "halves",
            Shape::Ring => "ring",
            Shape::Bridge => "bridge",
        }
    }

    /// The fewest nodes the shape means anything on.
    fn min_nodes(self) -> usize {
        match self {
            Shape::Isolate | Shape::Halves => 2,
            Shape::Bridge => 3,
            Shape::Ring => 4,
        }
    }

    /// The grudge for these nodes, shuffled by `rng`.
    pub fn grudge(self, nodes: &[String], rng: &mut StdRng) -> Grudge {
        let mut order = nodes.to_vec();
        order.shuffle(rng);
        let n = order.len();
        // `sees(i, j)`: whether positions i and j of `order` stay connected.
        let sees: Box<dyn Fn(usize, usize) -> bool> = match self {
            Shape::Isolate => Box::new(|i, j| (i == 0) == (j == 0)),
            Shape::Halves => Box::new(move |i, j| (i < n / 2) == (j < n / 2)),
            Shape::Ring => {
                // Each node sees its k nearest neighbours on each side: 2k + 1 >= a majority.
                let k = (n / 2).div_ceil(2);
                Box::new(move |i, j| {
                    let d = i.abs_diff(j);
                    d.min(n - d) <= k
                })
            }
            Shape::Bridge => {
                let bridge = n / 2;
                Box::new(move |i, j| i == bridge || j == bridge || (i < bridge) == (j < bridge))
            }
        };
        let mut grudge = Grudge::new();
        for i in 0..n {
            let mut drops: Vec<String> = (0..n)
                .filter(|&j| j != i && !sees(i, j))
                .map(|j| order[j].clone())
                .collect();
            if !drops.is_empty() {
                drops.sort();
                grudge.insert(order[i].clone(), drops);
            }
        }
        grudge
    }
}

/// The chain every partition's rules go in (`partition-primary`'s too).
const PARTITION: Chain = Chain("splitbrain-partition");

/// Makes every node in the grudge drop the packets of the peers it holds a grudge against.
pub(super) async fn apply(deployment: &Deployment, grudge: &Grudge) -> Result<(), ComposeError> {
    for (node, drops) in grudge {
        let mut rules = Vec::new();
        for peer in drops {
            let ip = deployment.node(peer)?.addr.ip();
            rules.push(format!("-s {ip} -j DROP"));
        }
        PARTITION.append(deployment, node, &rules).await?;
    }
    Ok(())
}

/// A partition of one shape, or of a shape picked at random each time (`None`).
pub struct Partition(pub Option<Shape>);

#[async_trait]
impl Fault for Partition {
    fn name(&self) -> &'static str {
        match self.0 {
            None => "partition",
            Some(Shape::Isolate) => "partition-isolate",
            Some(Shape::Halves) => "partition-halves",
            Some(Shape::Ring) => "partition-ring",
            Some(Shape::Bridge) => "partition-bridge",
        }
    }

    fn family(&self) -> &'static str {
        "iptables"
    }

    fn summary(&self) -> &'static str {
        match self.0 {
            None => "cut node-to-node links (iptables), in a random shape each time",
            Some(Shape::Isolate) => "cut one node off from the others",
            Some(Shape::Halves) => "cut a minority off from the majority",
            Some(Shape::Ring) => "majorities ring: each node sees a different majority",
            Some(Shape::Bridge) => "two halves joined by one bridge node",
        }
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        let nodes = &layout.nodes[..];
        let need = self.0.map_or(Shape::Isolate.min_nodes(), Shape::min_nodes);
        if nodes.len() < need {
            return Err(format!(
                "{} needs at least {need} nodes and the deployment has {}",
                self.name(),
                nodes.len()
            ));
        }
        Ok(())
    }

    fn plan(&self, layout: &Layout, _options: &NemesisOptions, rng: &mut StdRng) -> Action {
        let nodes = &layout.nodes[..];
        let fitting: Vec<Shape> = Shape::ALL
            .into_iter()
            .filter(|s| nodes.len() >= s.min_nodes())
            .collect();
        let shape = self
            .0
            .or_else(|| fitting.choose(rng).copied())
            .unwrap_or(Shape::Isolate);
        let grudge = shape.grudge(nodes, rng);
        let mut params = serde_json::json!({ "shape": shape.name(), "grudge": grudge });
        // As Jepsen aims at primaries: where a master fails over, half of the one-sided
        // shapes put the current master on the minority side, which is what a failover
        // needs; a random side holds it a third of the time on three nodes.
        let one_sided = matches!(shape, Shape::Isolate | Shape::Halves);
        if layout.replication.fails_over() && one_sided && rng.random_bool(0.5) {
            params["aim"] = "master".into();
        }
        Action {
            targets: grudge.keys().cloned().collect(),
            params,
        }
    }

    /// A script says who drops whom: a random grudge would not match its targets.
    fn check_scripted(&self, params: &serde_json::Value) -> Result<(), String> {
        serde_json::from_value::<Grudge>(params["grudge"].clone())
            .map(|_| ())
            .map_err(|_| {
                "write out who drops whom, as `params = { grudge = { n1 = [\"n2\", \"n3\"], \
                 n2 = [\"n1\"], n3 = [\"n1\"] } }`"
                    .to_string()
            })
    }

    /// An aimed partition is repeated with the grudge it applied, aimed no more.
    fn repeated(&self, done: &Action, measured: &serde_json::Value) -> (&'static str, Action) {
        let grudge = measured
            .get("grudge")
            .unwrap_or(&done.params["grudge"])
            .clone();
        let params = serde_json::json!({ "shape": done.params["shape"], "grudge": grudge });
        let targets = match serde_json::from_value::<Grudge>(grudge) {
            Ok(grudge) => grudge.keys().cloned().collect(),
            Err(_) => done.targets.clone(),
        };
        (self.name(), Action { targets, params })
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        let mut grudge: Grudge = serde_json::from_value(action.params["grudge"].clone())
            .expect("the plan or the checked script wrote the grudge");
        let mut measured = None;
        if action.params["aim"] == "master" {
            if let Some(master) = target.deployment.master_of(&target.key).await {
                grudge = with_on_minority_side(&grudge, &master);
                measured = Some(serde_json::json!({ "master": master, "grudge": grudge }));
            }
        }
        apply(&target.deployment, &grudge).await?;
        Ok(Started {
            measured,
            ..Started::default()
        })
    }

    /// An aimed grudge may name other nodes than the plan's: every node's rules go.
    async fn stop(&self, target: &Target, _action: &Action) -> Result<(), ComposeError> {
        self.heal_all(target).await
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        let deployment = &target.deployment;
        for node in deployment.nodes() {
            PARTITION.flush(deployment, &node.name).await?;
        }
        Ok(())
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        let deployment = &target.deployment;
        let mut left = Vec::new();
        for node in deployment.nodes() {
            let count = PARTITION.rules(deployment, &node.name).await?;
            if count > 0 {
                left.push(format!("{} has {count} partition rule(s)", node.name));
            }
        }
        Ok(left)
    }
}

/// `grudge` with `master` on its minority side: the nodes cut off from the most peers. If
/// `master` is not among them, it trades names with one of them, so the shape stays the same.
fn with_on_minority_side(grudge: &Grudge, master: &str) -> Grudge {
    let most = grudge.values().map(Vec::len).max().unwrap_or(0);
    let minority: Vec<&String> = grudge
        .iter()
        .filter(|(_, v)| v.len() == most)
        .map(|(k, _)| k)
        .collect();
    if minority.iter().any(|n| *n == master) || !grudge.contains_key(master) {
        return grudge.clone();
    }
    let Some(other) = minority.first().map(|n| n.to_string()) else {
        return grudge.clone();
    };
    let swap = |node: &String| {
        if *node == other {
            master.to_string()
        } else if node == master {
            other.clone()
        } else {
            node.clone()
        }
    };
    grudge
        .iter()
        .map(|(node, peers)| {
            let mut peers: Vec<String> = peers.iter().map(swap).collect();
            peers.sort();
            (swap(node), peers)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn nodes(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    fn layout(n: usize) -> Layout {
        Layout {
            nodes: nodes(n),
            clients: 1,
            groups: 0,
            replication: Default::default(),
            clock_faults: true,
            deployments: Vec::new(),
        }
    }

    /// Who each node can reach (itself included), from a grudge.
    fn views(grudge: &Grudge, nodes: &[String]) -> BTreeMap<String, Vec<String>> {
        nodes
            .iter()
            .map(|a| {
                let drops = grudge.get(a).cloned().unwrap_or_default();
                let seen = nodes
                    .iter()
                    .filter(|b| !drops.contains(b))
                    .cloned()
                    .collect();
                (a.clone(), seen)
            })
            .collect()
    }

    fn symmetric(grudge: &Grudge) -> bool {
        grudge.iter().all(|(a, drops)| {
            drops
                .iter()
                .all(|b| grudge.get(b).is_some_and(|d| d.contains(a)))
        })
    }

    #[test]
    fn every_shape_is_symmetric_for_every_size() {
        let mut rng = StdRng::seed_from_u64(3);
        for shape in Shape::ALL {
            for n in shape.min_nodes()..=9 {
                let grudge = shape.grudge(&nodes(n), &mut rng);
                assert!(symmetric(&grudge), "{shape:?} on {n}: {grudge:?}");
                assert!(!grudge.is_empty(), "{shape:?} on {n} cuts something");
            }
        }
    }

    #[test]
    fn isolate_cuts_one_node_from_all() {
        let grudge = Shape::Isolate.grudge(&nodes(5), &mut StdRng::seed_from_u64(1));
        let alone: Vec<_> = grudge.iter().filter(|(_, d)| d.len() == 4).collect();
        assert_eq!(alone.len(), 1);
        assert_eq!(grudge.len(), 5);
    }

    #[test]
    fn halves_leave_a_majority_and_a_minority() {
        let all = nodes(5);
        let grudge = Shape::Halves.grudge(&all, &mut StdRng::seed_from_u64(1));
        let mut sizes: Vec<usize> = views(&grudge, &all).values().map(Vec::len).collect();
        sizes.sort();
        assert_eq!(sizes, [2, 2, 3, 3, 3]);
    }

    #[test]
    fn in_a_ring_every_node_sees_a_different_majority() {
        for n in 4..=9 {
            let all = nodes(n);
            let grudge = Shape::Ring.grudge(&all, &mut StdRng::seed_from_u64(n as u64));
            let views = views(&grudge, &all);
            let mut distinct: Vec<_> = views.values().collect();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), n, "n={n}: {views:?}");
            assert!(
                views.values().all(|v| v.len() > n / 2 && v.len() < n),
                "n={n}: {views:?}"
            );
        }
    }

    #[test]
    fn a_bridge_sees_everyone_and_the_halves_do_not_see_each_other() {
        let all = nodes(5);
        let grudge = Shape::Bridge.grudge(&all, &mut StdRng::seed_from_u64(2));
        let views = views(&grudge, &all);
        let bridges: Vec<_> = views.iter().filter(|(_, v)| v.len() == 5).collect();
        assert_eq!(bridges.len(), 1, "{views:?}");
        assert!(
            views.values().filter(|v| v.len() == 3).count() == 4,
            "{views:?}"
        );
    }

    #[test]
    fn shapes_that_need_more_nodes_say_so() {
        assert!(Partition(Some(Shape::Ring))
            .fits(&layout(3))
            .unwrap_err()
            .contains("at least 4"));
        assert!(Partition(None).fits(&layout(1)).is_err());
        assert!(Partition(None).fits(&layout(2)).is_ok());
    }

    #[test]
    fn an_aimed_grudge_puts_the_master_on_the_minority_side_in_the_same_shape() {
        let all = nodes(3);
        for seed in 0..10 {
            let grudge = Shape::Isolate.grudge(&all, &mut StdRng::seed_from_u64(seed));
            let aimed = with_on_minority_side(&grudge, "n1");
            assert_eq!(
                aimed["n1"].len(),
                2,
                "n1 is cut from both others: {aimed:?}"
            );
            let mut sizes: Vec<usize> = grudge.values().map(Vec::len).collect();
            let mut aimed_sizes: Vec<usize> = aimed.values().map(Vec::len).collect();
            sizes.sort();
            aimed_sizes.sort();
            assert_eq!(sizes, aimed_sizes);
        }
        let five = nodes(5);
        let halves = Shape::Halves.grudge(&five, &mut StdRng::seed_from_u64(4));
        let aimed = with_on_minority_side(&halves, "n3");
        assert_eq!(aimed["n3"].len(), 3, "{aimed:?}");
    }
}
