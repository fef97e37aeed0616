//! A deployment: a run's nodes in their containers on the run's own network, and what the
//! harness and the faults do to them, one role to a file:
//!
//! - [`lifecycle`]: bring the nodes up until they form one deployment, start the storage
//!   beside them, and tear it all down;
//! - [`control`]: crash, restart, freeze and thaw a node, run a command inside it, and read
//!   its container's state;
//! - [`network`]: the run's network and the addresses on it;
//! - [`clock`]: each node's wall clock;
//! - [`logs`]: what the nodes wrote, and what they run.
//!
//! Who is master, and an operator's failover, are the topology's to say (Jepsen's `Primary`):
//! this file hands those questions on.

pub mod clock;
mod control;
mod lifecycle;
mod logs;
mod network;

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bollard::Docker;

pub use control::{ExecOutput, NodeState};
pub use lifecycle::{BringUp, Storage};
pub use network::MOST_NODES;

use crate::system::System;
use crate::topology::{Masters, Replication, Topology};
use crate::ComposeError;

/// How long a node may take to answer after it is started.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// One running node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Jepsen-style name: `n1`, `n2`, …
    pub name: String,
    /// The container's name, unique to the run.
    pub container: String,
    /// Where the harness (and every client) reaches this node's server. Fixed for the run,
    /// across restarts.
    pub addr: SocketAddr,
    /// Where the companion beside its server listens, if one does (a Redis node's Sentinel).
    pub companion: Option<SocketAddr>,
}

/// A deployment's containers on the run's own internal network. Cloning is cheap and every
/// clone controls the same containers.
///
/// It does not remove itself on drop (that needs the async Docker API); callers call
/// [`Deployment::teardown`], or [`crate::remove_run`] with the run id on any exit path.
#[derive(Clone)]
pub struct Deployment {
    docker: Docker,
    run_id: String,
    network: String,
    gateway: Ipv4Addr,
    nodes: Vec<Node>,
    storage: Option<Storage>,
    /// What runs on the nodes.
    system: &'static dyn System,
    /// How the nodes are laid out and relate, and who among them is master.
    topology: &'static dyn Topology,
    /// Nodes whose server was crashed by [`Deployment::kill`] and not restarted yet; shared by
    /// every clone.
    crashed: Arc<Mutex<HashSet<String>>>,
    bring_up: BringUp,
}

impl Deployment {
    /// What runs on the nodes.
    pub fn system(&self) -> &'static dyn System {
        self.system
    }

    /// How the nodes relate.
    pub fn replication(&self) -> Replication {
        self.topology.replication()
    }

    /// Who acts as master for `key` now, as the deployment says it (Jepsen's `Primary`).
    pub async fn masters(&self, key: &str) -> Masters {
        self.topology
            .masters(self.system, self.addresses(), key.to_string())
            .await
    }

    /// Every node that acts as master for `key`, sorted: one in a healthy deployment, two in
    /// a split brain, none when nobody answers (or the nodes stand alone).
    pub async fn masters_of(&self, key: &str) -> Vec<String> {
        self.masters(key).await.all
    }

    /// The master for `key` that the deployment's majority follows, if it is known.
    pub async fn master_of(&self, key: &str) -> Option<String> {
        self.masters(key).await.followed
    }

    /// Asks the deployment to promote a replica of `key`'s master while it is up, as an
    /// operator does (see [`Topology::failover`]).
    pub async fn failover(
        &self,
        key: &str,
        pick: usize,
    ) -> Result<serde_json::Value, ComposeError> {
        self.topology.failover(self, key, pick).await
    }

    /// Every node, in order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Every node's name, in order.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Result<&Node, ComposeError> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .ok_or_else(|| ComposeError::UnknownNode(name.to_string()))
    }

    /// Every node's name and address.
    pub fn addresses(&self) -> Vec<(String, SocketAddr)> {
        self.nodes
            .iter()
            .map(|n| (n.name.clone(), n.addr))
            .collect()
    }
}
