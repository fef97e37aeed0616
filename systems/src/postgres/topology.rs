use splitbrain_compose::topology::{node_name, NodeSpec, Topology, TopologyOptions};
use splitbrain_compose::System;

use super::server::SERVER;

/// Where the cluster made at build time lives.
const DATA_DIR: &str = "/var/lib/splitbrain/pg";

/// One PostgreSQL server, its advisory locks the lock.
pub struct Postgres;

impl Topology for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn summary(&self) -> &'static str {
        "one PostgreSQL server (advisory locks; lock-set's document lives in it too)"
    }

    fn system(&self) -> &'static dyn System {
        &SERVER
    }

    fn nodes(&self, options: &TopologyOptions) -> Result<Vec<NodeSpec>, String> {
        match options.nodes {
            None | Some(1) => {}
            Some(n) => {
                return Err(format!(
                    "the postgres deployment has exactly 1 server, not {n}"
                ))
            }
        }
        let setting = |name: &str, value: String| ["-c".to_string(), format!("{name}={value}")];
        let args = [
            ["-D".to_string(), DATA_DIR.into()],
            setting("listen_addresses", "*".into()),
            setting("max_connections", "200".into()),
            // A kill crashes the server, never the machine: what was written to the kernel
            // survives it, so fsyncs (slow on a busy machine) add nothing. Commits stay
            // synchronous: a commit acknowledged before its WAL was written would be lost by
            // the crash, and lost writes must be the lock's, never the database's.
            setting("fsync", "off".into()),
            setting("full_page_writes", "off".into()),
            setting("log_destination", "stderr".into()),
        ];
        Ok(vec![NodeSpec::new(node_name(0), args.concat())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_server_whose_commits_are_synchronous() {
        let nodes = Postgres.nodes(&TopologyOptions::default()).unwrap();
        assert_eq!(nodes.len(), 1);
        assert!(!nodes[0]
            .args
            .iter()
            .any(|a| a.starts_with("synchronous_commit")));
        let two = TopologyOptions {
            nodes: Some(2),
            ..Default::default()
        };
        assert!(Postgres.nodes(&two).is_err());
    }
}
