//! What the nodes say about themselves: the program and version they run, and their logs.

use std::path::Path;

use bollard::query_parameters::LogsOptions;
use futures_util::StreamExt;

use super::{Deployment, Node};
use crate::ComposeError;

impl Deployment {
    /// The program and version the nodes run, as the first node reports it: `redis 7.0.15`.
    pub async fn server_version(&self) -> Option<String> {
        self.system.version(self.nodes.first()?.addr).await
    }

    /// Writes each node's container log to `dir/<node>/<system's log file>` (`redis.log`),
    /// and the storage's to `dir/storage/postgres.log`.
    pub async fn save_logs(&self, dir: &Path) -> Result<(), ComposeError> {
        let nodes = self
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), &n.container, self.system.log_file()));
        let storage = self
            .storage
            .iter()
            .map(|s| ("storage", &s.container, "postgres.log"));
        for (name, container, file) in nodes.chain(storage) {
            let node_dir = dir.join(name);
            std::fs::create_dir_all(&node_dir)
                .map_err(ComposeError::io(format!("creating {}", node_dir.display())))?;
            let options = LogsOptions {
                stdout: true,
                stderr: true,
                timestamps: true,
                ..Default::default()
            };
            let mut log = Vec::new();
            let mut stream = self.docker.logs(container, Some(options));
            while let Some(chunk) = stream.next().await {
                log.extend_from_slice(&chunk?.into_bytes());
            }
            let path = node_dir.join(file);
            std::fs::write(&path, log)
                .map_err(ComposeError::io(format!("writing {}", path.display())))?;
        }
        Ok(())
    }

    /// How a node's container ended, with the last lines of its log, if it is no longer
    /// running.
    pub(super) async fn exit_of(&self, node: &Node) -> Option<String> {
        let state = self
            .docker
            .inspect_container(&node.container, None)
            .await
            .ok()?
            .state?;
        if state.running == Some(true) {
            return None;
        }
        let options = LogsOptions {
            stdout: true,
            stderr: true,
            tail: "5".into(),
            ..Default::default()
        };
        let mut log = Vec::new();
        let mut stream = self.docker.logs(&node.container, Some(options));
        while let Some(Ok(chunk)) = stream.next().await {
            log.extend_from_slice(&chunk.into_bytes());
        }
        Some(format!(
            "its container exited with {}; its log ends: {}",
            state.exit_code.unwrap_or_default(),
            String::from_utf8_lossy(&log).trim().replace('\n', " | ")
        ))
    }
}
