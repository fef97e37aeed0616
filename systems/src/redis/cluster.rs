use std::net::SocketAddr;

use futures_util::future::BoxFuture;
use splitbrain_compose::topology::{
    node_name, seconds, FailureDetector, Masters, NodeSpec, Replication, Setting, Topology,
    TopologyOptions, ELECTION,
};
use splitbrain_compose::{ComposeError, Deployment, System};

use super::roles;
use super::server::REDIS_7_0;
use super::settings::{persistence_args, CLUSTER_NODE_TIMEOUT, CLUSTER_REPLICAS, PERSISTENCE};

/// Three masters with one replica each, the smallest cluster Redis recommends.
const DEFAULT_NODES: usize = 6;

/// Redis Cluster: masters with replicas, the 16384 slots spread over the masters by
/// `redis-cli --cluster create`. Nodes announce their own addresses on the run's network,
/// which the harness reaches and which partitions act on.
pub struct Cluster;

impl Cluster {
    fn layout(options: &TopologyOptions) -> Result<(usize, usize), String> {
        let n = options.nodes.unwrap_or(DEFAULT_NODES);
        let replicas = options.settings.count(&CLUSTER_REPLICAS);
        let per_shard = replicas.saturating_add(1);
        if !n.is_multiple_of(per_shard) {
            return Err(format!(
                "{n} nodes do not split into shards of a master and {replicas} replica(s)"
            ));
        }
        let masters = n / per_shard;
        if masters < 3 {
            return Err(format!(
                "a cluster needs at least three masters, and {n} nodes with {replicas} \
                 replica(s) each make {masters}; use --nodes {}",
                3 * per_shard
            ));
        }
        Ok((n, masters))
    }
}

impl Topology for Cluster {
    fn name(&self) -> &'static str {
        "cluster"
    }

    fn settings(&self) -> &'static [Setting] {
        &[PERSISTENCE, CLUSTER_REPLICAS, CLUSTER_NODE_TIMEOUT]
    }

    fn takes(&self) -> Vec<&'static str> {
        let mut ids: Vec<&str> = self.settings().iter().map(|s| s.id).collect();
        // A hash tag keeps the lock keys in one slot.
        ids.push("hash_tag");
        ids
    }

    fn replication(&self) -> Replication {
        Replication {
            promoter: Some("cluster"),
            majority_commits: false,
            operator_failover: true,
            clients_bypass_links: true,
        }
    }

    fn formed(&self, nodes: Vec<(String, SocketAddr)>) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(roles::cluster_ok(nodes))
    }

    fn masters(
        &self,
        _system: &'static dyn System,
        nodes: Vec<(String, SocketAddr)>,
        key: String,
    ) -> BoxFuture<'static, Masters> {
        Box::pin(roles::slot_masters(nodes, key))
    }

    fn failover<'a>(
        &'a self,
        deployment: &'a Deployment,
        key: &'a str,
        pick: usize,
    ) -> BoxFuture<'a, Result<serde_json::Value, ComposeError>> {
        Box::pin(roles::cluster_failover(deployment, key, pick))
    }

    fn summary(&self) -> &'static str {
        "Redis Cluster: 3 masters with a replica each (default), slots assigned"
    }

    fn system(&self) -> &'static dyn System {
        &REDIS_7_0
    }

    fn nodes(&self, options: &TopologyOptions) -> Result<Vec<NodeSpec>, String> {
        let (n, _) = Cluster::layout(options)?;
        Ok((0..n)
            .map(|i| {
                let mut args = persistence_args(options);
                args.extend(
                    [
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        &options
                            .settings
                            .duration(&CLUSTER_NODE_TIMEOUT)
                            .as_millis()
                            .to_string(),
                        "--repl-diskless-sync-delay",
                        "0",
                    ]
                    .map(String::from),
                );
                NodeSpec::new(node_name(i), args)
            })
            .collect())
    }

    fn formation(&self, options: &TopologyOptions) -> Option<Vec<String>> {
        let (n, _) = Cluster::layout(options).ok()?;
        let mut command: Vec<String> = ["redis-cli", "--cluster", "create"]
            .map(String::from)
            .to_vec();
        command.extend((0..n).map(|i| format!("{{{}}}:6379", node_name(i))));
        command.extend([
            "--cluster-replicas".into(),
            options.settings.count(&CLUSTER_REPLICAS).to_string(),
            "--cluster-yes".into(),
        ]);
        Some(command)
    }

    fn failure_detector(&self, options: &TopologyOptions) -> Option<FailureDetector> {
        let timeout = options.settings.duration(&CLUSTER_NODE_TIMEOUT);
        Some(FailureDetector {
            after: timeout + ELECTION,
            why: format!(
                "the cluster's node timeout ({}) and about {} for a replica to win its election",
                seconds(timeout),
                seconds(ELECTION)
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_nodes_make_three_shards() {
        let options = TopologyOptions::default();
        let nodes = Cluster.nodes(&options).unwrap();
        assert_eq!(nodes.len(), 6);
        assert!(nodes[0].args.join(" ").contains("--cluster-enabled yes"));
        let create = Cluster.formation(&options).unwrap().join(" ");
        assert!(create.contains("{n1}:6379 {n2}:6379"), "{create}");
        assert!(
            create.ends_with("--cluster-replicas 1 --cluster-yes"),
            "{create}"
        );
    }

    #[test]
    fn fewer_than_three_masters_is_refused() {
        let options = |nodes| TopologyOptions {
            nodes: Some(nodes),
            ..TopologyOptions::default()
        };
        let refused = Cluster.nodes(&options(4)).unwrap_err();
        assert!(refused.contains("at least three masters"), "{refused}");
        assert!(Cluster.nodes(&options(5)).is_err());
        assert!(Cluster.nodes(&options(8)).is_ok());
    }
}
