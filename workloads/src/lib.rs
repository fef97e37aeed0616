//! splitbrain's lock clients (one file per algorithm, in [`clients`]) and the workloads that
//! drive them (in [`workload`]), recording every operation in a [`Recorder`].

pub mod clients;
mod crashes;
mod etcd;
mod master;
mod node;
mod pauses;
mod postgres;
mod recorder;
pub mod storage;
pub mod workload;
mod zookeeper;

pub use clients::{
    find_client, ClientConfig, ClientKind, ClientOptions, Fences, Grant, LockClient, Outcome,
    Sentinels, Shape, CLIENTS, EXEC_PREFIX,
};
pub use crashes::{ClientCrashes, CrashPoint};
pub use master::{ClusterConn, MasterConn, Server};
pub use node::{NodeConn, NodeError};
pub use pauses::ClientPauses;
pub use recorder::{Recorder, SeenGrant};
