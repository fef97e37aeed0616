//! Deployment shapes. A topology says which system runs (see [`crate::system`]), which nodes
//! a deployment has and how each is started; [`crate::Deployment`] does the rest. The
//! topologies themselves live with their systems (the `splitbrain-systems` crate).

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::future::BoxFuture;

use crate::system::System;
use crate::{ComposeError, Deployment};

pub mod setting;

pub use setting::{Setting, Settings};

/// Options every topology understands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyOptions {
    /// Number of nodes, where the topology lets it vary.
    pub nodes: Option<usize>,
    /// The options only some topologies take, as the run gave them.
    pub settings: Settings,
}

/// One container to start: its node name, its server's arguments, and the companion that
/// runs beside it, if any. In arguments and a companion's configuration, `{n1}`, `{n2}`, …
/// stand for those nodes' addresses, known only once the run's network exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    pub name: String,
    pub args: Vec<String>,
    pub companion: Option<Companion>,
}

impl NodeSpec {
    /// A node with its server alone.
    pub fn new(name: String, args: Vec<String>) -> NodeSpec {
        NodeSpec {
            name,
            args,
            companion: None,
        }
    }
}

/// A second program a node's container runs beside its server, which clients reach too (a
/// Redis node's Sentinel): a fault on the node is one on it as well, and a kill crashes it
/// with the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Companion {
    /// The program, which the node's entry point starts with its configuration file's path.
    pub program: &'static str,
    /// Its configuration file, written once: a restarted node keeps what the program wrote
    /// to it since, as a real machine's disk would.
    pub conf: String,
    /// The port it listens on, at its node's address.
    pub port: u16,
}

/// How a deployment's nodes relate, which clients and faults need to know: one value, said by
/// the topology and carried from there. The default is nodes that each stand alone (one
/// server, or independent masters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replication {
    /// Who makes a new master when the master is lost (a Sentinel, a cluster's vote, a Raft
    /// election), as nemesis `master` ops record it; `None` where no replica can take a
    /// master's place.
    pub promoter: Option<&'static str>,
    /// Whether each write is committed on a majority before it is answered (etcd's Raft,
    /// ZooKeeper's Zab), so that no failover loses a grant.
    pub majority_commits: bool,
    /// Whether an operator can ask for a failover while the master is up
    /// ([`Topology::failover`]).
    pub operator_failover: bool,
    /// Whether clients follow redirects to the nodes' own addresses (a Redis Cluster's
    /// `MOVED`), around the client link proxies, which link faults therefore cannot reach.
    pub clients_bypass_links: bool,
}

impl Replication {
    /// Whether a master here has replicas that can take its place (a failover).
    pub fn fails_over(self) -> bool {
        self.promoter.is_some()
    }

    /// Members that elect a leader and commit each write on a majority: the leader is the
    /// master, and a new one is elected when it is cut off.
    pub const CONSENSUS: Replication = Replication {
        promoter: Some("election"),
        majority_commits: true,
        operator_failover: false,
        clients_bypass_links: false,
    };
}

/// Who acts as master for a key, as a deployment says it: Jepsen's `Primary`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Masters {
    /// Every node that acts as master, sorted: one in a healthy deployment, two in a split
    /// brain, none when nobody answers (or the nodes stand alone).
    pub all: Vec<String>,
    /// The one the deployment's majority follows, if it is known.
    pub followed: Option<String>,
}

impl Masters {
    /// Masters of which none is followed by more than the others: the one, if there is one.
    pub fn agreed(mut all: Vec<String>) -> Masters {
        all.sort();
        all.dedup();
        let followed = match all.as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        };
        Masters { all, followed }
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
        Replication::default()
    }
    /// The options only some deployments take that this one takes and declares: each is a
    /// `splitbrain run` option and a `test.json` key.
    fn settings(&self) -> &'static [Setting] {
        &[]
    }
    /// Every run option, by its key in `test.json` (`down_after`), that only some
    /// deployments take, which this one takes: its settings, and any other option it gives
    /// meaning to. Elsewhere they would do nothing, and a run refuses them naming the
    /// deployments that take them.
    fn takes(&self) -> Vec<&'static str> {
        self.settings().iter().map(|setting| setting.id).collect()
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
    /// Whether the nodes, every one answering, their system formed and joined by
    /// [`Topology::formation`], are the deployment this topology means (watchers agreeing
    /// on the master, every slot served); `Err` says what they are instead.
    fn formed(&self, _nodes: Vec<(String, SocketAddr)>) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
    /// Who acts as master for `key` now (Jepsen's `Primary`), as the nodes running `system`
    /// say it: by default the leaders its members name ([`System::leaders`]), nobody where
    /// nodes stand alone.
    fn masters(
        &self,
        system: &'static dyn System,
        nodes: Vec<(String, SocketAddr)>,
        _key: String,
    ) -> BoxFuture<'static, Masters> {
        let leaders = system.leaders(nodes);
        Box::pin(async move { Masters::agreed(leaders.await) })
    }
    /// Asks the deployment to promote a replica while its master is up, as an operator does,
    /// for deployments with [`Replication::operator_failover`]: `pick` chooses among the
    /// candidates. Returns what was asked and answered, for the nemesis op's `measured`.
    fn failover<'a>(
        &'a self,
        _deployment: &'a Deployment,
        _key: &'a str,
        _pick: usize,
    ) -> BoxFuture<'a, Result<serde_json::Value, ComposeError>> {
        let name = self.name();
        Box::pin(async move {
            Ok(serde_json::json!({ "refused": format!("{name} has no operator failover") }))
        })
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
