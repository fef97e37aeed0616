//! Options that would do nothing in the combination given: each is refused with a sentence
//! before anything starts, never silently taken, and left out of the command line that makes
//! a run again. An option counts as given when it differs from its default (one passed at its
//! default changes nothing either way).

use splitbrain_checker::words::one_of;

use super::part::Printed;

/// What an option's effect depends on, as `run` resolved it.
pub struct Combination<'a> {
    pub deployment: &'a str,
    /// The lock client's registry name (`exec:<command>` for any exec client).
    pub client: String,
    /// Whether the harness keeps the client's holder to the lease it confirmed.
    pub checks_lease: bool,
    pub workload: &'a str,
    /// `set` or `register`: the workload talks to the deployment itself, with no lock client.
    pub data_workload: bool,
    /// The faults the run will inject (the script's, with `--script`).
    pub faults: Vec<&'a str>,
    pub scripted: bool,
    /// Client groups behind link proxies; 0 where no fault or option uses the links.
    pub client_groups: usize,
}

/// The first option given that would do nothing, as a sentence; `Ok` where every given option
/// takes effect.
pub fn refuse_idle_options(options: &[Printed], run: &Combination) -> Result<(), String> {
    for option in options.iter().filter(|option| option.given) {
        if let Some(why) = idle(option.id, run) {
            return Err(format!("--{} would do nothing here: it {why}", option.flag));
        }
    }
    Ok(())
}

/// Why the option `id` (its field's name) would do nothing in `run`; `None` where it acts.
pub fn idle(id: &str, run: &Combination) -> Option<String> {
    let faults = |names: &[&str]| run.faults.iter().any(|f| names.contains(f));
    let without_fault = |names: &[&str]| {
        (!faults(names)).then(|| {
            format!(
                "sets how long the {} fault lasts, and --nemesis has none; add it to \
                 --nemesis (or leave the option out)",
                one_of(names)
            )
        })
    };
    // An option that only some deployments take (`Topology::takes`).
    let taken_elsewhere = || {
        let takers: Vec<&str> = splitbrain_systems::topologies()
            .filter(|topology| topology.takes().contains(&id))
            .map(|topology| topology.name())
            .collect();
        (!takers.is_empty() && !takers.contains(&run.deployment)).then(|| {
            let takers = one_of(&takers);
            format!(
                "is taken by --deployment {takers} only, and --deployment {} is another; use \
                 --deployment {takers} (or leave the option out)",
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
            // `exec:` stands for every exec client, a library's adapter too; other names are
            // whole.
            let exec = |name: &str| name.starts_with("exec:") || name.starts_with("lib:");
            let same = run.client == client || (client == "exec:" && exec(&run.client));
            (!same).then(|| {
                format!(
                    "applies to {name} only, and --client is {}; use --client {client} (or \
                     leave the option out)",
                    run.client
                )
            })
        })
    };
    match id {
        // A data workload talks to the deployment itself.
        "client" => run.data_workload.then(|| {
            format!(
                "is the lock client, and --workload {} writes to the deployment itself and \
                 takes no lock client; leave out --client (or use --workload lock or lock-set \
                 to test the lock)",
                run.workload
            )
        }),
        "jitter" => only_client("redlock", "Redlock's retries"),
        "acquire" => only_client("redlock", "Redlock's votes"),
        "wait_replicas" => only_client("wait", "the wait client's WAIT"),
        "exec_start_timeout" => only_client("exec:", "the start of an exec:<command> client"),
        "hold" => no_lock_client(),
        "no_lease_check" => no_lock_client().or_else(|| {
            (!run.checks_lease).then(|| {
                format!(
                    "lets a holder the harness keeps to its lease act on, and --client {}'s \
                     library keeps the lock alive unseen and decides what its holder knows; \
                     leave the option out",
                    run.client
                )
            })
        }),
        "hash_tag" => no_lock_client().or_else(taken_elsewhere),
        "resources" => (run.workload == "set").then(|| {
            "is how many locks or registers to use, and --workload set adds to one set; \
             leave the option out"
                .to_string()
        }),
        "client_pause" => without_fault(&["client-pause"]),
        "clock_bump" => without_fault(&["clock-bump", "clock-strobe", "clock-holder"]),
        "clock_drift" => without_fault(&["clock-drift"]),
        "link_latency" => without_fault(&["link-latency"]),
        // A script's faults say their own lengths and pace.
        "restart_delay" if !run.scripted => (!faults(&["kill", "kill-holder", "kill-primary"]))
            .then(|| {
                "is how long a killed node stays down, and --nemesis kills none; add kill, \
                 kill-holder or kill-primary (or leave the option out)"
                    .to_string()
            }),
        "nemesis_interval" if !run.scripted => run.faults.is_empty().then(|| {
            "paces the faults, and --nemesis is none; add a fault (or leave the option out)"
                .to_string()
        }),
        "nemesis" => run
            .scripted
            .then(|| "is replaced by the faults of --script; leave one out".to_string()),
        "client_groups" => (run.client_groups == 0).then(|| {
            "splits the clients behind link proxies, which only link faults and \
             --link-jitter use; add a link- fault (or leave the option out)"
                .to_string()
        }),
        _ => taken_elsewhere(),
    }
}
