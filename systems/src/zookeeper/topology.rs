use std::time::Duration;

use splitbrain_compose::topology::{
    node_name, seconds, FailureDetector, NodeSpec, Replication, Topology, TopologyOptions, ELECTION,
};
use splitbrain_compose::System;

use super::server::{SERVER, ZOOKEEPER_ELECTION_PORT, ZOOKEEPER_QUORUM_PORT};

/// The default number of members: the smallest ensemble that outlives one failure.
pub const DEFAULT_NODES: usize = 3;
/// ZooKeeper's unit of time. Sessions may last 2 to 20 ticks, so 500 ms lets lock clients ask
/// for sessions (the lock's lease) of 1 to 10 s, the TTLs the other locks here run with.
pub const TICK: Duration = Duration::from_millis(500);
/// Ticks a follower may take to connect to a new leader and catch up.
const INIT_LIMIT: u32 = 10;
/// Ticks a follower may stay silent before its leader drops it, and the leader silent before
/// its followers give it up and elect another.
const SYNC_LIMIT: u32 = 5;

/// A ZooKeeper ensemble of N members (default 3).
pub struct ZooKeeper;

impl Topology for ZooKeeper {
    fn name(&self) -> &'static str {
        "zookeeper"
    }

    fn summary(&self) -> &'static str {
        "a ZooKeeper ensemble of N members (default 3)"
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
            return Err(format!("zookeeper needs between 1 and 9 members, not {n}"));
        }
        // The same configuration on every member; each differs only by its id (`myid`).
        let mut config = vec![
            format!("tickTime={}", TICK.as_millis()),
            format!("initLimit={INIT_LIMIT}"),
            format!("syncLimit={SYNC_LIMIT}"),
        ];
        config.extend((0..n).map(|i| {
            format!(
                "server.{}={{{}}}:{ZOOKEEPER_QUORUM_PORT}:{ZOOKEEPER_ELECTION_PORT}",
                i + 1,
                node_name(i)
            )
        }));
        Ok((0..n)
            .map(|i| {
                let args = std::iter::once((i + 1).to_string())
                    .chain(config.iter().cloned())
                    .collect();
                NodeSpec::new(node_name(i), args)
            })
            .collect())
    }

    fn failure_detector(&self, _options: &TopologyOptions) -> Option<FailureDetector> {
        let sync = TICK * SYNC_LIMIT;
        Some(FailureDetector {
            after: sync + ELECTION,
            why: format!(
                "ZooKeeper's syncLimit ({SYNC_LIMIT} ticks of {}: {}) and about {} to elect a \
                 new leader",
                seconds(TICK),
                seconds(sync),
                seconds(ELECTION)
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_members_with_their_own_ids_and_one_server_list() {
        let nodes = ZooKeeper.nodes(&TopologyOptions::default()).unwrap();
        assert_eq!(nodes.len(), 3);
        for (i, node) in nodes.iter().enumerate() {
            assert_eq!(node.args[0], (i + 1).to_string());
            assert!(node.args.contains(&"tickTime=500".to_string()));
            for peer in ["server.1={n1}:2888:3888", "server.3={n3}:2888:3888"] {
                assert!(node.args.iter().any(|a| a == peer), "{:?}", node.args);
            }
        }
        for bad in [0, 10] {
            let options = TopologyOptions {
                nodes: Some(bad),
                ..Default::default()
            };
            assert!(ZooKeeper.nodes(&options).is_err());
        }
    }
}
