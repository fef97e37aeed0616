//! splitbrain's deployments: the node image, a run's private network, its Redis containers,
//! and their lifecycle (kill, restart, pause) through the Docker API.
//!
//! Every container and network a run makes carries the label `splitbrain.run=<run id>`, so
//! that [`remove_run`] and [`clean`] can always find what a run left behind.

pub mod clock;
mod deployment;
mod docker;
mod error;
pub mod image;
pub mod topology;

pub use bollard::Docker;
pub use deployment::{Deployment, ExecOutput, Node, NodeState, Storage};
pub use docker::{clean, connect, list_run, remove_run, Leftovers, RUN_LABEL};
pub use error::ComposeError;
pub use topology::{Topology, TopologyOptions, TOPOLOGIES};
