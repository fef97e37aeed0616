use splitbrain_compose::topology::{node_name, NodeSpec, Setting, Topology, TopologyOptions};
use splitbrain_compose::System;

use super::server::REDIS_7_0;
use super::settings::{persistence_args, PERSISTENCE};

/// The default number of independent masters, as in the Redlock spec.
pub const DEFAULT_NODES: usize = 5;

/// N independent Redis masters (default 5) with no replication: what the Redlock algorithm
/// runs on.
pub struct Redlock;

impl Topology for Redlock {
    fn name(&self) -> &'static str {
        "redlock"
    }

    fn settings(&self) -> &'static [Setting] {
        &[PERSISTENCE]
    }

    fn summary(&self) -> &'static str {
        "N independent masters (default 5)"
    }

    fn system(&self) -> &'static dyn System {
        &REDIS_7_0
    }

    fn nodes(&self, options: &TopologyOptions) -> Result<Vec<NodeSpec>, String> {
        let n = options.nodes.unwrap_or(DEFAULT_NODES);
        if !(1..=32).contains(&n) {
            return Err(format!("redlock needs between 1 and 32 nodes, not {n}"));
        }
        Ok((0..n)
            .map(|i| NodeSpec::new(node_name(i), persistence_args(options)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_nodes_by_default() {
        let nodes = Redlock.nodes(&TopologyOptions::default()).unwrap();
        let names: Vec<_> = nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["n1", "n2", "n3", "n4", "n5"]);
        assert!(Redlock
            .nodes(&TopologyOptions {
                nodes: Some(0),
                ..Default::default()
            })
            .is_err());
    }
}
