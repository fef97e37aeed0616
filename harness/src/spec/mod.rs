//! A test, as data: every parameter of a run, checked before anything starts.

mod catalog;
mod command_line;
mod names;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use splitbrain_checker::stream::RunFacts;
use splitbrain_compose::topology::{
    ClusterOptions, NodeSpec, Persistence, Replication, SentinelOptions, Topology, TopologyOptions,
};
use splitbrain_compose::System;
use splitbrain_nemesis::{all_faults, find_fault, Fault, Layout, NemesisOptions, FAULTS};
use splitbrain_systems::{
    find_client, find_server, find_topology, one_of, speaks_to, Reach, Service,
};
use splitbrain_workloads::storage::StorageConfig;
use splitbrain_workloads::workload::lock::LockWorkload;
use splitbrain_workloads::workload::{
    find_workload, DataOptions, Workload, WorkloadKind, WORKLOADS,
};
use splitbrain_workloads::{ClientConfig, ClientOptions, Fences, EXEC_PREFIX};

pub use catalog::catalog;
pub use names::ChosenClient;

use crate::cli::RunArgs;
use crate::error::HarnessError;
use crate::limits;
use crate::script::Script;

/// Everything a run needs, as stored in `test.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestSpec {
    pub name: String,
    #[serde(with = "names::by_name")]
    pub deployment: &'static dyn Topology,
    /// The server version the nodes run (`--server`); runs stored before there was a choice
    /// ran their deployment's default.
    #[serde(
        default,
        with = "names::opt_by_name",
        skip_serializing_if = "Option::is_none"
    )]
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
    #[serde(with = "names::by_name")]
    pub workload: &'static WorkloadKind,
    /// lock-set: the storage checks fencing tokens.
    #[serde(default)]
    pub fencing: bool,
    /// The faults; none for no faults.
    #[serde(with = "names::by_names")]
    pub nemesis: Vec<&'static dyn Fault>,
    /// `--nemesis all`: faults this machine cannot inject are skipped, not refused.
    pub skip_unsupported: bool,
    #[serde(with = "names::persistence")]
    pub persistence: Persistence,
    /// Sentinel deployments: the quorum, timings and `min-replicas-to-write`.
    #[serde(default)]
    pub sentinel_quorum: usize,
    #[serde(default, with = "names::millis")]
    pub down_after: Duration,
    #[serde(default, with = "names::millis")]
    pub failover_timeout: Duration,
    #[serde(default)]
    pub min_replicas_to_write: usize,
    /// Cluster deployments: replicas per master and `cluster-node-timeout`.
    #[serde(default)]
    pub cluster_replicas: usize,
    #[serde(default, with = "names::millis")]
    pub cluster_node_timeout: Duration,
    #[serde(with = "names::millis")]
    pub time_limit: Duration,
    pub concurrency: usize,
    #[serde(with = "names::millis")]
    pub ttl: Duration,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "names::opt_millis"
    )]
    pub hold: Option<Duration>,
    pub resources: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_tag: Option<String>,
    /// `--restart-delay`, where it was given.
    #[serde(default, with = "names::opt_millis")]
    pub restart_delay: Option<Duration>,
    /// `--nemesis-interval`, where it was given.
    #[serde(default, with = "names::opt_millis")]
    pub nemesis_interval: Option<Duration>,
    /// What paces the faults, where it is the deployment's failure detector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<Pace>,
    #[serde(with = "names::millis")]
    pub clock_bump: Duration,
    pub clock_drift: f64,
    #[serde(with = "names::millis")]
    pub client_pause: Duration,
    #[serde(default = "default_start_timeout", with = "names::millis")]
    pub exec_start_timeout: Duration,
    /// Client groups with links of their own through the link proxy; 0 when no link fault
    /// runs, and clients connect straight to the nodes.
    pub client_groups: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toxiproxy_port: Option<u16>,
    #[serde(with = "names::millis")]
    pub link_latency: Duration,
    #[serde(default, with = "names::millis")]
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

