use std::collections::{HashMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bollard::exec::StartExecResults;
use bollard::models::ExecConfig;
use bollard::models::{
    ContainerCreateBody, EndpointIpamConfig, EndpointSettings, HostConfig, Ipam, IpamConfig,
    NetworkCreateRequest, NetworkingConfig,
};
use bollard::query_parameters::{CreateContainerOptions, KillContainerOptions, LogsOptions};
use bollard::Docker;
use futures_util::future::{join_all, try_join_all};
use futures_util::StreamExt;

use crate::docker::{remove_run, run_labels, Leftovers};
use crate::system::System;
use crate::topology::{Masters, NodeSpec, Replication, Topology, TopologyOptions};
use crate::ComposeError;

/// The variables the node image's entry point starts a companion from: its program, and its
/// configuration.
const COMPANION_ENV: &str = "SPLITBRAIN_COMPANION";
const COMPANION_CONF_ENV: &str = "SPLITBRAIN_COMPANION_CONF";

/// How long a node may take to answer after it is started.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// One running node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Jepsen-style name: `n1`, `n2`, …
    pub name: String,
    /// The container's name, unique to the run.
    pub container: String,
    /// Where the harness (and every client) reaches this node's server. Fixed for the run,
    /// across restarts.
    pub addr: SocketAddr,
    /// Where the companion beside its server listens, if one does (a Redis node's Sentinel).
    pub companion: Option<SocketAddr>,
}

/// A deployment's containers on the run's own internal network. Cloning is cheap and every
/// clone controls the same containers.
///
/// It does not remove itself on drop (that needs the async Docker API); callers call
/// [`Deployment::teardown`], or [`crate::remove_run`] with the run id on any exit path.
#[derive(Clone)]
pub struct Deployment {
    docker: Docker,
    run_id: String,
    network: String,
    gateway: Ipv4Addr,
    nodes: Vec<Node>,
    storage: Option<Storage>,
    /// What runs on the nodes.
    system: &'static dyn System,
    /// How the nodes are laid out and relate, and who among them is master.
    topology: &'static dyn Topology,
    /// Nodes whose server was crashed by [`Deployment::kill`] and not restarted yet; shared by
    /// every clone.
    crashed: Arc<Mutex<HashSet<String>>>,
    bring_up: BringUp,
}

/// How long a deployment took to come up, from before its network was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BringUp {
    /// Until every node answered (all started at once, polled together).
    pub ready: Duration,
    /// Until the nodes formed one deployment: Sentinels agreeing, a cluster's slots served,
    /// a leader followed. Equal to `ready` where nodes stand alone.
    pub formed: Duration,
}

/// The storage service of a run: a PostgreSQL container beside the nodes that no fault
/// touches, so that what it holds at the end is what the clients wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Storage {
    pub container: String,
    pub addr: SocketAddr,
}

