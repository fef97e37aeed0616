//! A test, as data: every parameter of a run, checked before anything starts.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use splitbrain_checker::stream::RunFacts;
use splitbrain_compose::system::{self, System};
use splitbrain_compose::topology::{
    self, ClusterOptions, Persistence, Replication, SentinelOptions, Topology, TopologyOptions,
    MASTER_NAME,
};
use splitbrain_nemesis::{all_faults, find_fault, Fault, Layout, NemesisOptions, FAULTS};
use splitbrain_workloads::storage::StorageConfig;
use splitbrain_workloads::workload::lock::LockWorkload;
use splitbrain_workloads::workload::{
    find_workload, DataOptions, Workload, WorkloadKind, WORKLOADS,
};
use splitbrain_workloads::{
    find_client, ClientConfig, ClientKind, ClientOptions, Fences, Sentinels, Shape, CLIENTS,
    EXEC_PREFIX,
};

use crate::cli::RunArgs;
use crate::error::HarnessError;
use crate::limits;
use crate::script::Script;

/// Everything a run needs, as stored in `test.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestSpec {
    pub name: String,
    #[serde(with = "by_name")]
    pub deployment: &'static dyn Topology,
    /// The server version the nodes run (`--server`); runs stored before there was a choice
    /// ran their deployment's default.
    #[serde(default, with = "opt_by_name", skip_serializing_if = "Option::is_none")]
    pub server: Option<&'static dyn System>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<usize>,
    /// The lock client (for a lock workload).
    pub client: ChosenClient,
    /// Redlock's retry jitter (off with `--no-jitter`).
    #[serde(default = "yes")]
    pub jitter: bool,
    /// Redlock asks its nodes one after another.
    #[serde(default)]
    pub sequential: bool,
    /// `wait`: how many replicas WAIT asks for; none for every replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_replicas: Option<usize>,
    #[serde(with = "by_name")]
    pub workload: &'static WorkloadKind,
    /// lock-set: the storage checks fencing tokens.
    #[serde(default)]
    pub fencing: bool,
    /// The faults; none for no faults.
    #[serde(with = "by_names")]
    pub nemesis: Vec<&'static dyn Fault>,
    /// `--nemesis all`: faults this machine cannot inject are skipped, not refused.
    pub skip_unsupported: bool,
    pub persistence: String,
    /// Sentinel deployments: the quorum, timings and `min-replicas-to-write`.
    #[serde(default)]
    pub sentinel_quorum: usize,
    #[serde(default, with = "millis")]
    pub down_after: Duration,
    #[serde(default, with = "millis")]
    pub failover_timeout: Duration,
    #[serde(default)]
    pub min_replicas_to_write: usize,
    /// Cluster deployments: replicas per master and `cluster-node-timeout`.
    #[serde(default)]
    pub cluster_replicas: usize,
    #[serde(default, with = "millis")]
    pub cluster_node_timeout: Duration,
    #[serde(with = "millis")]
    pub time_limit: Duration,
    pub concurrency: usize,
    #[serde(with = "millis")]
    pub ttl: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_millis")]
    pub hold: Option<Duration>,
    pub resources: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_tag: Option<String>,
    /// `--restart-delay`, where it was given.
    #[serde(default, with = "opt_millis")]
    pub restart_delay: Option<Duration>,
    /// `--nemesis-interval`, where it was given.
    #[serde(default, with = "opt_millis")]
    pub nemesis_interval: Option<Duration>,
    /// What paces the faults, where it is the deployment's failure detector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<Pace>,
    #[serde(with = "millis")]
    pub clock_bump: Duration,
    pub clock_drift: f64,
    #[serde(with = "millis")]
    pub client_pause: Duration,
    #[serde(default = "default_start_timeout", with = "millis")]
    pub exec_start_timeout: Duration,
    /// Client groups with links of their own through the link proxy; 0 when no link fault
    /// runs, and clients connect straight to the nodes.
    pub client_groups: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toxiproxy_port: Option<u16>,
    #[serde(with = "millis")]
    pub link_latency: Duration,
    #[serde(default, with = "millis")]
    pub link_jitter: Duration,
    pub seed: u64,
    pub results: PathBuf,
    /// Faults at fixed times (`--script`, `--replay`) instead of the seeded schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<Script>,
}

/// The quiet time between faults, and the length of faults without one of their own, where
/// nothing else paces them.
const DEFAULT_INTERVAL: Duration = Duration::from_millis(500);

/// The default largest clock jump and client pause, where the TTL asks for no more.
const CLOCK_BUMP: Duration = Duration::from_secs(10);
const CLIENT_PAUSE: Duration = Duration::from_secs(3);

/// A lease fault's default length: `default`, or `factor` TTLs where that is longer, since a
/// pause or a clock jump shorter than the lease cannot make a zombie (within the longest
/// duration any option takes).
fn outlasting(default: Duration, ttl: Duration, factor: f64) -> Duration {
    default.max(ttl.mul_f64(factor)).min(limits::LONGEST)
}

/// Faults paced by the deployment's failure detector: what it is, and how long.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pace {
    pub detector_ms: u64,
    pub why: String,
}

impl Pace {
    /// One line for the summary: what paces the faults and how.
    pub fn line(&self) -> String {
        let detector = self.detector_ms as f64 / 1000.0;
        format!(
            "faults drawn around {detector} s, {}: one in five shorter (nothing should \
             happen), the rest {:.1}-{:.1} s, {:.1}-{:.1} s apart (--nemesis-interval sets \
             its own pace)",
            self.why,
            detector * 1.5,
            detector * 3.0,
            detector,
            detector * 2.0
        )
    }
}

