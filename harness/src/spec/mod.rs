//! A test, as data: every parameter of a run, checked before anything starts. It is the
//! run config in parts (the deployment, the client, the workload, the nemesis, the limits),
//! each a struct whose fields are `splitbrain run` options and `test.json` keys at once:
//! clap reads a command line into it, serde reads `test.json` into it, and it prints the
//! command line that makes it again.

mod catalog;
mod client;
mod command_line;
mod idle;
mod limits;
mod names;
mod nemesis;
pub mod parse;
mod part;
mod settings;
#[cfg(test)]
mod tests;
mod topology;
mod workload;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use splitbrain_checker::stream::RunFacts;
use splitbrain_checker::words::one_of;
use splitbrain_compose::topology::{NodeSpec, TopologyOptions};
use splitbrain_compose::{System, Topology};
use splitbrain_nemesis::{Elsewhere, Fault, Layout, NemesisOptions};
use splitbrain_systems::{speaks_to, Reach, Service};
use splitbrain_workloads::storage::StorageConfig;
use splitbrain_workloads::workload::lock::LockWorkload;
use splitbrain_workloads::workload::{DataOptions, Workload, WorkloadKind};
use splitbrain_workloads::{ClientConfig, ClientOptions, Fences};

pub use catalog::catalog;
pub use client::ClientPart;
pub use limits::{Causes, LimitsPart};
pub use names::{ChosenClient, Faults};
pub use nemesis::NemesisPart;
pub use part::Printed;
pub use topology::TopologyPart;
pub use workload::WorkloadPart;

use crate::error::HarnessError;
use crate::script::Script;

/// Everything a run needs, as `splitbrain run` takes it and `test.json` stores it.
#[derive(Debug, Clone, clap::Args, Serialize, Deserialize)]
pub struct TestSpec {
    /// The run folder's name, made from the options.
    #[arg(skip)]
    pub name: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub topology: TopologyPart,
    #[command(flatten)]
    #[serde(flatten)]
    pub client: ClientPart,
    #[command(flatten)]
    #[serde(flatten)]
    pub workload: WorkloadPart,
    #[command(flatten)]
    #[serde(flatten)]
    pub nemesis: NemesisPart,
    #[command(flatten)]
    #[serde(flatten)]
    pub limits: LimitsPart,
    /// What paces the faults, where it is the deployment's failure detector.
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<Pace>,
    /// Where results go.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
}