/// The port the storage's PostgreSQL listens on.
pub const STORAGE_PORT: u16 = 5432;
/// The storage's host number on the run's /24, well clear of the nodes (.11 upwards).
const STORAGE_HOST: u8 = 250;
/// The first node's host number on the run's /24.
const FIRST_NODE_HOST: u8 = 11;
/// The most nodes a deployment can have: each has an address of its own on the run's /24,
/// between the first node's and the storage's.
pub const MOST_NODES: usize = (STORAGE_HOST - FIRST_NODE_HOST) as usize;

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
    /// Creates the run's network and nodes running `server` (a version of the topology's
    /// program, which the caller chose among its system's servers, from the image `image`),
    /// and waits until every node answers and the nodes form one deployment. On any failure
    /// it removes what it made before returning the error.
    pub async fn up(
        docker: &Docker,
        run_id: &str,
        (topology, server): (&'static dyn Topology, &'static dyn System),
        options: &TopologyOptions,
        image: &str,
    ) -> Result<Deployment, ComposeError> {
        let specs = topology.nodes(options).map_err(ComposeError::BadOptions)?;
        let formation = topology.formation(options);
        let result =
            Self::create(docker, run_id, &specs, (topology, server), formation, image).await;
        if result.is_err() {
            let _ = remove_run(docker, run_id).await;
        }
        result
    }

    /// `formation`: the command that joins the nodes, if one does.
    async fn create(
        docker: &Docker,
        run_id: &str,
        specs: &[NodeSpec],
        (topology, system): (&'static dyn Topology, &'static dyn System),
        formation: Option<Vec<String>>,
        image: &str,
    ) -> Result<Deployment, ComposeError> {
        let started = Instant::now();
        let (network, prefix) = create_network(docker, run_id).await?;
        let ip_of =
            |i: usize| Ipv4Addr::new(prefix[0], prefix[1], prefix[2], FIRST_NODE_HOST + i as u8);
        // `{n1}` in a node's arguments or its companion's configuration is n1's address.
        let addresses: Vec<(String, String)> = specs
            .iter()
            .enumerate()
            .map(|(i, spec)| (format!("{{{}}}", spec.name), ip_of(i).to_string()))
            .collect();
        let resolve = |text: &str| {
            addresses
                .iter()
                .fold(text.to_string(), |text, (name, ip)| text.replace(name, ip))
        };
        let nodes: Vec<Node> = specs
            .iter()
            .enumerate()
            .map(|(i, spec)| Node {
                name: spec.name.clone(),
                container: format!("splitbrain-{run_id}-{}", spec.name),
                addr: SocketAddr::new(ip_of(i).into(), system.port()),
                companion: spec
                    .companion
                    .as_ref()
                    .map(|companion| SocketAddr::new(ip_of(i).into(), companion.port)),
            })
            .collect();
        // Every node is created and started at once: Docker does the work of each in its
        // own time, and a deployment of five waits for its slowest node, not for the sum.
        let container_specs: Vec<ContainerSpec> = specs
            .iter()
            .zip(&nodes)
            .enumerate()
            .map(|(i, (spec, node))| ContainerSpec {
                run_id,
                network: &network,
                name: &node.container,
                hostname: &spec.name,
                image,
                cmd: Some(system.command(spec.args.iter().map(|arg| resolve(arg)).collect())),
                ip: ip_of(i),
                // Partition faults write iptables rules inside the node's namespace.
                cap_add: vec!["NET_ADMIN".into()],
                env: spec
                    .companion
                    .as_ref()
                    .map(|companion| {
                        vec![
                            format!("{COMPANION_ENV}={}", companion.program),
                            format!("{COMPANION_CONF_ENV}={}", resolve(&companion.conf)),
                        ]
                    })
                    .unwrap_or_default(),
            })
            .collect();
        // Every start is waited for, failed or not: a start still in flight when the first
        // one failed could create its container after the cleanup looked, and leave it behind.
        let started_all = join_all(
            container_specs
                .iter()
                .map(|spec| start_container(docker, spec)),
        )
        .await;
        started_all.into_iter().collect::<Result<(), _>>()?;
        let mut deployment = Deployment {
            docker: docker.clone(),
            run_id: run_id.to_string(),
            network,
            gateway: Ipv4Addr::new(prefix[0], prefix[1], prefix[2], 1),
            nodes,
            storage: None,
            system,
            topology,
            crashed: Arc::default(),
            bring_up: BringUp::default(),
        };
        try_join_all(
            deployment
                .nodes
                .iter()
                .map(|node| deployment.wait_ready(node)),
        )
        .await?;
        deployment.bring_up.ready = started.elapsed();
        let system_formed = || system.formed(deployment.addresses());
        deployment.wait_until(system.name(), system_formed).await?;
        if let Some(formation) = formation {
            let command: Vec<String> = formation.iter().map(|word| resolve(word)).collect();
            let command: Vec<&str> = command.iter().map(String::as_str).collect();
            deployment
                .exec_ok(&deployment.nodes[0].name, &command)
                .await?;
        }
        let topology_formed = || topology.formed(deployment.addresses());
        deployment
            .wait_until(topology.name(), topology_formed)
            .await?;
        deployment.bring_up.formed = started.elapsed();
        tracing::info!(
            ready_ms = deployment.bring_up.ready.as_millis() as u64,
            formed_ms = deployment.bring_up.formed.as_millis() as u64,
            "deployment up"
        );
        Ok(deployment)
    }

    /// How long this deployment took to come up.
    pub fn bring_up(&self) -> BringUp {
        self.bring_up
    }

    /// Starts the storage container from `image` and waits until it accepts connections.
    pub async fn start_storage(&mut self, image: &str) -> Result<Storage, ComposeError> {
        let octets = self.gateway.octets();
        let ip = Ipv4Addr::new(octets[0], octets[1], octets[2], STORAGE_HOST);
        let container = format!("splitbrain-{}-storage", self.run_id);
        let spec = ContainerSpec {
            run_id: &self.run_id,
            network: &self.network,
            name: &container,
            hostname: "storage",
            image,
            cmd: None,
            ip,
            cap_add: Vec::new(),
            env: Vec::new(),
        };
        start_container(&self.docker, &spec).await?;
        let storage = Storage {
            container,
            addr: SocketAddr::new(ip.into(), STORAGE_PORT),
        };
        wait_listening("storage", storage.addr).await?;
        self.storage = Some(storage.clone());
        Ok(storage)
    }

    /// What runs on the nodes.
    pub fn system(&self) -> &'static dyn System {
        self.system
    }

    /// How the nodes relate.
    pub fn replication(&self) -> Replication {
        self.topology.replication()
    }

    /// Who acts as master for `key` now, as the deployment says it (Jepsen's `Primary`).
    pub async fn masters(&self, key: &str) -> Masters {
        self.topology
            .masters(self.system, self.addresses(), key.to_string())
            .await
    }

    /// Every node that acts as master for `key`, sorted: one in a healthy deployment, two in
    /// a split brain, none when nobody answers (or the nodes stand alone).
    pub async fn masters_of(&self, key: &str) -> Vec<String> {
        self.masters(key).await.all
    }

    /// The master for `key` that the deployment's majority follows, if it is known.
    pub async fn master_of(&self, key: &str) -> Option<String> {
        self.masters(key).await.followed
    }

    /// Asks the deployment to promote a replica of `key`'s master while it is up, as an
    /// operator does (see [`Topology::failover`]).
    pub async fn failover(
        &self,
        key: &str,
        pick: usize,
    ) -> Result<serde_json::Value, ComposeError> {
        self.topology.failover(self, key, pick).await
    }

    pub fn network(&self) -> &str {
        &self.network
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Every node's name, in order.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }

    /// The address the harness (and every client) reaches the nodes from.
    pub fn gateway(&self) -> Ipv4Addr {
        self.gateway
    }

    pub fn node(&self, name: &str) -> Result<&Node, ComposeError> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .ok_or_else(|| ComposeError::UnknownNode(name.to_string()))
    }

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

    /// Waits until a node's server answers.
    async fn wait_ready(&self, node: &Node) -> Result<(), ComposeError> {
        let started = Instant::now();
        let mut last_error = String::from("no answer");
        while started.elapsed() < READY_TIMEOUT {
            match self.system.probe(node.addr).await {
                Ok(()) => return Ok(()),
                Err(e) => last_error = e,
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // A server that exited at start takes its container (and its address) with it, and
        // the connection errors alone would not say so.
        if let Some(exited) = self.exit_of(node).await {
            last_error = format!("{last_error}; {exited}");
        }
        Err(ComposeError::NodeNotReady {
            node: node.name.clone(),
            seconds: READY_TIMEOUT.as_secs(),
            last_error,
        })
    }

    /// How a node's container ended, with the last lines of its log, if it is no longer
    /// running.
    async fn exit_of(&self, node: &Node) -> Option<String> {
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

    /// Waits until `check` says yes, polling it, for as long as a deployment may take to come
    /// up; the error names `what` (the system or the topology) and its last answer.
    async fn wait_until<F, Fut>(&self, what: &str, check: F) -> Result<(), ComposeError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<(), String>>,
    {
        let started = Instant::now();
        let mut last_error = String::from("no answer");
        while started.elapsed() < READY_TIMEOUT {
            match check().await {
                Ok(()) => return Ok(()),
                Err(e) => last_error = e,
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(ComposeError::NodeNotReady {
            node: what.into(),
            seconds: READY_TIMEOUT.as_secs(),
            last_error,
        })
    }

    /// Every node's name and address.
    pub fn addresses(&self) -> Vec<(String, SocketAddr)> {
        self.nodes
            .iter()
            .map(|n| (n.name.clone(), n.addr))
            .collect()
    }

    /// Removes the run's containers and network.
    pub async fn teardown(&self) -> Result<Leftovers, ComposeError> {
        remove_run(&self.docker, &self.run_id).await
    }
}

/// Creates the run's internal network (no route out) on the first free /24 of 10.98.0.0/16,
/// starting at a slot derived from the run id so that concurrent runs rarely race for one.
async fn create_network(docker: &Docker, run_id: &str) -> Result<(String, [u8; 3]), ComposeError> {
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

/// One container on the run's network, at a fixed address, labelled with the run.
struct ContainerSpec<'a> {
    run_id: &'a str,
    network: &'a str,
    name: &'a str,
    hostname: &'a str,
    image: &'a str,
    /// The command; `None` runs the image's default.
    cmd: Option<Vec<String>>,
    ip: Ipv4Addr,
    cap_add: Vec<String>,
    /// `NAME=value` pairs.
    env: Vec<String>,
}

async fn start_container(docker: &Docker, spec: &ContainerSpec<'_>) -> Result<(), ComposeError> {
    let body = ContainerCreateBody {
        image: Some(spec.image.to_string()),
        hostname: Some(spec.hostname.to_string()),
        cmd: spec.cmd.clone(),
        env: Some(spec.env.clone()),
        labels: Some({
            let mut labels = run_labels(spec.run_id);
            labels.insert("splitbrain.node".into(), spec.hostname.into());
            labels
        }),
        host_config: Some(HostConfig {
            network_mode: Some(spec.network.to_string()),
            cap_add: Some(spec.cap_add.clone()),
            ..Default::default()
        }),
        networking_config: Some(NetworkingConfig {
            endpoints_config: Some(HashMap::from([(
                spec.network.to_string(),
                EndpointSettings {
                    ipam_config: Some(EndpointIpamConfig {
                        ipv4_address: Some(spec.ip.to_string()),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            )])),
        }),
        ..Default::default()
    };
    let options = CreateContainerOptions {
        name: Some(spec.name.to_string()),
        ..Default::default()
    };
    docker.create_container(Some(options), body).await?;
    docker.start_container(spec.name, None).await?;
    Ok(())
}

/// Waits until a service accepts TCP connections.
async fn wait_listening(name: &str, addr: SocketAddr) -> Result<(), ComposeError> {
    let started = Instant::now();
    let mut last_error = String::from("no answer");
    while started.elapsed() < READY_TIMEOUT {
        let connect = tokio::net::TcpStream::connect(addr);
        match tokio::time::timeout(Duration::from_secs(1), connect).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => last_error = e.to_string(),
            Err(_) => last_error = "connect timed out".into(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(ComposeError::NodeNotReady {
        node: name.to_string(),
        seconds: READY_TIMEOUT.as_secs(),
        last_error,
    })
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
