//! What a lock client is ([`clients`]) and the workloads that drive clients (in
//! [`workload`]), recording every operation in a [`Recorder`]. The clients of each system
//! live with it, in the `splitbrain-systems` crate.

pub mod clients;
mod connection;
mod crashes;
mod pauses;
mod recorder;
pub mod storage;
pub mod workload;

pub use clients::{
    held_by_another, new_token, spin_delay, ClientConfig, ClientKind, ClientOptions, Fences, Grant,
    LockClient, Outcome, RenewalReport, EXEC, EXEC_PREFIX,
};
pub use connection::{Connection, Description};
pub use crashes::{ClientCrashes, CrashPoint};
pub use pauses::ClientPauses;
pub use recorder::{Recorder, SeenGrant};