/// A client config as clients of this kind of deployment see it, with the Sentinels (on
/// `sentinel`) reached at these addresses, and each node's own address as they name it: the
/// one place that says how each kind looks to a client.
pub fn shaped(
    config: ClientConfig,
    topology: &dyn Topology,
    sentinels: Vec<(String, std::net::SocketAddr)>,
    announced: Vec<(String, std::net::IpAddr)>,
) -> ClientConfig {
    if let Some(service) = Shape::service(topology.system().family()) {
        return config.serving(service);
    }
    match topology.replication() {
        Replication::Standalone => config,
        Replication::Cluster => config.in_cluster(),
        Replication::Consensus => unreachable!("Redis elects no leaders by consensus"),
        Replication::Sentinel => {
            // Every node but the master is its replica.
            let replicas = config.nodes.len().saturating_sub(1);
            let sentinels = Sentinels {
                master: MASTER_NAME.into(),
                addrs: sentinels,
                announced,
            };
            config.watched_by_sentinel(sentinels, replicas)
        }
    }
}

impl TestSpec {
    /// Checks every name and number, so that a bad one stops the run before any container
    /// starts.
    pub fn from_args(args: &RunArgs) -> Result<TestSpec, HarnessError> {
        let bad = HarnessError::BadInput;
        let topology = topology::find(&args.deployment).ok_or_else(|| {
            bad(format!(
                "unknown deployment `{}`; choose one of: {}",
                args.deployment,
                names(topology::TOPOLOGIES.iter().map(|t| t.name()))
            ))
        })?;
        let server = match &args.server {
            None => topology.system(),
            Some(name) => system::find(name).ok_or_else(|| {
                bad(format!(
                    "unknown server `{name}`; choose one of: {}",
                    names(system::SYSTEMS.iter().map(|s| s.name()))
                ))
            })?,
        };
        if server.family() != topology.system().family() {
            let fitting = system::SYSTEMS
                .iter()
                .filter(|s| s.family() == topology.system().family())
                .map(|s| s.name());
            return Err(bad(format!(
                "--server {} is {}, and --deployment {} runs {}; choose one of: {}",
                server.name(),
                server.family(),
                topology.name(),
                topology.system().family(),
                names(fitting)
            )));
        }
        let persistence = Persistence::parse(&args.persistence).ok_or_else(|| {
            bad(format!(
                "unknown persistence `{}`; choose one of: {}",
                args.persistence,
                Persistence::NAMES
            ))
        })?;
        let sentinel = SentinelOptions {
            quorum: args.sentinel_quorum,
            down_after: args.down_after,
            failover_timeout: args.failover_timeout,
            min_replicas_to_write: args.min_replicas_to_write,
        };
        // Each node is a container at an address of its own on the run's /24 network.
        let most = splitbrain_compose::MOST_NODES;
        let cluster_nodes = 3usize.saturating_mul(args.cluster_replicas.saturating_add(1));
        if args.nodes.is_some_and(|n| n > most) || cluster_nodes > most {
            return Err(bad(format!(
                "a deployment has at most {most} nodes (each is a container at an address of \
                 its own on the run's /24 network); lower --nodes or --cluster-replicas"
            )));
        }
        let options = TopologyOptions {
            nodes: args.nodes,
            persistence,
            sentinel: sentinel.clone(),
            cluster: ClusterOptions {
                replicas: args.cluster_replicas,
                node_timeout: args.cluster_node_timeout,
            },
        };
        let nodes = topology
            .nodes(&options)
            .map_err(|e| bad(format!("--deployment {}: {e}", topology.name())))?;
        let replication = topology.replication();
        let is_cluster = replication == Replication::Cluster;
        // Each program's own lock by default: Redlock on Redis, the lease lock on etcd, the
        // session's advisory lock on PostgreSQL, the lock recipe on ZooKeeper.
        let client_arg = args.client.as_deref().unwrap_or(match server.family() {
            "etcd" => "etcd-lease",
            "zookeeper" => "zk-recipe",
            "postgres" => "pg-advisory",
            _ => "redlock",
        });
        let client = find_client(client_arg).ok_or_else(|| {
            bad(format!(
                "unknown client `{}`; choose one of: {}",
                client_arg,
                names(CLIENTS.iter().map(|c| c.name))
            ))
        })?;
        let sequential = match args.acquire.as_str() {
            "parallel" => false,
            "sequential" => true,
            other => {
                return Err(bad(format!(
                    "--acquire {other}: choose parallel or sequential"
                )))
            }
        };
        let client = ChosenClient {
            kind: client,
            command: client_arg.strip_prefix(EXEC_PREFIX).map(str::to_string),
        };
        let client_name = client.to_string();
        // Building a client connects to nothing, so it can say now whether it suits the nodes.
        let placeholder = ClientConfig {
            options: client_options(
                &client,
                !args.no_jitter,
                sequential,
                args.wait_replicas,
                Duration::ZERO,
            ),
            ..ClientConfig::new(
                nodes
                    .iter()
                    .map(|n| (n.name.clone(), ([127, 0, 0, 1], 6379).into()))
                    .collect(),
                args.ttl,
            )
        };
        let sentinels = placeholder.nodes.clone();
        let announced = sentinels.iter().map(|(n, a)| (n.clone(), a.ip())).collect();
        let placeholder = shaped(placeholder, topology, sentinels, announced);
        let Some(workload) = find_workload(&args.workload) else {
            return Err(bad(format!(
                "unknown workload `{}`; choose one of: {}",
                args.workload,
                names(WORKLOADS.iter().map(|w| w.name))
            )));
        };
        // A data workload talks to the deployment itself; it takes no lock client, and one
        // given would be silently ignored.
        if let (Some(_), Some(given)) = (workload.data, &args.client) {
            return Err(bad(format!(
                "--workload {} writes to the deployment itself and takes no lock client, so \
                 --client {given} would do nothing; leave out --client (or use --workload lock \
                 or lock-set to test the lock)",
                workload.name
            )));
        }
        if workload.data.is_none() {
            (client.kind.build)(&placeholder).map_err(|e| {
                bad(format!(
                    "--client {client_name} does not fit --deployment {}: {e}",
                    topology.name()
                ))
            })?;
        }
        (workload.fits)(&placeholder).map_err(|e| {
            bad(format!(
                "--workload {} on --deployment {}: {e}",
                workload.name,
                topology.name()
            ))
        })?;
        if args.fencing && !workload.needs_storage {
            return Err(bad(
                "--fencing is checked by the storage of --workload lock-set; add that".into(),
            ));
        }
        if args.fencing && client.kind.fences == Fences::Never {
            let fencing: Vec<&str> = CLIENTS
                .iter()
                .filter(|c| c.fences == Fences::Always && c.speaks == Some(server.family()))
                .map(|c| c.name)
                .collect();
            return Err(bad(format!(
                "--fencing needs a client that issues fencing tokens, and {client_name} does \
                 not; use --client {} (or an exec client that returns tokens)",
                fencing.join(" or ")
            )));
        }
        let script = match &args.script {
            Some(path) => Some(Script::read(path)?),
            None => None,
        };
        let nemesis = match &script {
            Some(script) => script.fault_kinds()?,
            None => parse_nemesis(&args.nemesis)?,
        };
        let links = nemesis.iter().any(|f| f.needs_links());
        let explicit_links = args.toxiproxy_port.is_some() || !args.link_jitter.is_zero();
        if is_cluster && explicit_links {
            return Err(bad(
                "--link-jitter and --toxiproxy-port work on client links, and Redis Cluster \
                 clients follow MOVED replies to the nodes' own addresses, around the links; \
                 leave them out on --deployment cluster"
                    .into(),
            ));
        }
        let client_groups = if (links && !is_cluster) || explicit_links {
            args.client_groups
        } else {
            0
        };
        let layout = Layout {
            nodes: nodes.iter().map(|n| n.name.clone()).collect(),
            clients: args.concurrency,
            groups: client_groups,
            replication,
            clock_faults: topology.system().clock_faults_reach(),
        };
        let everything = args.nemesis.trim() == "all";
        let mut nemesis = nemesis;
        for fault in nemesis.clone() {
            match fault.fits(&layout) {
                Ok(()) => {}
                // `all` means every fault that fits this deployment.
                Err(_) if everything => nemesis.retain(|f| f.name() != fault.name()),
                Err(e) => return Err(bad(format!("--nemesis {}: {e}", fault.name()))),
            }
        }
        if let Some(script) = &script {
            splitbrain_nemesis::script::check(&script.faults, &layout)
                .map_err(|why| bad(format!("--script {}: {why}", script.from.display())))?;
        }
        if !(args.clock_drift > 0.0 && args.clock_drift.is_finite()) || args.clock_drift == 1.0 {
            return Err(bad(format!(
                "--clock-drift {} must be a rate above 0 other than 1, like 2 (twice as fast)",
                args.clock_drift
            )));
        }
        let positive = |flag: &str, d: Duration| {
            if d.is_zero() {
                Err(bad(format!("{flag} must be more than zero")))
            } else {
                Ok(())
            }
        };
        positive("--ttl", args.ttl)?;
        positive("--time-limit", args.time_limit)?;
        positive("--exec-start-timeout", args.exec_start_timeout)?;
        if let Some(interval) = args
            .nemesis_interval
            .filter(|&i| i < limits::SHORTEST_INTERVAL)
        {
            return Err(bad(format!(
                "--nemesis-interval {} is shorter than {}: starting and healing a fault goes \
                 through Docker and takes tens to hundreds of milliseconds, so faults could \
                 not keep to it",
                humantime::format_duration(interval),
                humantime::format_duration(limits::SHORTEST_INTERVAL)
            )));
        }
        if args.time_limit > limits::LONGEST_RUN {
            return Err(bad(format!(
                "--time-limit {} is longer than {}: a run's history is checked in memory when \
                 it ends, and a day of the default run makes a history of several GB; split \
                 it into shorter runs (a matrix with seeds)",
                humantime::format_duration(args.time_limit),
                humantime::format_duration(limits::LONGEST_RUN)
            )));
        }
        // Each worker holds a connection to each node (and to its Sentinel), twice over
        // through the link proxies.
        let connections = nodes.len() as u64
            * if replication == Replication::Sentinel {
                2
            } else {
                1
            }
            * if client_groups > 0 { 2 } else { 1 };
        let (most, why) = limits::most_workers(connections, client.command.is_some());
        if args.concurrency as u64 > most {
            return Err(bad(format!(
                "--concurrency {} is more than this machine can run: at most {most}, as {why}",
                args.concurrency
            )));
        }
        if args.ttl < Duration::from_millis(50) {
            return Err(bad(format!(
                "--ttl {} is too short to hold a lock over a network; use 50ms or more",
                humantime::format_duration(args.ttl)
            )));
        }
        let name = folder_name(format!(
            "{}{}-{}{}{}-{}",
            topology.name(),
            // The default server goes unsaid, as it did before there was a choice.
            if server.name() == topology.system().name() {
                String::new()
            } else {
                format!("-{}", server.name())
            },
            // A command line makes a poor folder name; its program's file name will do.
            match (workload.data.is_none(), &client.command) {
                (false, _) => String::new(),
                (true, Some(command)) => format!("exec-{}-", program_name(command)),
                (true, None) => format!("{client_name}-"),
            },
            args.workload,
            if args.fencing { "-fencing" } else { "" },
            if nemesis.is_empty() {
                "none".to_string()
            } else {
                let names: Vec<&str> = nemesis.iter().map(|f| f.name()).collect();
                names.join("+")
            }
        ));
        crate::ignored::refuse_idle_options(
            args,
            &crate::ignored::Combination {
                deployment: topology.name(),
                replication,
                family: server.family(),
                client: &client_name,
                workload: workload.name,
                data_workload: workload.data.is_some(),
                faults: nemesis.iter().map(|f| f.name()).collect(),
                scripted: script.is_some(),
                client_groups,
            },
        )
        .map_err(bad)?;
        Ok(TestSpec {
            name,
            deployment: topology,
            server: Some(server),
            nodes: args.nodes,
            client,
            jitter: !args.no_jitter,
            sequential,
            wait_replicas: args.wait_replicas,
            workload,
            fencing: args.fencing,
            skip_unsupported: args.nemesis.trim() == "all",
            nemesis,
            persistence: persistence.name().to_string(),
            sentinel_quorum: sentinel.quorum,
            down_after: sentinel.down_after,
            failover_timeout: sentinel.failover_timeout,
            min_replicas_to_write: sentinel.min_replicas_to_write,
            cluster_replicas: args.cluster_replicas,
            cluster_node_timeout: args.cluster_node_timeout,
            time_limit: args.time_limit,
            concurrency: args.concurrency,
            ttl: args.ttl,
            hold: args.hold,
            resources: args.resources,
            hash_tag: args.hash_tag.clone(),
            restart_delay: args.restart_delay,
            nemesis_interval: args.nemesis_interval,
            pace: match (args.nemesis_interval, topology.failure_detector(&options)) {
                (None, Some(detector)) => Some(Pace {
                    detector_ms: detector.after.as_millis() as u64,
                    why: detector.why,
                }),
                _ => None,
            },
            clock_bump: args
                .clock_bump
                .unwrap_or_else(|| outlasting(CLOCK_BUMP, args.ttl, 2.0)),
            clock_drift: args.clock_drift,
            client_pause: args
                .client_pause
                .unwrap_or_else(|| outlasting(CLIENT_PAUSE, args.ttl, 1.5)),
            exec_start_timeout: args.exec_start_timeout,
            client_groups,
            toxiproxy_port: args.toxiproxy_port,
            link_latency: args.link_latency,
            link_jitter: args.link_jitter,
            seed: args.seed.unwrap_or_else(random_seed),
            results: args.results.clone(),
            script,
        })
    }

