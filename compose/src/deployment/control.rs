//! Node control, the way the faults act on a node: crash its server and start it again,
//! freeze and thaw it, run a command inside it (a partition's firewall rules, a clock's skew),
//! and read its container's state.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use bollard::exec::StartExecResults;
use bollard::models::ExecConfig;
use bollard::query_parameters::KillContainerOptions;
use futures_util::StreamExt;

use super::{Deployment, Node, READY_TIMEOUT};
use crate::ComposeError;

/// Whether a node's container runs, and whether it is frozen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeState {
    pub running: bool,
    pub paused: bool,
}

/// What a command run inside a node printed, and how it exited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub exit_code: i64,
    pub output: String,
}

impl Deployment {
    /// Crashes a node: SIGKILLs its server (and any process beside it, a Redis node's
    /// Sentinel) inside the running container, and returns once the server no longer accepts
    /// connections; what it keeps is what its system persists. The container's entry point
    /// supervises the processes (see `compose/images/node/splitbrain-node`): a process restart
    /// takes tens of milliseconds where a container restart takes seconds on a busy machine,
    /// longer than the leases at stake.
    pub async fn kill(&self, name: &str) -> Result<(), ComposeError> {
        let node = self.node(name)?;
        self.signal(node, "SIGUSR1").await?;
        self.crashed_nodes().insert(name.to_string());
        wait_refused(node).await
    }

    /// Starts a crashed node's processes again and waits until it answers.
    pub async fn restart(&self, name: &str) -> Result<(), ComposeError> {
        let node = self.node(name)?;
        self.signal(node, "SIGUSR2").await?;
        self.wait_ready(node).await?;
        self.crashed_nodes().remove(name);
        Ok(())
    }

    /// Sends a signal to a node's entry point, its process supervisor.
    async fn signal(&self, node: &Node, signal: &str) -> Result<(), ComposeError> {
        let options = KillContainerOptions {
            signal: signal.into(),
        };
        self.docker
            .kill_container(&node.container, Some(options))
            .await?;
        Ok(())
    }

    fn crashed_nodes(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.crashed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Freezes every process of a node (SIGSTOP through the cgroup freezer).
    pub async fn pause(&self, name: &str) -> Result<(), ComposeError> {
        let node = self.node(name)?;
        self.docker.pause_container(&node.container).await?;
        Ok(())
    }

    /// Thaws a paused node.
    pub async fn resume(&self, name: &str) -> Result<(), ComposeError> {
        let node = self.node(name)?;
        self.docker.unpause_container(&node.container).await?;
        Ok(())
    }

    /// Runs a command inside a node (as root, with the node's NET_ADMIN capability) and waits
    /// for it to finish.
    pub async fn exec(&self, name: &str, cmd: &[&str]) -> Result<ExecOutput, ComposeError> {
        let node = self.node(name)?;
        let config = ExecConfig {
            cmd: Some(cmd.iter().map(|s| s.to_string()).collect()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            ..Default::default()
        };
        let exec = self.docker.create_exec(&node.container, config).await?;
        let mut output = Vec::new();
        if let StartExecResults::Attached {
            output: mut stream, ..
        } = self.docker.start_exec(&exec.id, None).await?
        {
            // The exit code is only known once the output is drained.
            while let Some(chunk) = stream.next().await {
                output.extend_from_slice(&chunk?.into_bytes());
            }
        }
        let exit_code = self
            .docker
            .inspect_exec(&exec.id)
            .await?
            .exit_code
            .unwrap_or(-1);
        Ok(ExecOutput {
            exit_code,
            output: String::from_utf8_lossy(&output).into_owned(),
        })
    }

    /// Like [`Deployment::exec`], but a non-zero exit is an error naming the command.
    pub async fn exec_ok(&self, name: &str, cmd: &[&str]) -> Result<String, ComposeError> {
        let out = self.exec(name, cmd).await?;
        if out.exit_code == 0 {
            Ok(out.output)
        } else {
            Err(ComposeError::Exec {
                node: name.to_string(),
                command: cmd.join(" "),
                exit_code: out.exit_code,
                output: out.output.trim().to_string(),
            })
        }
    }

    /// Each node's container state, by node name.
    pub async fn health(&self) -> Result<Vec<(String, NodeState)>, ComposeError> {
        let mut health = Vec::new();
        for node in &self.nodes {
            let state = self
                .docker
                .inspect_container(&node.container, None)
                .await?
                .state
                .unwrap_or_default();
            let state = NodeState {
                running: state.running == Some(true) && !self.crashed_nodes().contains(&node.name),
                paused: state.paused == Some(true),
            };
            health.push((node.name.clone(), state));
        }
        Ok(health)
    }
}

/// Waits until a crashed node's server no longer accepts connections.
async fn wait_refused(node: &Node) -> Result<(), ComposeError> {
    let started = Instant::now();
    while started.elapsed() < READY_TIMEOUT {
        let connect = tokio::net::TcpStream::connect(node.addr);
        match tokio::time::timeout(Duration::from_millis(500), connect).await {
            Ok(Err(_)) => return Ok(()),
            Ok(Ok(_)) | Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    Err(ComposeError::NodeNotDown {
        node: node.name.clone(),
        seconds: READY_TIMEOUT.as_secs(),
    })
}
