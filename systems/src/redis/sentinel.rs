use std::net::SocketAddr;

use futures_util::future::BoxFuture;
use splitbrain_compose::topology::{
    node_name, seconds, Companion, FailureDetector, Masters, NodeSpec, Replication, Setting,
    Topology, TopologyOptions, ELECTION,
};
use splitbrain_compose::{ComposeError, Deployment, System};

use super::roles::{self, MASTER_NAME, SENTINEL_PORT};
use super::server::REDIS_7_0;
use super::settings::{
    persistence_args, DOWN_AFTER, FAILOVER_TIMEOUT, MIN_REPLICAS_TO_WRITE, PERSISTENCE,
    SENTINEL_QUORUM,
};

/// One master and two replicas, as in Jepsen's 2013 test and most production setups.
const DEFAULT_NODES: usize = 3;

/// One master (`n1` at the start) with replicas, and a Sentinel on every node, as Jepsen ran
/// it in 2013: a partition or a crash takes a node's Sentinel with it.
pub struct Sentinel;

impl Topology for Sentinel {
    fn name(&self) -> &'static str {
        "sentinel"
    }

    fn settings(&self) -> &'static [Setting] {
        &[
            PERSISTENCE,
            SENTINEL_QUORUM,
            DOWN_AFTER,
            FAILOVER_TIMEOUT,
            MIN_REPLICAS_TO_WRITE,
        ]
    }

    fn replication(&self) -> Replication {
        Replication {
            promoter: Some("sentinel"),
            majority_commits: false,
            operator_failover: true,
            clients_bypass_links: false,
        }
    }

    fn formed(&self, nodes: Vec<(String, SocketAddr)>) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(roles::sentinels_agree(nodes))
    }

    fn masters(
        &self,
        _system: &'static dyn System,
        nodes: Vec<(String, SocketAddr)>,
        _key: String,
    ) -> BoxFuture<'static, Masters> {
        Box::pin(roles::sentinel_masters(nodes))
    }

    fn failover<'a>(
        &'a self,
        deployment: &'a Deployment,
        key: &'a str,
        _pick: usize,
    ) -> BoxFuture<'a, Result<serde_json::Value, ComposeError>> {
        Box::pin(roles::sentinel_failover(deployment, key))
    }

    fn summary(&self) -> &'static str {
        "one master, replicas (default 2), a Sentinel on every node (quorum 2)"
    }

    fn system(&self) -> &'static dyn System {
        &REDIS_7_0
    }

    fn nodes(&self, options: &TopologyOptions) -> Result<Vec<NodeSpec>, String> {
        let n = options.nodes.unwrap_or(DEFAULT_NODES);
        if !(2..=9).contains(&n) {
            return Err(format!(
                "sentinel needs between 2 and 9 nodes (a master and its replicas), not {n}"
            ));
        }
        let quorum = options.settings.count(&SENTINEL_QUORUM);
        if quorum == 0 || quorum > n {
            return Err(format!(
                "a Sentinel quorum of {quorum} cannot be reached by {n} Sentinels (one per \
                 node); use --sentinel-quorum between 1 and {n}"
            ));
        }
        let min_replicas_to_write = options.settings.count(&MIN_REPLICAS_TO_WRITE);
        if min_replicas_to_write >= n {
            return Err(format!(
                "--min-replicas-to-write {min_replicas_to_write} is more replicas than the {} \
                 this deployment has",
                n - 1
            ));
        }
        Ok((0..n)
            .map(|i| {
                let mut args = persistence_args(options);
                // A replica's first sync starts at once rather than after Redis's default five
                // seconds of waiting for more replicas to share it.
                args.extend(["--repl-diskless-sync-delay".into(), "0".into()]);
                if i > 0 {
                    args.extend(["--replicaof".into(), "{n1}".into(), "6379".into()]);
                }
                if min_replicas_to_write > 0 {
                    args.extend([
                        "--min-replicas-to-write".into(),
                        min_replicas_to_write.to_string(),
                        "--min-replicas-max-lag".into(),
                        "10".into(),
                    ]);
                }
                NodeSpec {
                    name: node_name(i),
                    args,
                    companion: Some(Companion {
                        program: "redis-sentinel",
                        conf: sentinel_conf(options, i, n),
                        port: SENTINEL_PORT,
                    }),
                }
            })
            .collect())
    }

    fn failure_detector(&self, options: &TopologyOptions) -> Option<FailureDetector> {
        let down_after = options.settings.duration(&DOWN_AFTER);
        Some(FailureDetector {
            after: down_after + ELECTION,
            why: format!(
                "Sentinel's down-after ({}) and about {} to elect a leader and promote a replica",
                seconds(down_after),
                seconds(ELECTION)
            ),
        })
    }
}