    /// The faults' names, comma-separated; `None` for no faults.
    pub fn fault_names(&self) -> Option<String> {
        let names: Vec<&str> = self.nemesis.iter().map(|f| f.name()).collect();
        (!names.is_empty()).then(|| names.join(","))
    }

    /// The server the nodes run.
    pub fn server(&self) -> &'static dyn System {
        self.server.unwrap_or(self.deployment.system())
    }

    /// What the run's history does not say about it, for the checkers.
    pub fn run_facts(&self) -> RunFacts {
        let detector = self.deployment.failure_detector(&self.topology_options());
        RunFacts {
            concurrency: Some(self.concurrency),
            client_groups: Some(self.client_groups),
            detector_ms: detector.map(|d| d.after.as_millis() as u64),
            majority_commits: self.deployment.replication() == Replication::Consensus,
        }
    }

    pub fn topology_options(&self) -> TopologyOptions {
        TopologyOptions {
            nodes: self.nodes,
            persistence: Persistence::parse(&self.persistence).unwrap_or_default(),
            sentinel: SentinelOptions {
                quorum: self.sentinel_quorum,
                down_after: self.down_after,
                failover_timeout: self.failover_timeout,
                min_replicas_to_write: self.min_replicas_to_write,
            },
            cluster: ClusterOptions {
                replicas: self.cluster_replicas,
                node_timeout: self.cluster_node_timeout,
            },
        }
    }

    pub fn faults(&self) -> Vec<&'static dyn Fault> {
        self.nemesis.clone()
    }

    pub fn nemesis_options(&self) -> NemesisOptions {
        NemesisOptions {
            interval: self.nemesis_interval.unwrap_or(DEFAULT_INTERVAL),
            restart_delay: self.restart_delay,
            detector: self
                .pace
                .as_ref()
                .map(|p| Duration::from_millis(p.detector_ms)),
            clock_bump: self.clock_bump,
            clock_drift: self.clock_drift,
            client_pause: self.client_pause,
            link_latency: self.link_latency,
            ttl: self.ttl,
        }
    }

    /// The workload; `storage` is where lock-set's storage listens (unused by the others).
    pub fn workload(
        &self,
        storage: Option<std::net::SocketAddr>,
    ) -> Result<Box<dyn Workload>, HarnessError> {
        if let Some(build) = self.workload.data {
            return Ok(build(DataOptions {
                concurrency: self.concurrency,
                keys: self.resources,
            }));
        }
        Ok(Box::new(LockWorkload {
            client: self.client.kind,
            concurrency: self.concurrency,
            ttl: self.ttl,
            hold: self.hold,
            resources: self.resources,
            hash_tag: self.hash_tag.clone(),
            storage: storage.map(|addr| StorageConfig {
                addr,
                fencing: self.fencing,
            }),
        }))
    }

    /// Whether the workload needs the storage service.
    pub fn needs_storage(&self) -> bool {
        self.workload.needs_storage
    }

    pub fn client_options(&self) -> ClientOptions {
        client_options(
            &self.client,
            self.jitter,
            self.sequential,
            self.wait_replicas,
            self.exec_start_timeout,
        )
    }

    /// The command line that runs this test again, seed included.
    pub fn command_line(&self) -> String {
        if let Some(script) = self.script.as_ref().filter(|script| script.replay) {
            return format!(
                "splitbrain run --replay {}",
                shell_quoted(&script.from.display().to_string())
            );
        }
        let mut line = "splitbrain run".to_string();
        for (flag, value) in self.options() {
            line += &format!(" --{flag}");
            if let Some(value) = value {
                line += &format!(" {}", shell_quoted(&value));
            }
        }
        line
    }

    /// The `splitbrain run` options that make this test again, seed and faults included, as
    /// `(flag, value)`; no value for a switch.
    pub fn options(&self) -> Vec<(&'static str, Option<String>)> {
        let time = |d: Duration| Some(humantime::format_duration(d).to_string());
        let mut options = vec![
            ("deployment", Some(self.deployment.name().to_string())),
            ("client", Some(self.client.to_string())),
            ("workload", Some(self.workload.name.to_string())),
        ];
        options.push(match &self.script {
            Some(script) => ("script", Some(script.from.display().to_string())),
            None if self.skip_unsupported => ("nemesis", Some("all".to_string())),
            None => (
                "nemesis",
                Some(self.fault_names().unwrap_or_else(|| "none".to_string())),
            ),
        });
        options.extend([
            ("time-limit", time(self.time_limit)),
            ("concurrency", Some(self.concurrency.to_string())),
            ("ttl", time(self.ttl)),
            ("seed", Some(self.seed.to_string())),
        ]);
        // Each fault's own option only beside the fault: elsewhere `run` refuses it.
        let faults = |names: &[&str]| self.nemesis.iter().any(|f| names.contains(&f.name()));
        if self.persistence != "none" {
            options.push(("persistence", Some(self.persistence.clone())));
        }
        if faults(&["clock-bump", "clock-strobe", "clock-holder"]) {
            options.push(("clock-bump", time(self.clock_bump)));
        }
        if faults(&["clock-drift"]) {
            options.push(("clock-drift", Some(self.clock_drift.to_string())));
        }
        if faults(&["client-pause"]) {
            options.push(("client-pause", time(self.client_pause)));
        }
        if let Some(nodes) = self.nodes {
            options.push(("nodes", Some(nodes.to_string())));
        }
        if let Some(server) = self
            .server
            .filter(|s| s.name() != self.deployment.system().name())
        {
            options.push(("server", Some(server.name().to_string())));
        }
        if let Some(delay) = self.restart_delay {
            options.push(("restart-delay", time(delay)));
        }
        if let Some(interval) = self.nemesis_interval {
            options.push(("nemesis-interval", time(interval)));
        }
        if self.client.command.is_some() {
            options.push(("exec-start-timeout", time(self.exec_start_timeout)));
        }
        if let Some(hold) = self.hold {
            options.push(("hold", time(hold)));
        }
        if self.client_groups > 0 {
            options.push(("client-groups", Some(self.client_groups.to_string())));
        }
        if faults(&["link-latency"]) {
            options.push(("link-latency", time(self.link_latency)));
        }
        if !self.link_jitter.is_zero() {
            options.push(("link-jitter", time(self.link_jitter)));
        }
        if let Some(port) = self.toxiproxy_port {
            options.push(("toxiproxy-port", Some(port.to_string())));
        }
        if self.resources != 1 {
            options.push(("resources", Some(self.resources.to_string())));
        }
        if let Some(tag) = &self.hash_tag {
            options.push(("hash-tag", Some(tag.clone())));
        }
        if self.deployment.replication() == Replication::Sentinel {
            options.extend([
                ("sentinel-quorum", Some(self.sentinel_quorum.to_string())),
                ("down-after", time(self.down_after)),
                ("failover-timeout", time(self.failover_timeout)),
                (
                    "min-replicas-to-write",
                    Some(self.min_replicas_to_write.to_string()),
                ),
            ]);
        }
        if self.deployment.replication() == Replication::Cluster {
            options.extend([
                ("cluster-replicas", Some(self.cluster_replicas.to_string())),
                ("cluster-node-timeout", time(self.cluster_node_timeout)),
            ]);
        }
        if !self.jitter {
            options.push(("no-jitter", None));
        }
        if self.sequential {
            options.push(("acquire", Some("sequential".to_string())));
        }
        if let Some(replicas) = self.wait_replicas {
            options.push(("wait-replicas", Some(replicas.to_string())));
        }
        if self.fencing {
            options.push(("fencing", None));
        }
        options
    }
}

