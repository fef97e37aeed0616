use splitbrain_compose::topology::{node_name, NodeSpec, Topology, TopologyOptions};
use splitbrain_compose::System;

use super::server::SERVER;

/// One MariaDB server, its named locks the lock.
pub struct MariaDb;

impl Topology for MariaDb {
    fn name(&self) -> &'static str {
        "mariadb"
    }

    fn summary(&self) -> &'static str {
        "one MariaDB server (named locks: GET_LOCK and RELEASE_LOCK)"
    }

    fn system(&self) -> &'static dyn System {
        &SERVER
    }

    fn nodes(&self, options: &TopologyOptions) -> Result<Vec<NodeSpec>, String> {
        match options.nodes {
            None | Some(1) => {}
            Some(n) => {
                return Err(format!(
                    "the mariadb deployment has exactly 1 server, not {n}"
                ))
            }
        }
        let args = [
            "--bind-address=0.0.0.0",
            // Clients come and go by address on the run's network; a reverse lookup of each
            // would wait on a resolver that does not know them.
            "--skip-name-resolve",
            "--max-connections=200",
            // A kill crashes the server, never the machine: a commit written to the kernel
            // survives it, and fsyncs (slow on a busy machine) add nothing. The fencing
            // counter must survive the crash, so each commit is still written at once.
            "--innodb-flush-log-at-trx-commit=2",
        ];
        let args = args.into_iter().map(String::from).collect();
        Ok(vec![NodeSpec::new(node_name(0), args)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_server_whose_commits_reach_the_kernel() {
        let nodes = MariaDb.nodes(&TopologyOptions::default()).unwrap();
        assert_eq!(nodes.len(), 1);
        assert!(nodes[0]
            .args
            .contains(&"--innodb-flush-log-at-trx-commit=2".to_string()));
        let two = TopologyOptions {
            nodes: Some(2),
            ..Default::default()
        };
        assert!(MariaDb.nodes(&two).is_err());
    }
}
