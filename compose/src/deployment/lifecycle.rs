//! A deployment's life: its nodes started together and waited for until they form one
//! deployment, the storage started beside them, and everything the run made removed.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::models::{
    ContainerCreateBody, EndpointIpamConfig, EndpointSettings, HostConfig, NetworkingConfig,
};
use bollard::query_parameters::CreateContainerOptions;
use bollard::Docker;
use futures_util::future::{join_all, try_join_all};

use super::network::{create_network, FIRST_NODE_HOST, STORAGE_HOST};
use super::{Deployment, Node, READY_TIMEOUT};
use crate::docker::{remove_run, run_labels, Leftovers};
use crate::system::System;
use crate::topology::{NodeSpec, Topology, TopologyOptions};
use crate::ComposeError;

/// The variables the node image's entry point starts a companion from: its program, and its
/// configuration.
const COMPANION_ENV: &str = "SPLITBRAIN_COMPANION";
const COMPANION_CONF_ENV: &str = "SPLITBRAIN_COMPANION_CONF";

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
const STORAGE_PORT: u16 = 5432;

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

    /// Waits until a node's server answers.
    pub(super) async fn wait_ready(&self, node: &Node) -> Result<(), ComposeError> {
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

    /// Removes the run's containers and network.
    pub async fn teardown(&self) -> Result<Leftovers, ComposeError> {
        remove_run(&self.docker, &self.run_id).await
    }
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
