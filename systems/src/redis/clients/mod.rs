//! Redis's lock clients, one file per algorithm, in the article's order.

mod del_release;
mod fenced;
mod redlock;
mod set_nx_px;
mod setnx_expire;
mod wait;
mod watchdog;

use std::time::Duration;

use splitbrain_workloads::{
    held_by_another, new_token, spin_delay, ClientConfig, ClientKind, CrashPoint, Fences, Grant,
    LockClient, Outcome,
};

use super::master::Server;
use super::node::{NodeConn, NodeError};
use super::RedisDeployment;

pub(super) static CLIENTS: &[ClientKind] = &[
    setnx_expire::KIND,
    del_release::KIND,
    set_nx_px::KIND,
    watchdog::KIND,
    wait::KIND,
    fenced::KIND,
    redlock::KIND,
];

/// `SET resource token NX PX ttl`: take the key only if nobody holds it, with a lease.
fn set_if_absent(resource: &str, token: &str, ttl: Duration) -> redis::Cmd {
    let mut set = redis::cmd("SET");
    set.arg(resource)
        .arg(token)
        .arg("NX")
        .arg("PX")
        .arg(ttl.as_millis() as u64);
    set
}

/// Releases the key only if it still holds our token: the canonical compare-and-delete.
const COMPARE_AND_DELETE: &str = r#"
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end
"#;
