//! Workloads: what client processes do, as a stream of recorded operations.

pub mod lock;
pub mod set;

/// Every workload, by name, for `--workload`.
pub static WORKLOADS: &[(&str, &str)] = &[
    (
        "lock",
        "clients loop: acquire, hold for a while, release (lock safety)",
    ),
    (
        "lock-set",
        "under the lock, read a document from PostgreSQL, append an id, write it back (lost writes)",
    ),
    (
        "set",
        "Jepsen 2013: clients SADD unique ids on the master they are told of (lost writes)",
    ),
];
