//! Deployment shapes. A topology says which system runs (see [`crate::system`]), which nodes
//! a deployment has and how each is started; [`crate::Deployment`] does the rest. The
//! topologies themselves live with their systems (the `splitbrain-systems` crate).

use std::time::Duration;

use crate::system::System;

/// The name Sentinel knows the monitored master by.
pub const MASTER_NAME: &str = "mymaster";
/// The port every Sentinel listens on, on its node's address.
pub const SENTINEL_PORT: u16 = 26379;
/// How Sentinel watches the master.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentinelOptions {
    /// How many Sentinels must agree that the master is down.
    pub quorum: usize,
    /// How long the master must be unreachable before a Sentinel thinks it down.
    pub down_after: Duration,
    pub failover_timeout: Duration,
    /// The master refuses writes with fewer replicas than this connected (0: never refuses).
    pub min_replicas_to_write: usize,
}

impl Default for SentinelOptions {
    fn default() -> SentinelOptions {
        SentinelOptions {
            quorum: 2,
            down_after: Duration::from_secs(2),
            failover_timeout: Duration::from_secs(6),
            min_replicas_to_write: 0,
        }
    }
}

/// How the cluster is laid out and how fast it fails over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterOptions {
    /// Replicas per master.
    pub replicas: usize,
    /// How long a master may be unreachable before the majority fails it over, and how long
    /// a master cut off from the majority goes on taking writes.
    pub node_timeout: Duration,
}

impl Default for ClusterOptions {
    fn default() -> ClusterOptions {
        ClusterOptions {
            replicas: 1,
            node_timeout: Duration::from_secs(2),
        }
    }
}

/// Options every topology understands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyOptions {
    /// Number of nodes, where the topology lets it vary.
    pub nodes: Option<usize>,
    pub persistence: Persistence,
    /// For deployments watched by Sentinel.
    pub sentinel: SentinelOptions,
    pub cluster: ClusterOptions,
}

/// What a node keeps across a kill: nothing, or an append-only file synced every second or
/// on every write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Persistence {
    #[default]
    None,
    AofEverysec,
    AofAlways,
}

impl Persistence {
    pub const NAMES: &'static str = "none, everysec, always";

    pub fn parse(name: &str) -> Option<Persistence> {
        match name {
            "none" => Some(Persistence::None),
            "everysec" => Some(Persistence::AofEverysec),
            "always" => Some(Persistence::AofAlways),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Persistence::None => "none",
            Persistence::AofEverysec => "everysec",
            Persistence::AofAlways => "always",
        }
    }
}

/// One container to start: its node name, its server's arguments, and the Sentinel
/// that runs beside it, if any. In arguments and Sentinel configuration, `{n1}`, `{n2}`, …
/// stand for those nodes' addresses, known only once the run's network exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    pub name: String,
    pub args: Vec<String>,
    /// The `sentinel.conf` of a Sentinel on this node (port [`SENTINEL_PORT`]).
    pub sentinel: Option<String>,
}

impl NodeSpec {
    /// A node with no Sentinel.
    pub fn new(name: String, args: Vec<String>) -> NodeSpec {
        NodeSpec {
            name,
            args,
            sentinel: None,
        }
    }
}

/// How a deployment's nodes relate, which clients and faults need to know: one value, said by
/// the topology and carried from there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Replication {
    /// Every node stands alone: one server, or independent masters.
    #[default]
    Standalone,
    /// One master and its replicas, watched by Sentinels.
    Sentinel,
    /// A Redis Cluster: each slot has a master with replicas.
    Cluster,
    /// Members that elect a leader and commit each write on a majority (etcd's Raft,
    /// ZooKeeper's Zab): the leader is the master, and a new one is elected when it is cut off.
    Consensus,
}

impl Replication {
    /// Whether a master here has replicas that can take its place (a failover).
    pub fn fails_over(self) -> bool {
        self != Replication::Standalone
    }

    /// Who makes a new master, as nemesis `master` ops record it.
    pub fn promoter(self) -> &'static str {
        match self {
            Replication::Standalone => "nobody",
            Replication::Sentinel => "sentinel",
            Replication::Cluster => "cluster",
            Replication::Consensus => "election",
        }
    }
}

/// A deployment shape.
pub trait Topology: Sync {
    /// The name users pass to `--deployment`.
    fn name(&self) -> &'static str;
    /// One line for `--help` and reports.
    fn summary(&self) -> &'static str;
    /// The server program its nodes run, unless `--server` names another version of it.
    fn system(&self) -> &'static dyn System;
    /// How its nodes relate.
    fn replication(&self) -> Replication {
        Replication::Standalone
    }
    /// The nodes to start, or a message saying why the options do not fit.
    fn nodes(&self, options: &TopologyOptions) -> Result<Vec<NodeSpec>, String>;
    /// A command to run on the first node once every node answers, that joins the nodes
    /// into one deployment (creates a cluster); `{n1}`, … stand for addresses.
    fn formation(&self, _options: &TopologyOptions) -> Option<Vec<String>> {
        None
    }
    /// The failure detector a fault on the nodes must outlast before this deployment acts on
    /// it (promotes a replica); `None` where nothing watches the nodes.
    fn failure_detector(&self, _options: &TopologyOptions) -> Option<FailureDetector> {
        None
    }
}

impl std::fmt::Debug for dyn Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How long a node must look gone before a deployment acts, and what that time is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureDetector {
    pub after: Duration,
    pub why: String,
}

/// About how long an election and a promotion take once a master is deemed down: a Sentinel
/// leader vote, a Cluster replica's ranked election delay (500 ms and up to 500 ms more), or a
/// Raft election (a randomised timeout and a round of votes).
pub const ELECTION: Duration = Duration::from_secs(1);

/// A duration as a person writes it: `2s`, `1.5s`.
pub fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// `n1`, `n2`, …: node names as Jepsen gives them.
pub fn node_name(i: usize) -> String {
    format!("n{}", i + 1)
}
