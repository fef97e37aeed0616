//! The options only Redis's deployments take, each declared once: `splitbrain run` makes a
//! flag of each and `test.json` a key, and refuses one given to a deployment that does not
//! take it.

use std::time::Duration;

use splitbrain_compose::topology::setting::{Kind, Value};
use splitbrain_compose::topology::{Setting, TopologyOptions};

/// What a killed node keeps, as Redis's append-only file is synced: taken by every Redis
/// deployment.
pub const PERSISTENCE: Setting = Setting {
    id: "persistence",
    help: "What a killed node keeps: none | everysec | always (AOF fsync policy)",
    kind: Kind::Choice(&["none", "everysec", "always"]),
    default: Value::Choice("none"),
};

pub const SENTINEL_QUORUM: Setting = Setting {
    id: "sentinel_quorum",
    help: "Sentinel: how many Sentinels must agree that the master is down",
    kind: Kind::Count { least: 1 },
    default: Value::Count(2),
};

pub const DOWN_AFTER: Setting = Setting {
    id: "down_after",
    help: "Sentinel: how long the master must be unreachable before a Sentinel thinks it down",
    kind: Kind::Duration,
    default: Value::Duration(Duration::from_secs(2)),
};

pub const FAILOVER_TIMEOUT: Setting = Setting {
    id: "failover_timeout",
    help: "Sentinel: the failover timeout",
    kind: Kind::Duration,
    default: Value::Duration(Duration::from_secs(6)),
};

pub const MIN_REPLICAS_TO_WRITE: Setting = Setting {
    id: "min_replicas_to_write",
    help: "Sentinel: the master refuses writes with fewer replicas than this connected",
    kind: Kind::Count { least: 0 },
    default: Value::Count(0),
};

pub const CLUSTER_REPLICAS: Setting = Setting {
    id: "cluster_replicas",
    help: "Cluster: replicas per master",
    kind: Kind::Count { least: 0 },
    default: Value::Count(1),
};

pub const CLUSTER_NODE_TIMEOUT: Setting = Setting {
    id: "cluster_node_timeout",
    help: "Cluster: how long a master may be unreachable before it is failed over",
    kind: Kind::Duration,
    default: Value::Duration(Duration::from_secs(2)),
};

/// The `redis-server` arguments for the persistence the run asked for: an append-only file
/// synced every second or on every write, or none. RDB snapshots are always off, so that
/// what survives a kill is exactly what the policy promises.
pub fn persistence_args(options: &TopologyOptions) -> Vec<String> {
    let fsync = match options.settings.choice(&PERSISTENCE) {
        "everysec" => Some("everysec"),
        "always" => Some("always"),
        _ => None,
    };
    let mut args = vec!["--save".to_string(), String::new(), "--appendonly".into()];
    match fsync {
        Some(policy) => args.extend(["yes".into(), "--appendfsync".into(), policy.into()]),
        None => args.push("no".into()),
    }
    args
}
