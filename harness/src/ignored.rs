//! Options that would do nothing in the combination given: each is refused with a sentence
//! before anything starts, never silently taken. An option counts as given when it differs
//! from its default (one passed at its default changes nothing either way).

use std::time::Duration;

use splitbrain_compose::topology::{Persistence, Replication};

use crate::cli::RunArgs;

/// What an option's effect depends on, as `run` resolved it.
pub struct Combination<'a> {
    pub deployment: &'a str,
    pub replication: Replication,
    /// The program the deployment runs: `redis`, `etcd`, `zookeeper`, `postgres`.
    pub family: &'a str,
    /// The lock client's registry name (`exec:<command>` for any exec client).
    pub client: &'a str,
    pub workload: &'a str,
    /// `set` or `register`: the workload talks to the deployment itself, with no lock client.
    pub data_workload: bool,
    /// The faults the run will inject (the script's, with `--script`).
    pub faults: Vec<&'a str>,
    pub scripted: bool,
    /// Client groups behind link proxies; 0 where no fault or option uses the links.
    pub client_groups: usize,
}

/// An option that does nothing in some combinations: its flag, whether it was given, and,
/// where it would do nothing, why and what to do instead.
struct Rule {
    flag: &'static str,
    given: bool,
    idle: Option<String>,
}

/// The first option given that would do nothing, as a sentence; `Ok` where every given option
/// takes effect.
pub fn refuse_idle_options(args: &RunArgs, run: &Combination) -> Result<(), String> {
    let faults = |names: &[&str]| run.faults.iter().any(|f| names.contains(f));
    let without_fault = |names: &[&str]| {
        (!faults(names)).then(|| {
            let which = match names {
                [only] => only.to_string(),
                [rest @ .., last] => format!("{}, or {last}", rest.join(", ")),
                [] => String::new(),
            };
            format!(
                "sets how long the {which} fault lasts, and --nemesis has none; add it to \
                 --nemesis (or leave the option out)"
            )
        })
    };
    let only_on = |wanted: Replication, what: &str, use_instead: &str| {
        (run.replication != wanted).then(|| {
            format!(
                "configures {what}, and --deployment {} has none; use --deployment \
                 {use_instead} (or leave the option out)",
                run.deployment
            )
        })
    };
    let no_lock_client = || {
        run.data_workload.then(|| {
            format!(
                "applies to the lock clients, and --workload {} writes to the deployment with \
                 no lock; use --workload lock or lock-set (or leave the option out)",
                run.workload
            )
        })
    };
    let only_client = |client: &str, name: &str| {
        no_lock_client().or_else(|| {
            // `exec:` stands for every exec client; other names are whole.
            let same =
                run.client == client || (client.ends_with(':') && run.client.starts_with(client));
            (!same).then(|| {
                format!(
                    "applies to {name} only, and --client is {}; use --client {client} (or \
                     leave the option out)",
                    run.client
                )
            })
        })
    };
    let rules = [
        Rule {
            flag: "sentinel-quorum",
            given: args.sentinel_quorum != 2,
            idle: only_on(Replication::Sentinel, "Sentinel", "sentinel"),
        },
        Rule {
            flag: "down-after",
            given: args.down_after != Duration::from_secs(2),
            idle: only_on(Replication::Sentinel, "Sentinel", "sentinel"),
        },
        Rule {
            flag: "failover-timeout",
            given: args.failover_timeout != Duration::from_secs(6),
            idle: only_on(Replication::Sentinel, "Sentinel", "sentinel"),
        },
        Rule {
            flag: "min-replicas-to-write",
            given: args.min_replicas_to_write != 0,
            idle: only_on(Replication::Sentinel, "Sentinel's master", "sentinel"),
        },
        Rule {
            flag: "cluster-replicas",
            given: args.cluster_replicas != 1,
            idle: only_on(Replication::Cluster, "Redis Cluster", "cluster"),
        },
        Rule {
            flag: "cluster-node-timeout",
            given: args.cluster_node_timeout != Duration::from_secs(2),
            idle: only_on(Replication::Cluster, "Redis Cluster", "cluster"),
        },
        Rule {
            flag: "persistence",
            given: args.persistence != Persistence::None,
            idle: (run.family != "redis").then(|| {
                format!(
                    "sets Redis's AOF and snapshots, and --deployment {} runs {}, which keeps \
                     its own log on disk; leave the option out",
                    run.deployment, run.family
                )
            }),
        },
        Rule {
            flag: "no-jitter",
            given: args.no_jitter,
            idle: only_client("redlock", "Redlock's retries"),
        },
        Rule {
            flag: "acquire",
            given: args.acquire != "parallel",
            idle: only_client("redlock", "Redlock's votes"),
        },
        Rule {
            flag: "wait-replicas",
            given: args.wait_replicas.is_some(),
            idle: only_client("wait", "the wait client's WAIT"),
        },
        Rule {
            flag: "exec-start-timeout",
            given: args.exec_start_timeout != Duration::from_secs(60),
            idle: only_client("exec:", "the start of an exec:<command> client"),
        },
        Rule {
            flag: "hold",
            given: args.hold.is_some(),
            idle: no_lock_client(),
        },
        Rule {
            flag: "hash-tag",
            given: args.hash_tag.is_some(),
            idle: no_lock_client().or_else(|| {
                (run.replication != Replication::Cluster).then(|| {
                    format!(
                        "keeps the lock keys in one Redis Cluster slot, and --deployment {} is \
                         no cluster; use --deployment cluster (or leave the option out)",
                        run.deployment
                    )
                })
            }),
        },
        Rule {
            flag: "resources",
            given: args.resources != 1,
            idle: (run.workload == "set").then(|| {
                "is how many locks or registers to use, and --workload set adds to one set; \
                 leave the option out"
                    .to_string()
            }),
        },
        Rule {
            flag: "client-pause",
            given: args.client_pause.is_some(),
            idle: without_fault(&["client-pause"]),
        },
        Rule {
            flag: "clock-bump",
            given: args.clock_bump.is_some(),
            idle: without_fault(&["clock-bump", "clock-strobe", "clock-holder"]),
        },
        Rule {
            flag: "clock-drift",
            given: args.clock_drift != 2.0,
            idle: without_fault(&["clock-drift"]),
        },
        Rule {
            flag: "link-latency",
            given: args.link_latency != Duration::from_secs(1),
            idle: without_fault(&["link-latency"]),
        },
        Rule {
            flag: "restart-delay",
            given: args.restart_delay.is_some() && !run.scripted,
            idle: (!faults(&["kill", "kill-holder", "kill-primary"])).then(|| {
                "is how long a killed node stays down, and --nemesis kills none; add kill, \
                 kill-holder or kill-primary (or leave the option out)"
                    .to_string()
            }),
        },
        Rule {
            flag: "nemesis-interval",
            given: args.nemesis_interval.is_some() && !run.scripted,
            idle: run.faults.is_empty().then(|| {
                "paces the faults, and --nemesis is none; add a fault (or leave the option out)"
                    .to_string()
            }),
        },
        Rule {
            flag: "client-groups",
            given: args.client_groups != 2,
            idle: (run.client_groups == 0).then(|| {
                "splits the clients behind link proxies, which only link faults and \
                 --link-jitter use; add a link- fault (or leave the option out)"
                    .to_string()
            }),
        },
    ];
    match rules.into_iter().find(|r| r.given && r.idle.is_some()) {
        Some(rule) => Err(format!(
            "--{} would do nothing here: it {}",
            rule.flag,
            rule.idle.unwrap_or_default()
        )),
        None => Ok(()),
    }
}
