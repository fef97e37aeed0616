//! Deployment shapes. A topology says which Redis nodes a deployment has and how each is
//! started; [`crate::Deployment`] does the rest. Adding one is a file here and a line in
//! [`TOPOLOGIES`].

mod redlock;
mod single;

/// Options every topology understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyOptions {
    /// Number of Redis nodes, where the topology lets it vary.
    pub nodes: Option<usize>,
}

/// One container to start: its node name and the `redis-server` arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    pub name: String,
    pub args: Vec<String>,
}

/// A deployment shape.
pub trait Topology: Sync {
    /// The name users pass to `--deployment`.
    fn name(&self) -> &'static str;
    /// One line for `--help` and reports.
    fn summary(&self) -> &'static str;
    /// The nodes to start, or a message saying why the options do not fit.
    fn nodes(&self, options: &TopologyOptions) -> Result<Vec<NodeSpec>, String>;
}

/// Every deployment, by name.
pub static TOPOLOGIES: &[&dyn Topology] = &[&single::Single, &redlock::Redlock];

/// Looks a topology up by name.
pub fn find(name: &str) -> Option<&'static dyn Topology> {
    TOPOLOGIES.iter().copied().find(|t| t.name() == name)
}

/// `redis-server` arguments for a node that persists nothing, so a restart forgets every key.
pub(crate) fn ephemeral_master() -> Vec<String> {
    ["--save", "", "--appendonly", "no"]
        .map(String::from)
        .to_vec()
}

/// `n1`, `n2`, …: node names as Jepsen gives them.
pub(crate) fn node_name(i: usize) -> String {
    format!("n{}", i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_findable() {
        for t in TOPOLOGIES {
            assert_eq!(find(t.name()).map(|f| f.name()), Some(t.name()));
        }
        assert!(find("nonsense").is_none());
    }
}