/// Every deployment, client, workload and fault with its one-line summary, for `run --help`.
pub fn catalog() -> String {
    let section = |title: &str, rows: Vec<(&str, &str)>| {
        let lines: Vec<String> = rows
            .iter()
            .map(|(name, summary)| format!("  {name:<18} {summary}"))
            .collect();
        format!("{title}:\n{}\n", lines.join("\n"))
    };
    [
        section(
            "Deployments",
            topology::TOPOLOGIES
                .iter()
                .map(|t| (t.name(), t.summary()))
                .collect(),
        ),
        section(
            "Servers (--server)",
            system::SYSTEMS
                .iter()
                .map(|s| (s.name(), s.summary()))
                .collect(),
        ),
        section(
            "Clients",
            CLIENTS.iter().map(|c| (c.name, c.summary)).collect(),
        ),
        section(
            "Workloads",
            WORKLOADS.iter().map(|w| (w.name, w.summary)).collect(),
        ),
        section(
            "Faults",
            FAULTS.iter().map(|f| (f.name(), f.summary())).collect(),
        ),
    ]
    .join("\n")
}

fn client_options(
    client: &ChosenClient,
    jitter: bool,
    sequential: bool,
    wait_replicas: Option<usize>,
    start_timeout: Duration,
) -> ClientOptions {
    ClientOptions {
        jitter,
        sequential,
        wait_replicas,
        command: client.command.clone(),
        start_timeout,
    }
}

