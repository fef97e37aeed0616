use std::time::Duration;

use splitbrain_compose::topology::{
    node_name, seconds, FailureDetector, NodeSpec, Replication, Topology, TopologyOptions, ELECTION,
};
use splitbrain_compose::System;

use super::server::{ETCD_PEER_PORT, SERVER};

/// The default number of members: the smallest group that outlives one failure.
pub const DEFAULT_NODES: usize = 3;
/// etcd's own defaults, written out so that the failure detector below is what runs.
const HEARTBEAT: Duration = Duration::from_millis(100);
const ELECTION_TIMEOUT: Duration = Duration::from_millis(1000);
/// Where a member keeps its log and snapshots: inside the container, so that a crash and
/// restart of the server keeps them, as a machine's disk would.
const DATA_DIR: &str = "/var/lib/splitbrain/etcd";

/// An etcd cluster of N members (default 3), one Raft group.
pub struct Etcd;

impl Topology for Etcd {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn summary(&self) -> &'static str {
        "an etcd cluster of N members (default 3)"
    }

    fn system(&self) -> &'static dyn System {
        &SERVER
    }

    fn replication(&self) -> Replication {
        Replication::CONSENSUS
    }

    fn nodes(&self, options: &TopologyOptions) -> Result<Vec<NodeSpec>, String> {
        let n = options.nodes.unwrap_or(DEFAULT_NODES);
        if !(1..=9).contains(&n) {
            return Err(format!("etcd needs between 1 and 9 members, not {n}"));
        }
        let peer = |i: usize| format!("http://{{{}}}:{ETCD_PEER_PORT}", node_name(i));
        let cluster: Vec<String> = (0..n)
            .map(|i| format!("{}={}", node_name(i), peer(i)))
            .collect();
        let port = SERVER.port();
        Ok((0..n)
            .map(|i| {
                let name = node_name(i);
                let args = [
                    "--name".to_string(),
                    name.clone(),
                    "--data-dir".into(),
                    DATA_DIR.into(),
                    "--listen-peer-urls".into(),
                    format!("http://0.0.0.0:{ETCD_PEER_PORT}"),
                    "--initial-advertise-peer-urls".into(),
                    peer(i),
                    "--listen-client-urls".into(),
                    format!("http://0.0.0.0:{port}"),
                    "--advertise-client-urls".into(),
                    format!("http://{{{name}}}:{port}"),
                    "--initial-cluster".into(),
                    cluster.join(","),
                    "--initial-cluster-state".into(),
                    "new".into(),
                    "--initial-cluster-token".into(),
                    "splitbrain".into(),
                    "--heartbeat-interval".into(),
                    HEARTBEAT.as_millis().to_string(),
                    "--election-timeout".into(),
                    ELECTION_TIMEOUT.as_millis().to_string(),
                    "--logger".into(),
                    "zap".into(),
                    "--log-outputs".into(),
                    "stderr".into(),
                ];
                NodeSpec::new(name, args.to_vec())
            })
            .collect())
    }

    fn failure_detector(&self, _options: &TopologyOptions) -> Option<FailureDetector> {
        Some(FailureDetector {
            after: ELECTION_TIMEOUT + ELECTION,
            why: format!(
                "etcd's election timeout ({}) and about {} to elect a new leader",
                seconds(ELECTION_TIMEOUT),
                seconds(ELECTION)
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_members_that_know_each_other() {
        let nodes = Etcd.nodes(&TopologyOptions::default()).unwrap();
        assert_eq!(nodes.len(), 3);
        let cluster = "n1=http://{n1}:2380,n2=http://{n2}:2380,n3=http://{n3}:2380";
        for node in &nodes {
            assert!(node.args.iter().any(|a| a == cluster), "{:?}", node.args);
            let own = format!("http://{{{}}}:2379", node.name);
            assert!(node.args.contains(&own), "{:?}", node.args);
        }
        let too_many = TopologyOptions {
            nodes: Some(10),
            ..Default::default()
        };
        assert!(Etcd.nodes(&too_many).is_err());
    }
}
