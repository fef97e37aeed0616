//! etcd's lock clients: the article's lease lock, and etcd's own lock API.

pub(super) mod lease;
pub(super) mod lock;

use splitbrain_workloads::{
    held_by_another, spin_delay, ClientConfig, ClientKind, CrashPoint, Fences, Grant, LockClient,
    Outcome,
};

use super::connection::{check_ttl, txn_if_equal, EtcdConn, EtcdError};
use super::EtcdDeployment;