/// A run's lock client: its kind and, for an `exec:` client, the command it runs. `test.json`
/// stores it as `--client` took it.
#[derive(Clone)]
pub struct ChosenClient {
    pub kind: &'static ClientKind,
    pub command: Option<String>,
}

impl std::fmt::Display for ChosenClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.command {
            Some(command) => write!(f, "{EXEC_PREFIX}{command}"),
            None => f.write_str(self.kind.name),
        }
    }
}

impl std::fmt::Debug for ChosenClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl Serialize for ChosenClient {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ChosenClient {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ChosenClient, D::Error> {
        let arg = String::deserialize(d)?;
        let kind = find_client(&arg)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown client `{arg}`")))?;
        Ok(ChosenClient {
            kind,
            command: arg.strip_prefix(EXEC_PREFIX).map(str::to_string),
        })
    }
}

/// The longest run folder name: folders are named after the options, and every fault with a
/// long exec command would pass what file systems allow (255 bytes).
const LONGEST_NAME: usize = 64;

/// `name`, or where it is too long its start and a hash of the whole: short, readable, and
/// still different for different options (the full options are in test.json).
fn folder_name(name: String) -> String {
    if name.len() <= LONGEST_NAME {
        return name;
    }
    // FNV-1a: a hash that stays the same across Rust versions, as folder names must.
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut cut = LONGEST_NAME - 9;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{:08x}", &name[..cut], hash as u32)
}

/// What test.json files written before `--exec-start-timeout` existed ran with.
/// A seed for a run that was given none: below 2^53, so that it survives every JSON reader
/// (jq and JavaScript read numbers as doubles, which hold integers exactly only up to 2^53)
/// and `--seed $(jq .seed test.json)` reruns the same schedule.
fn random_seed() -> u64 {
    rand::random::<u64>() >> 11
}

fn default_start_timeout() -> Duration {
    Duration::from_secs(30)
}

/// The file name of a command's program: `python3 adapters/redis_py.py` gives `redis_py`.
fn program_name(command: &str) -> String {
    let words: Vec<&str> = command.split_whitespace().collect();
    // An interpreter's script says more than the interpreter.
    let word = words
        .get(1)
        .filter(|w| !w.starts_with('-'))
        .or(words.first());
    let stem = word
        .map(std::path::Path::new)
        .and_then(|p| p.file_stem())
        .and_then(|s| s.to_str())
        .unwrap_or("client");
    stem.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// A word as a POSIX shell reads it back: quoted only where it must be.
fn shell_quoted(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.,:/=+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

fn yes() -> bool {
    true
}

fn parse_nemesis(text: &str) -> Result<Vec<&'static dyn Fault>, HarnessError> {
    match text.trim() {
        "none" => return Ok(Vec::new()),
        "all" => return Ok(all_faults()),
        _ => {}
    }
    let mut faults: Vec<&'static dyn Fault> = Vec::new();
    for name in text.split(',').map(str::trim) {
        let Some(fault) = find_fault(name) else {
            return Err(HarnessError::BadInput(format!(
                "unknown fault `{name}` in --nemesis; choose none, all, or a comma-separated list of: {}",
                names(FAULTS.iter().map(|f| f.name()))
            )));
        };
        if !faults.iter().any(|f| f.name() == name) {
            faults.push(fault);
        }
    }
    Ok(faults)
}

/// A kind users name on the command line (a deployment, a workload, a fault): a spec holds
/// what it is, and `test.json` its name.
trait Named: 'static {
    /// What it is, for an error: `deployment`.
    const WHAT: &'static str;
    fn named(&self) -> &'static str;
    fn by_name(name: &str) -> Option<&'static Self>;
}

impl Named for dyn System {
    const WHAT: &'static str = "server";
    fn named(&self) -> &'static str {
        self.name()
    }
    fn by_name(name: &str) -> Option<&'static Self> {
        system::find(name)
    }
}