/// A client config for these nodes of `topology`, every address a placeholder: building a
/// client or a workload's data connects to nothing, so it says whether the deployment suits
/// it before anything starts.
fn placeholder_config(
    (service, topology): (&dyn Service, &'static dyn Topology),
    nodes: &[NodeSpec],
    ttl: Duration,
) -> ClientConfig {
    let nodes: Vec<(String, std::net::SocketAddr)> = nodes
        .iter()
        .map(|n| (n.name.clone(), ([127, 0, 0, 1], 6379).into()))
        .collect();
    let reach = Reach {
        sentinels: nodes.clone(),
        announced: nodes.iter().map(|(n, a)| (n.clone(), a.ip())).collect(),
    };
    let connection = service.connection(topology, reach);
    ClientConfig::new(nodes, connection, ttl)
}

/// Every deployment, as its defaults lay it out, that `workload` can run on.
fn deployments_for(workload: &WorkloadKind) -> Vec<&'static str> {
    let fits = |service: &dyn Service, topology: &'static dyn Topology| {
        topology
            .nodes(&TopologyOptions::default())
            .is_ok_and(|nodes| {
                let config =
                    placeholder_config((service, topology), &nodes, Duration::from_secs(2));
                (workload.fits)(&config).is_ok()
            })
    };
    splitbrain_systems::SERVICES
        .iter()
        .flat_map(|&service| service.topologies().iter().map(move |&t| (service, t)))
        .filter(|&(service, topology)| fits(service, topology))
        .map(|(_, topology)| topology.name())
        .collect()
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

impl TestSpec {
    /// Checks every name and number, so that a bad one stops the run before any container
    /// starts.
    pub fn from_args(args: &RunArgs) -> Result<TestSpec, HarnessError> {
        let bad = HarnessError::BadInput;
        let (service, topology) = find_topology(&args.deployment).ok_or_else(|| {
            bad(format!(
                "unknown deployment `{}`; choose one of: {}",
                args.deployment,
                names(splitbrain_systems::topologies().map(|t| t.name()))
            ))
        })?;
        let server = match &args.server {
            None => topology.system(),
            Some(name) => {
                let (theirs, server) = find_server(name).ok_or_else(|| {
                    bad(format!(
                        "unknown server `{name}`; choose one of: {}",
                        names(splitbrain_systems::servers().map(|s| s.name()))
                    ))
                })?;
                if theirs.name() != service.name() {
                    return Err(bad(format!(
                        "--server {} is {}, and --deployment {} runs {}; choose one of: {}",
                        server.name(),
                        theirs.name(),
                        topology.name(),
                        service.name(),
                        names(service.servers().iter().map(|s| s.name()))
                    )));
                }
                server
            }
        };
        let persistence = args.persistence;
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
        let client_arg = args.client.as_deref().unwrap_or(service.default_client());
        let client = find_client(client_arg).ok_or_else(|| {
            bad(format!(
                "unknown client `{}`; choose one of: {}",
                client_arg,
                names(splitbrain_systems::clients().map(|c| c.name))
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
            ..placeholder_config((service, topology), &nodes, args.ttl)
        };
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
            let fits = speaks_to(client.kind, service)
                .and_then(|()| (client.kind.build)(&placeholder).map(drop));
            fits.map_err(|e| {
                bad(format!(
                    "--client {client_name} does not fit --deployment {}: {e}",
                    topology.name()
                ))
            })?;
        }
        (workload.fits)(&placeholder).map_err(|e| {
            // A reason that names no deployment to use instead gets the ones that would do.
            let advice = if e.contains("--deployment") {
                String::new()
            } else {
                format!("; use --deployment {}", one_of(&deployments_for(workload)))
            };
            bad(format!(
                "--workload {} on --deployment {}: {e}{advice}",
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
            let fencing: Vec<&str> = service
                .clients()
                .iter()
                .filter(|c| c.fences == Fences::Always)
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
                family: service.name(),
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
            persistence,
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

    /// The system under test: the deployment's.
    pub fn service(&self) -> &'static dyn Service {
        let (service, _) = find_topology(self.deployment.name())
            .expect("a spec's deployment is a registered one: it was found by its name");
        service
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
            persistence: self.persistence,
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

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}
