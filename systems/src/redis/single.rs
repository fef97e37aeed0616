use splitbrain_compose::topology::{node_name, NodeSpec, Setting, Topology, TopologyOptions};
use splitbrain_compose::System;

use super::server::REDIS_7_0;
use super::settings::{persistence_args, PERSISTENCE};

/// One Redis server: the canonical single-instance lock.
pub struct Single;

impl Topology for Single {
    fn name(&self) -> &'static str {
        "single"
    }

    fn settings(&self) -> &'static [Setting] {
        &[PERSISTENCE]
    }

    fn summary(&self) -> &'static str {
        "one Redis server"
    }

    fn system(&self) -> &'static dyn System {
        &REDIS_7_0
    }

    fn nodes(&self, options: &TopologyOptions) -> Result<Vec<NodeSpec>, String> {
        match options.nodes {
            None | Some(1) => Ok(vec![NodeSpec::new(
                node_name(0),
                persistence_args(options),
            )]),
            Some(n) => Err(format!(
                "the single deployment has exactly 1 node, not {n}; use --deployment redlock for more"
            )),
        }
    }
}