impl Named for dyn Topology {
    const WHAT: &'static str = "deployment";
    fn named(&self) -> &'static str {
        self.name()
    }
    fn by_name(name: &str) -> Option<&'static Self> {
        topology::find(name)
    }
}

impl Named for WorkloadKind {
    const WHAT: &'static str = "workload";
    fn named(&self) -> &'static str {
        self.name
    }
    fn by_name(name: &str) -> Option<&'static Self> {
        find_workload(name)
    }
}

impl Named for dyn Fault {
    const WHAT: &'static str = "fault";
    fn named(&self) -> &'static str {
        self.name()
    }
    fn by_name(name: &str) -> Option<&'static Self> {
        find_fault(name)
    }
}

/// A [`Named`] kind in JSON: its name.
mod by_name {
    use serde::{de, Deserialize, Deserializer, Serializer};

    use super::Named;

    pub fn serialize<T: Named + ?Sized, S: Serializer>(
        kind: &&'static T,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_str(kind.named())
    }

    pub fn deserialize<'de, T: Named + ?Sized, D: Deserializer<'de>>(
        d: D,
    ) -> Result<&'static T, D::Error> {
        let name = String::deserialize(d)?;
        T::by_name(&name).ok_or_else(|| de::Error::custom(format!("unknown {} `{name}`", T::WHAT)))
    }
}

/// An optional [`Named`] kind in JSON: its name, or nothing.
mod opt_by_name {
    use serde::{de, Deserialize, Deserializer, Serializer};

    use super::Named;

    pub fn serialize<T: Named + ?Sized, S: Serializer>(
        kind: &Option<&'static T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match kind {
            Some(kind) => s.serialize_some(kind.named()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: Named + ?Sized, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<&'static T>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(name) => T::by_name(&name)
                .map(Some)
                .ok_or_else(|| de::Error::custom(format!("unknown {} `{name}`", T::WHAT))),
            None => Ok(None),
        }
    }
}

/// A list of [`Named`] kinds in JSON: their names.
mod by_names {
    use serde::ser::SerializeSeq;
    use serde::{de, Deserialize, Deserializer, Serializer};

    use super::Named;

    pub fn serialize<T: Named + ?Sized, S: Serializer>(
        kinds: &[&'static T],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(kinds.len()))?;
        for kind in kinds {
            seq.serialize_element(kind.named())?;
        }
        seq.end()
    }

    pub fn deserialize<'de, T: Named + ?Sized, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<&'static T>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|name| {
                T::by_name(name)
                    .ok_or_else(|| de::Error::custom(format!("unknown {} `{name}`", T::WHAT)))
            })
            .collect()
    }
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

/// Durations as whole milliseconds in JSON.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