/// The configuration of the Sentinel on node `i` of `n`. It names the replicas and the other
/// Sentinels (by fixed ids) as a Sentinel's own rewritten configuration would after discovery:
/// otherwise each would take up to ten seconds to learn them, and the run would start with
/// Sentinels that cannot yet agree on anything.
fn sentinel_conf(options: &TopologyOptions, i: usize, n: usize) -> String {
    let id = |i: usize| format!("{:0>40x}", i + 1);
    let mut conf = format!(
        "port {SENTINEL_PORT}\n\
         bind 0.0.0.0\n\
         protected-mode no\n\
         sentinel myid {myid}\n\
         sentinel monitor {MASTER_NAME} {{n1}} 6379 {quorum}\n\
         sentinel down-after-milliseconds {MASTER_NAME} {down}\n\
         sentinel failover-timeout {MASTER_NAME} {failover}\n\
         sentinel parallel-syncs {MASTER_NAME} 1\n",
        myid = id(i),
        quorum = options.settings.count(&SENTINEL_QUORUM),
        down = options.settings.duration(&DOWN_AFTER).as_millis(),
        failover = options.settings.duration(&FAILOVER_TIMEOUT).as_millis(),
    );
    for replica in 1..n {
        conf += &format!(
            "sentinel known-replica {MASTER_NAME} {{{}}} 6379\n",
            node_name(replica)
        );
    }
    for other in (0..n).filter(|&j| j != i) {
        conf += &format!(
            "sentinel known-sentinel {MASTER_NAME} {{{}}} {SENTINEL_PORT} {}\n",
            node_name(other),
            id(other)
        );
    }
    conf
}

#[cfg(test)]
mod tests {
    use splitbrain_compose::topology::setting::Value;

    use super::*;

    #[test]
    fn a_master_two_replicas_and_a_sentinel_on_each() {
        let nodes = Sentinel.nodes(&TopologyOptions::default()).unwrap();
        assert_eq!(nodes.len(), 3);
        assert!(!nodes[0].args.contains(&"--replicaof".to_string()));
        assert!(nodes[2].args.join(" ").contains("--replicaof {n1} 6379"));
        let companion = nodes[1].companion.as_ref().unwrap();
        assert_eq!(
            (companion.program, companion.port),
            ("redis-sentinel", SENTINEL_PORT)
        );
        let conf = &companion.conf;
        assert!(
            conf.contains("sentinel monitor mymaster {n1} 6379 2"),
            "{conf}"
        );
        assert!(
            conf.contains("down-after-milliseconds mymaster 2000"),
            "{conf}"
        );
    }

    #[test]
    fn a_quorum_the_sentinels_cannot_reach_is_refused() {
        let options = |quorum, nodes| {
            let mut options = TopologyOptions {
                nodes,
                ..TopologyOptions::default()
            };
            options.settings.set(&SENTINEL_QUORUM, Value::Count(quorum));
            options
        };
        let refused = Sentinel.nodes(&options(4, None)).unwrap_err();
        assert!(refused.contains("quorum of 4"), "{refused}");
        assert!(Sentinel.nodes(&options(4, Some(5))).is_ok());
        assert!(Sentinel.nodes(&options(2, Some(1))).is_err());
    }
}
