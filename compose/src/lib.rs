//! splitbrain's deployments: the systems under test and their images, a run's private network,
//! its containers, and their lifecycle (kill, restart, pause) through the Docker API.
//!
//! Every container and network a run makes carries the label `splitbrain.run=<run id>`, and
//! `splitbrain.owner` naming the harness process that made it ([`owner`]), so that
//! [`remove_run`], [`remove_owned`] and [`clean`] can always find what a run left behind.

mod deployment;
mod docker;
mod error;
pub mod image;
pub mod owner;
pub mod system;
pub mod topology;

pub use bollard::Docker;
pub use deployment::clock;
pub use deployment::{BringUp, Deployment, ExecOutput, Node, NodeState, Storage, MOST_NODES};
pub use docker::{
    abandoned, clean, connect, list_run, remove_owned, remove_run, Cleaned, Leftovers, RUN_LABEL,
};
pub use error::ComposeError;
pub use system::System;
pub use topology::{Replication, Topology, TopologyOptions};