mod opt_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn spec(extra: &[&str]) -> Result<TestSpec, HarnessError> {
        let argv = ["splitbrain", "run"].iter().chain(extra).copied();
        let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!()
        };
        TestSpec::from_args(&args)
    }

    fn message(extra: &[&str]) -> String {
        spec(extra).unwrap_err().to_string()
    }

    #[test]
    fn the_defaults_make_a_valid_test() {
        let s = spec(&["--seed", "7"]).unwrap();
        assert_eq!(s.name, "redlock-redlock-lock-kill");
        assert_eq!(s.seed, 7);
    }

    #[test]
    fn a_drawn_seed_survives_a_json_reader_that_reads_numbers_as_doubles() {
        for _ in 0..1000 {
            let seed = spec(&[]).unwrap().seed;
            assert!(seed < 1 << 53, "{seed}");
            assert_eq!(seed as f64 as u64, seed);
        }
    }

    #[test]
    fn bad_names_say_what_would_be_right() {
        assert!(message(&["--deployment", "sentinal"]).contains("single, redlock, sentinel"));
        let quorum = message(&["--deployment", "sentinel", "--sentinel-quorum", "4"]);
        assert!(quorum.contains("quorum of 4"), "{quorum}");
        let client = message(&["--client", "zookeeper"]);
        for name in [
            "setnx-expire",
            "del-release",
            "fenced",
            "wait",
            "exec:<command>",
        ] {
            assert!(client.contains(name), "{client}");
        }
        assert!(message(&["--nemesis", "kill,meteor"]).contains("`meteor`"));
        assert!(message(&["--workload", "bank"]).contains("lock-set"));
    }

    #[test]
    fn an_exec_client_keeps_its_command_and_reads_back_from_the_command_line() {
        let s = spec(&[
            "--deployment",
            "single",
            "--client",
            "exec:sh -c 'exit 0'",
            "--workload",
            "lock-set",
        ])
        .unwrap();
        assert_eq!(s.client.to_string(), "exec:sh -c 'exit 0'");
        assert_eq!(
            s.client_options().command.as_deref(),
            Some("sh -c 'exit 0'")
        );
        assert!(s.name.starts_with("single-exec-sh-lock-set"), "{}", s.name);
        let quoted = r#"--client 'exec:sh -c '\''exit 0'\''' "#;
        assert!(s.command_line().contains(quoted), "{}", s.command_line());
        let redlock = spec(&["--no-jitter", "--acquire", "sequential"]).unwrap();
        assert!(!redlock.jitter && redlock.sequential);
        assert!(redlock
            .command_line()
            .ends_with("--no-jitter --acquire sequential"));
        let wait_one = [
            "--deployment",
            "sentinel",
            "--client",
            "wait",
            "--wait-replicas",
            "1",
        ];
        let wait_one = spec(&wait_one).unwrap();
        assert_eq!(wait_one.client_options().wait_replicas, Some(1));
        assert!(wait_one.command_line().ends_with("--wait-replicas 1"));
        let too_many = message(&[
            "--deployment",
            "sentinel",
            "--client",
            "wait",
            "--wait-replicas",
            "3",
        ]);
        assert!(too_many.contains("more replicas than the 2"), "{too_many}");
        let not_wait = message(&[
            "--deployment",
            "sentinel",
            "--client",
            "set-nx-px",
            "--wait-replicas",
            "1",
        ]);
        assert!(
            not_wait.contains("--client is set-nx-px; use --client wait"),
            "{not_wait}"
        );
        let no_lock = message(&[
            "--deployment",
            "sentinel",
            "--workload",
            "set",
            "--wait-replicas",
            "1",
        ]);
        assert!(no_lock.contains("use --workload lock"), "{no_lock}");
    }

    #[test]
    fn limits_are_refused_before_anything_starts_with_the_limit_and_why() {
        let many = message(&["--concurrency", "5000000000"]);
        assert!(
            many.contains("more than this machine can run: at most"),
            "{many}"
        );
        let fast = message(&["--nemesis-interval", "1ns"]);
        assert!(fast.contains("shorter than 100ms"), "{fast}");
        let long = message(&["--time-limit", "2days"]);
        assert!(long.contains("longer than 1day"), "{long}");
        let wrapped = Cli::try_parse_from(["splitbrain", "run", "--clock-bump", "99999999999h"])
            .unwrap_err()
            .to_string();
        assert!(wrapped.contains("longer than a year"), "{wrapped}");
        let start = message(&["--exec-start-timeout", "0s"]);
        assert!(start.contains("more than zero"), "{start}");
        assert!(spec(&["--concurrency", "500", "--nemesis-interval", "100ms"]).is_ok());
    }

    #[test]
    fn lease_faults_outlast_the_lease_unless_told() {
        let faults = ["--nemesis", "client-pause,clock-bump"];
        let at = |extra: &[&str]| {
            let s = spec(&[&faults[..], extra].concat()).unwrap();
            (s.client_pause, s.clock_bump)
        };
        let secs = Duration::from_secs_f64;
        assert_eq!(
            at(&[]),
            (secs(3.0), secs(10.0)),
            "the TTL of 2s asks no more"
        );
        assert_eq!(at(&["--ttl", "5s"]), (secs(7.5), secs(10.0)));
        assert_eq!(at(&["--ttl", "8s"]), (secs(12.0), secs(16.0)));
        let told = ["--ttl", "8s", "--client-pause", "1s", "--clock-bump", "2s"];
        assert_eq!(at(&told), (secs(1.0), secs(2.0)));
        let line = spec(&[&faults[..], &told[..]].concat())
            .unwrap()
            .command_line();
        assert!(line.contains("--client-pause 1s"), "{line}");
        // Beside faults that use neither, neither is written down: `run` would refuse them.
        let line = spec(&["--ttl", "8s"]).unwrap().command_line();
        assert!(
            !line.contains("--client-pause") && !line.contains("--clock-bump"),
            "{line}"
        );
    }

    #[test]
    fn replicated_deployments_pace_faults_by_their_failure_detector_unless_told() {
        let sentinel = spec(&["--deployment", "sentinel", "--client", "set-nx-px"]).unwrap();
        let pace = sentinel
            .pace
            .as_ref()
            .expect("sentinel has a failure detector");
        assert_eq!(pace.detector_ms, 3_000);
        assert!(pace.line().contains("down-after (2s)"), "{}", pace.line());
        assert_eq!(
            sentinel.nemesis_options().detector,
            Some(Duration::from_secs(3))
        );
        let cluster = spec(&[
            "--deployment",
            "cluster",
            "--client",
            "set-nx-px",
            "--cluster-node-timeout",
            "5s",
        ])
        .unwrap();
        assert_eq!(cluster.pace.map(|p| p.detector_ms), Some(6_000));
        let told = spec(&[
            "--deployment",
            "sentinel",
            "--client",
            "set-nx-px",
            "--nemesis-interval",
            "8s",
        ])
        .unwrap();
        assert_eq!(told.pace, None);
        assert!(told.command_line().contains("--nemesis-interval 8s"));
        assert_eq!(
            spec(&[]).unwrap().pace,
            None,
            "redlock has no failure detector"
        );
    }

    #[test]
    fn a_run_folder_name_stays_short_whatever_the_options() {
        let s = spec(&[
            "--deployment",
            "sentinel",
            "--nemesis",
            "all",
            "--client",
            "exec:sh -c 'exit 0' a-very-long-argument-list-that-goes-on-and-on",
        ])
        .unwrap();
        assert!(s.name.len() <= LONGEST_NAME, "{}", s.name);
        assert!(s.name.starts_with("sentinel-exec-sh-lock-"), "{}", s.name);
        let other = spec(&[
            "--deployment",
            "sentinel",
            "--nemesis",
            "all",
            "--client",
            "wait",
        ])
        .unwrap();
        assert_ne!(s.name, other.name);
    }

    #[test]
    fn a_client_must_suit_its_deployment() {
        let cluster = message(&["--deployment", "cluster"]);
        assert!(
            cluster.contains("--client redlock does not fit"),
            "{cluster}"
        );
        assert!(message(&["--deployment", "single", "--nodes", "3"]).contains("exactly 1 node"));
        let s = spec(&[
            "--deployment",
            "single",
            "--client",
            "set-nx-px",
            "--nemesis",
            "none",
        ])
        .unwrap();
        assert_eq!(s.name, "single-set-nx-px-lock-none");
        assert!(s.nemesis.is_empty());
    }

    #[test]
    fn faults_must_fit_the_deployment() {
        let ring_on_one = message(&[
            "--deployment",
            "single",
            "--client",
            "set-nx-px",
            "--nemesis",
            "partition-ring",
        ]);
        assert!(ring_on_one.contains("at least 4 nodes"), "{ring_on_one}");
        assert!(message(&["--clock-drift", "0"]).contains("--clock-drift"));
        assert!(message(&["--clock-drift", "-1.5"]).contains("--clock-drift"));
        assert!(message(&["--persistence", "rdb"]).contains("everysec"));
        let all = spec(&["--nemesis", "all"]).unwrap();
        assert!(all.nemesis.len() >= 6, "{:?}", all.nemesis);
    }

    #[test]
    fn the_catalog_names_everything_registered() {
        let catalog = catalog();
        for name in [
            "redlock",
            "set-nx-px",
            "watchdog",
            "etcd-lease",
            "valkey-8.1",
            "lock",
            "clock-strobe",
            "link-reset",
        ] {
            assert!(catalog.contains(name), "{name} missing from\n{catalog}");
        }
    }

    #[test]
    fn zero_durations_are_refused() {
        assert!(message(&["--ttl", "0s"]).contains("--ttl"));
        assert!(message(&["--ttl", "10ms"]).contains("too short"));
    }

    #[test]
    fn the_command_line_reproduces_the_spec() {
        let s = spec(&[
            "--nemesis",
            "pause,kill,clock-drift",
            "--seed",
            "9",
            "--hold",
            "0s",
            "--persistence",
            "always",
            "--clock-drift",
            "1.5",
        ])
        .unwrap();
        let line = s.command_line();
        let argv: Vec<&str> = line.split_whitespace().collect();
        let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!()
        };
        let again = TestSpec::from_args(&args).unwrap();
        assert_eq!(
            serde_json::to_value(&again).unwrap(),
            serde_json::to_value(&s).unwrap()
        );
    }

    #[test]
    fn test_json_names_each_kind_and_reads_back_as_the_same_spec() {
        let s = spec(&[
            "--deployment",
            "sentinel",
            "--client",
            "set-nx-px",
            "--nemesis",
            "partition,kill",
        ])
        .unwrap();
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["deployment"], "sentinel");
        assert_eq!(json["workload"], "lock");
        assert_eq!(json["nemesis"], serde_json::json!(["partition", "kill"]));
        let again: TestSpec = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(again.deployment.replication(), Replication::Sentinel);
        assert_eq!(serde_json::to_value(&again).unwrap(), json);

        let mut unknown = json;
        unknown["nemesis"] = serde_json::json!(["kill", "meteor"]);
        let e = serde_json::from_value::<TestSpec>(unknown).unwrap_err();
        assert!(e.to_string().contains("unknown fault `meteor`"), "{e}");
    }

    /// The options a user types numbers and names into, for the fuzzing below.
    const FLAGS: &[&str] = &[
        "--deployment",
        "--nodes",
        "--workload",
        "--nemesis",
        "--persistence",
        "--time-limit",
        "--concurrency",
        "--ttl",
        "--hold",
        "--resources",
        "--restart-delay",
        "--nemesis-interval",
        "--clock-bump",
        "--clock-drift",
        "--client-pause",
        "--client-groups",
        "--link-latency",
        "--link-jitter",
        "--exec-start-timeout",
        "--sentinel-quorum",
        "--down-after",
        "--cluster-node-timeout",
        "--cluster-replicas",
        "--seed",
    ];

    proptest::proptest! {
        /// Any value of any option is taken or refused with a message; never a panic, and a
        /// duration taken is within the longest one.
        #[test]
        fn any_option_value_is_taken_or_refused_never_a_panic(
            flag in proptest::sample::select(FLAGS),
            value in proptest::prop_oneof![
                "\\PC{0,24}",
                "-?[0-9]{1,22}(\\.[0-9]{1,3})?(ns|us|ms|s|m|h|d|days|y|years|)",
                "[a-z-]{1,12}(,[a-z-]{1,12}){0,3}",
            ],
        ) {
            let argv = ["splitbrain", "run", flag, value.as_str()];
            if let Ok(Cli { command: Command::Run(args) }) = Cli::try_parse_from(argv) {
                match TestSpec::from_args(&args) {
                    Ok(spec) => {
                        for d in [spec.time_limit, spec.ttl, spec.clock_bump] {
                            proptest::prop_assert!(d <= crate::limits::LONGEST);
                        }
                    }
                    Err(e) => proptest::prop_assert!(!e.to_string().is_empty()),
                }
            }
        }
    }
}
