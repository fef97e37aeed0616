use super::{node_name, NodeSpec, Topology, TopologyOptions};

/// One Redis server: the canonical single-instance lock.
pub struct Single;

impl Topology for Single {
    fn name(&self) -> &'static str {
        "single"
    }

    fn summary(&self) -> &'static str {
        "one Redis server"
    }

    fn nodes(&self, options: &TopologyOptions) -> Result<Vec<NodeSpec>, String> {
        match options.nodes {
            None | Some(1) => Ok(vec![NodeSpec::new(
                node_name(0),
                options.persistence.redis_args(),
            )]),
            Some(n) => Err(format!(
                "the single deployment has exactly 1 node, not {n}; use --deployment redlock for more"
            )),
        }
    }
}