/// The quiet time between faults, and the length of faults without one of their own, where
/// nothing else paces them.
const DEFAULT_INTERVAL: Duration = Duration::from_millis(500);

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
        companions: nodes.clone(),
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
    /// Checks every part, then the parts against each other, so that a bad combination
    /// stops the run before any container starts; fills in what the deployment decides
    /// (its default client, what paces its faults), the faults of a script, and a seed.
    pub fn checked(mut self) -> Result<TestSpec, HarnessError> {
        let bad = HarnessError::BadInput;
        let given = self.printed();
        let nodes = self.topology.check().map_err(bad)?;
        self.workload.check().map_err(bad)?;
        self.nemesis.check().map_err(bad)?;
        self.limits.check().map_err(bad)?;
        if self.client.exec_start_timeout.is_zero() {
            return Err(bad("--exec-start-timeout must be more than zero".into()));
        }
        let service = self.topology.service();
        let topology = self.topology.deployment;
        let workload = self.workload.workload;
        // Each program's own lock by default: Redlock on Redis, the lease lock on etcd, the
        // session's advisory lock on PostgreSQL, the lock recipe on ZooKeeper.
        let client = match &self.client.client {
            Some(client) => client.clone(),
            None => parse::client(service.default_client())
                .expect("a service's default client is registered"),
        };
        self.client.client = Some(client.clone());
        let client_name = client.to_string();
        // Building a client connects to nothing, so it can say now whether it suits the nodes.
        let placeholder = ClientConfig {
            options: self.client.options(),
            ..placeholder_config((service, topology), &nodes, self.workload.ttl)
        };
        // A library's adapter runs from the environment installed on first use, so only its
        // manifest can say now whether it suits the deployment.
        if let Some(library) = &client.library {
            let written_for = &library.manifest.deployments;
            if !written_for.iter().any(|d| d == topology.name()) {
                return Err(bad(format!(
                    "--client {client} is written for --deployment {} (its manifest, {}), not \
                     {}; use --deployment {}",
                    written_for.join(" or "),
                    library.dir.join("library.toml").display(),
                    topology.name(),
                    one_of(&written_for.iter().map(String::as_str).collect::<Vec<_>>())
                )));
            }
        } else if workload.data.is_none() {
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
        self.check_fencing(service, &client)?;
        if let Some(script) = self.nemesis.script.take() {
            self.run_script(script)?;
        }
        let replication = topology.replication();
        if replication.clients_bypass_links && self.nemesis.shapes_links() {
            return Err(bad(format!(
                "--link-jitter and --toxiproxy-port work on client links, and the clients of \
                 --deployment {} follow redirects to the nodes' own addresses, around the \
                 links; leave them out here",
                topology.name()
            )));
        }
        let client_groups = self.client_groups();
        let layout = Layout {
            nodes: nodes.iter().map(|n| n.name.clone()).collect(),
            clients: self.limits.concurrency,
            groups: client_groups,
            replication,
            clock_faults: topology.system().clock_faults_reach(),
            deployments: splitbrain_systems::topologies()
                .map(|topology| Elsewhere {
                    name: topology.name(),
                    replication: topology.replication(),
                    clock_faults: topology.system().clock_faults_reach(),
                })
                .collect(),
        };
        let every = self.nemesis.nemesis.every;
        for fault in self.faults() {
            match fault.fits(&layout) {
                Ok(()) => {}
                // `all` means every fault that fits this deployment.
                Err(_) if every => self
                    .nemesis
                    .nemesis
                    .chosen
                    .retain(|f| f.name() != fault.name()),
                Err(e) => return Err(bad(format!("--nemesis {}: {e}", fault.name()))),
            }
        }
        if let Some(script) = &self.nemesis.script {
            splitbrain_nemesis::script::check(&script.faults, &layout)
                .map_err(|why| bad(format!("--script {}: {why}", script.from.display())))?;
        }
        // Each worker holds a connection to each node (and to its companion, a Sentinel),
        // twice over through the link proxies.
        let companions = nodes.iter().filter(|n| n.companion.is_some()).count();
        let connections = (nodes.len() + companions) as u64 * if client_groups > 0 { 2 } else { 1 };
        let (most, why) = crate::limits::most_workers(connections, client.command.is_some());
        if self.limits.concurrency as u64 > most {
            return Err(bad(format!(
                "--concurrency {} is more than this machine can run: at most {most}, as {why}",
                self.limits.concurrency
            )));
        }
        idle::refuse_idle_options(&given, &self.combination()).map_err(bad)?;
        self.pace = match (
            self.nemesis.nemesis_interval,
            topology.failure_detector(&self.topology.options()),
        ) {
            (None, Some(detector)) => Some(Pace {
                detector_ms: detector.after.as_millis() as u64,
                why: detector.why,
            }),
            _ => None,
        };
        self.nemesis.seed.get_or_insert_with(random_seed);
        self.name = self.folder_name();
        Ok(self)
    }

    fn check_fencing(
        &self,
        service: &dyn Service,
        client: &ChosenClient,
    ) -> Result<(), HarnessError> {
        let bad = HarnessError::BadInput;
        if !self.workload.fencing {
            return Ok(());
        }
        if !self.workload.workload.needs_storage {
            return Err(bad(
                "--fencing is checked by the storage of --workload lock-set; add that".into(),
            ));
        }
        if client.kind.fences == Fences::Never {
            let fencing: Vec<&str> = service
                .clients()
                .iter()
                .filter(|c| c.fences == Fences::Always)
                .map(|c| c.name)
                .collect();
            return Err(bad(format!(
                "--fencing needs a client that issues fencing tokens, and {client} does not; \
                 use --client {} (or an exec client that returns tokens)",
                fencing.join(" or ")
            )));
        }
        Ok(())
    }

    /// Runs `script`'s faults at their times instead of a seeded schedule.
    pub fn run_script(&mut self, script: Script) -> Result<(), HarnessError> {
        self.nemesis.nemesis = Faults {
            chosen: script.fault_kinds()?,
            every: false,
        };
        self.nemesis.script = Some(script);
        Ok(())
    }

    /// The run folder's name: the deployment, the client, the workload and the faults.
    fn folder_name(&self) -> String {
        let topology = self.topology.deployment;
        let server = self.server();
        let workload = self.workload.workload;
        let client = self.client();
        folder_name(format!(
            "{}{}-{}{}{}-{}",
            topology.name(),
            // The default server goes unsaid, as it did before there was a choice.
            if server.name() == topology.system().name() {
                String::new()
            } else {
                format!("-{}", server.name())
            },
            // A command line makes a poor folder name; its program's file name will do.
            match (workload.data.is_none(), &client.library, &client.command) {
                (false, _, _) => String::new(),
                (true, Some(library), _) => format!("lib-{}-", library.folder_name()),
                (true, None, Some(command)) => format!("exec-{}-", program_name(command)),
                (true, None, None) => format!("{client}-"),
            },
            workload.name,
            if self.workload.fencing {
                "-fencing"
            } else {
                ""
            },
            self.fault_names()
                .map_or_else(|| "none".to_string(), |names| names.replace(',', "+"))
        ))
    }

    /// Every option with a value, part by part, as the command line writes it.
    pub fn printed(&self) -> Vec<Printed> {
        [
            part::printed(&self.topology),
            part::printed(&self.client),
            part::printed(&self.workload),
            part::printed(&self.nemesis),
            part::printed(&self.limits),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The faults' names, comma-separated; `None` for no faults.
    pub fn fault_names(&self) -> Option<String> {
        let names: Vec<&str> = self.faults().iter().map(|f| f.name()).collect();
        (!names.is_empty()).then(|| names.join(","))
    }

    /// The system under test: the deployment's.
    pub fn service(&self) -> &'static dyn Service {
        self.topology.service()
    }

    /// The deployment.
    pub fn deployment(&self) -> &'static dyn Topology {
        self.topology.deployment
    }

    /// The server the nodes run.
    pub fn server(&self) -> &'static dyn System {
        self.topology.server()
    }

    /// The lock client (for a data workload, the deployment's default, which it does not use).
    pub fn client(&self) -> &ChosenClient {
        self.client.chosen()
    }

    /// What the workload is.
    pub fn workload_kind(&self) -> &'static WorkloadKind {
        self.workload.workload
    }

    /// The schedule's seed, drawn when the spec was checked if none was given.
    pub fn seed(&self) -> u64 {
        self.nemesis
            .seed
            .expect("a checked spec has a seed: one is drawn where none was given")
    }

    pub fn time_limit(&self) -> Duration {
        self.limits.time_limit
    }

    pub fn concurrency(&self) -> usize {
        self.limits.concurrency
    }

    /// Client groups with links of their own through the link proxy; 0 when no link fault
    /// or link option runs, and clients connect straight to the nodes. Clients that follow
    /// redirects around the links (a Redis Cluster's) have none: their link faults cut the
    /// nodes' own.
    pub fn client_groups(&self) -> usize {
        let bypassed = self.topology.deployment.replication().clients_bypass_links;
        let faults_need_links = self.faults().iter().any(|f| f.needs_links()) && !bypassed;
        if faults_need_links || self.nemesis.shapes_links() {
            self.nemesis.client_groups
        } else {
            0
        }
    }

    /// What the run's history does not say about it, for the checkers.
    pub fn run_facts(&self) -> RunFacts {
        let detector = self
            .topology
            .deployment
            .failure_detector(&self.topology_options());
        RunFacts {
            concurrency: Some(self.limits.concurrency),
            client_groups: Some(self.client_groups()),
            detector_ms: detector.map(|d| d.after.as_millis() as u64),
            majority_commits: self.topology.deployment.replication().majority_commits,
        }
    }

    pub fn topology_options(&self) -> TopologyOptions {
        self.topology.options()
    }

    pub fn faults(&self) -> Vec<&'static dyn Fault> {
        self.nemesis.nemesis.chosen.clone()
    }

    pub fn nemesis_options(&self) -> NemesisOptions {
        let ttl = self.workload.ttl;
        NemesisOptions {
            interval: self.nemesis.nemesis_interval.unwrap_or(DEFAULT_INTERVAL),
            restart_delay: self.nemesis.restart_delay,
            detector: self
                .pace
                .as_ref()
                .map(|p| Duration::from_millis(p.detector_ms)),
            clock_bump: self.nemesis.clock_bump(ttl),
            clock_drift: self.nemesis.clock_drift,
            client_pause: self.nemesis.client_pause(ttl),
            link_latency: self.nemesis.link_latency,
            ttl,
        }
    }

    /// The workload; `storage` is where lock-set's storage listens (unused by the others).
    pub fn workload(
        &self,
        storage: Option<std::net::SocketAddr>,
    ) -> Result<Box<dyn Workload>, HarnessError> {
        let part = &self.workload;
        if let Some(build) = part.workload.data {
            return Ok(build(DataOptions {
                concurrency: self.limits.concurrency,
                keys: part.resources,
            }));
        }
        Ok(Box::new(LockWorkload {
            client: self.client().kind,
            concurrency: self.limits.concurrency,
            ttl: part.ttl,
            hold: part.hold,
            resources: part.resources,
            hash_tag: part.hash_tag.clone(),
            storage: storage.map(|addr| StorageConfig {
                addr,
                fencing: part.fencing,
            }),
            lease_check: !part.no_lease_check,
        }))
    }

    /// Whether the workload needs the storage service.
    pub fn needs_storage(&self) -> bool {
        self.workload.workload.needs_storage
    }

    pub fn client_options(&self) -> ClientOptions {
        self.client.options()
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

/// A seed for a run that was given none: below 2^53, so that it survives every JSON reader
/// (jq and JavaScript read numbers as doubles, which hold integers exactly only up to 2^53)
/// and `--seed $(jq .seed test.json)` reruns the same schedule.
fn random_seed() -> u64 {
    rand::random::<u64>() >> 11
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
