//! How a deployment looks to its clients and its data workloads: a [`Connection`], which its
//! system makes, and the data it keeps for the data workloads ([`Registers`], [`Set`]).

use std::any::Any;
use std::net::SocketAddr;

use async_trait::async_trait;
use splitbrain_checker::OpType;

/// How a deployment looks to its clients: made by its system, each of whose clients reads it
/// as the system's own type ([`crate::ClientConfig::connection`]). The rest of the harness
/// sees only this.
pub trait Connection: Any + Send + Sync {
    /// The deployment's name (`single`, `sentinel`, `etcd`), as `--deployment` takes it.
    fn deployment(&self) -> &'static str;
    /// The `hello` request's description of the deployment for an external client program, on
    /// these nodes: each node's role at the start (`master`, `member`), and whatever else a
    /// library's own support for it needs (the Sentinels, a connection string in `connect`).
    fn describe(&self, nodes: &[(String, SocketAddr)]) -> Description;
    /// A worker's registers on these nodes, for the `register` workload; or why this
    /// deployment has none.
    fn registers(&self, _nodes: &[(String, SocketAddr)]) -> Result<Box<dyn Registers>, String> {
        Err(format!(
            "the {} deployment keeps no registers the workload can use",
            self.deployment()
        ))
    }
    /// A worker's set on these nodes, for the `set` workload; or why this deployment has none.
    fn set(&self, _nodes: &[(String, SocketAddr)]) -> Result<Box<dyn Set>, String> {
        Err(format!(
            "the {} deployment keeps no set the workload can use",
            self.deployment()
        ))
    }
}

/// What [`Connection::describe`] tells an external client program.
#[derive(Debug, Clone, PartialEq)]
pub struct Description {
    /// Each node's role at the start, in the order of the nodes.
    pub roles: Vec<&'static str>,
    /// Further fields of `hello`: `sentinels`, `connect`.
    pub fields: serde_json::Map<String, serde_json::Value>,
}

/// How one data op ended short of `ok`: `fail` if it certainly did not happen, `info` if it
/// may have, with why.
pub type Unsettled = (OpType, String);

/// Where a `register` worker's registers live: keys of the deployment's own data, each a
/// register of small integers.
#[async_trait]
pub trait Registers: Send {
    async fn read(&mut self, key: &str) -> Result<Option<i64>, Unsettled>;
    async fn write(&mut self, key: &str, value: i64) -> Result<(), Unsettled>;
    /// Sets `key` to `new` if it holds `expected`; whether it did.
    async fn cas(&mut self, key: &str, expected: i64, new: i64) -> Result<bool, Unsettled>;
    /// The node that answered last.
    fn node(&self) -> String;
}

/// Where a `set` worker's set lives: a key of the deployment's own data holding integers.
#[async_trait]
pub trait Set: Send {
    async fn add(&mut self, key: &str, element: i64) -> Result<(), Unsettled>;
    /// Every element of the set at `key`.
    async fn members(&mut self, key: &str) -> Result<Vec<i64>, Unsettled>;
    /// The node that answered last.
    fn node(&self) -> String;
}
