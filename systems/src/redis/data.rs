//! The data workloads' data as Redis keys on the deployment's master: `register`'s registers
//! (`GET`, `SET` and a compare-and-set script) and `set`'s set (`SADD`, `SMEMBERS`).

use std::time::Duration;

use async_trait::async_trait;
use splitbrain_checker::OpType;
use splitbrain_workloads::workload::{Registers, Set, Unsettled};
use std::net::SocketAddr;

use super::master::Server;
use super::node::NodeError;
use super::RedisDeployment;

/// How long one data command may take before its outcome is unknown.
const OP_TIMEOUT: Duration = Duration::from_secs(1);

/// Sets a key to a new value only if it holds the expected one; 1 if it did, else 0.
const COMPARE_AND_SET: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[2])
    return 1
end
return 0
";

/// A `register` worker's registers on the master of this deployment, or why it has none.
pub(super) fn registers(
    redis: &RedisDeployment,
    nodes: &[(String, SocketAddr)],
) -> Result<Box<dyn Registers>, String> {
    Ok(Box::new(RedisRegisters {
        server: Server::on(redis, nodes, "the register workload", OP_TIMEOUT)?,
        script: redis::Script::new(COMPARE_AND_SET),
    }))
}

/// A `set` worker's set on the master of this deployment, or why it has none.
pub(super) fn set(
    redis: &RedisDeployment,
    nodes: &[(String, SocketAddr)],
) -> Result<Box<dyn Set>, String> {
    let server = Server::on(redis, nodes, "the set workload", OP_TIMEOUT)?;
    Ok(Box::new(RedisSet(server)))
}

/// How an update that got no good reply ends: `info` if it may have taken effect, `fail` if
/// it certainly did not.
fn unsettled(error: NodeError) -> Unsettled {
    let kind = if error.is_indeterminate() {
        OpType::Info
    } else {
        OpType::Fail
    };
    (kind, error.to_string())
}

/// Registers as Redis keys on the deployment's master: `GET`, `SET` and a compare-and-set
/// script.
struct RedisRegisters {
    server: Server,
    script: redis::Script,
}

#[async_trait]
impl Registers for RedisRegisters {
    async fn read(&mut self, key: &str) -> Result<Option<i64>, Unsettled> {
        let get = redis::cmd("GET").arg(key).clone();
        self.server.query(&get).await.map_err(unsettled)
    }

    async fn write(&mut self, key: &str, value: i64) -> Result<(), Unsettled> {
        let set = redis::cmd("SET").arg(key).arg(value).clone();
        self.server.query(&set).await.map_err(unsettled)
    }

    async fn cas(&mut self, key: &str, expected: i64, new: i64) -> Result<bool, Unsettled> {
        let (expected, new) = (expected.to_string(), new.to_string());
        self.server
            .eval::<i64>(&self.script, &[key], &[&expected, &new])
            .await
            .map(|done| done == 1)
            .map_err(unsettled)
    }

    fn node(&self) -> String {
        self.server.name().to_string()
    }
}

/// A set as a Redis set.
struct RedisSet(Server);

#[async_trait]
impl Set for RedisSet {
    async fn add(&mut self, key: &str, element: i64) -> Result<(), Unsettled> {
        let sadd = redis::cmd("SADD").arg(key).arg(element).clone();
        self.0
            .query::<i64>(&sadd)
            .await
            .map(drop)
            .map_err(unsettled)
    }

    async fn members(&mut self, key: &str) -> Result<Vec<i64>, Unsettled> {
        let smembers = redis::cmd("SMEMBERS").arg(key).clone();
        self.0.query(&smembers).await.map_err(unsettled)
    }

    fn node(&self) -> String {
        self.0.name().to_string()
    }
}
