//! The run's own network: a /24 of its own with no route out, the nodes at fixed addresses
//! on it, and the harness at its gateway.

use std::net::Ipv4Addr;

use bollard::models::{Ipam, IpamConfig, NetworkCreateRequest};
use bollard::Docker;

use super::Deployment;
use crate::docker::run_labels;
use crate::ComposeError;

/// The storage's host number on the run's /24, well clear of the nodes (.11 upwards).
pub(super) const STORAGE_HOST: u8 = 250;
/// The first node's host number on the run's /24.
pub(super) const FIRST_NODE_HOST: u8 = 11;
/// The most nodes a deployment can have: each has an address of its own on the run's /24,
/// between the first node's and the storage's.
pub const MOST_NODES: usize = (STORAGE_HOST - FIRST_NODE_HOST) as usize;

impl Deployment {
    /// The name of the run's network.
    pub fn network(&self) -> &str {
        &self.network
    }

    /// The address the harness (and every client) reaches the nodes from.
    pub fn gateway(&self) -> Ipv4Addr {
        self.gateway
    }
}

/// Creates the run's internal network (no route out) on the first free /24 of 10.98.0.0/16,
/// starting at a slot derived from the run id so that concurrent runs rarely race for one.
pub(super) async fn create_network(
    docker: &Docker,
    run_id: &str,
) -> Result<(String, [u8; 3]), ComposeError> {
    let name = format!("splitbrain-{run_id}");
    let first = run_id
        .bytes()
        .fold(0u8, |h, b| h.wrapping_mul(31).wrapping_add(b));
    let mut last_error = String::new();
    for step in 0..=255u8 {
        let prefix = [10, 98, first.wrapping_add(step)];
        let request = NetworkCreateRequest {
            name: name.clone(),
            driver: Some("bridge".into()),
            internal: Some(true),
            labels: Some(run_labels(run_id)),
            ipam: Some(Ipam {
                config: Some(vec![IpamConfig {
                    subnet: Some(format!("{}.{}.{}.0/24", prefix[0], prefix[1], prefix[2])),
                    gateway: Some(format!("{}.{}.{}.1", prefix[0], prefix[1], prefix[2])),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        match docker.create_network(request).await {
            Ok(_) => return Ok((name, prefix)),
            Err(bollard::errors::Error::DockerResponseServerError { message, .. })
                if message.contains("overlap") =>
            {
                last_error = message;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ComposeError::NoSubnet(last_error))
}
