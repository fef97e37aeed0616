//! The fault sweep: every deployment with each lock client `run` accepts there, under each
//! mix of faults that applies (node faults, partitions, client faults, link faults), on its
//! default server. Whatever the verdict, no violation may go unexplained (`unexplained` is
//! splitbrain's gap, not the system's), and a deployment that commits each grant on a
//! majority may grant no lock twice with both leases live. Made from the registries, as the
//! control sweep is ([`super::controls`]): the tests compare `matrices/faults.toml` with what
//! they make now, and `SPLITBRAIN_BLESS=1 cargo test -p splitbrain fault_sweep` writes it
//! again. `splitbrain matrix matrices/faults.toml` runs it.

use std::fmt::Write;

use splitbrain_workloads::EXEC_PREFIX;

use super::file::check;

/// The mixes of faults, by what they take away; a deployment gets those of each mix it
/// accepts with the client.
const MIXES: &[&[&str]] = &[
    &["kill", "pause", "kill-primary", "pause-primary", "failover"],
    &["partition", "partition-primary"],
    &["client-pause", "client-crash"],
    &["link-latency", "link-reset", "link-drop"],
];

/// How long each cell runs, and over which seeds.
const TIME_LIMIT: &str = "15s";
const SEEDS: &str = "[1, 2]";

/// One group of the sweep: a deployment, the faults of one mix it takes, and the clients
/// that take them all.
#[derive(Debug, PartialEq)]
struct Group {
    deployment: &'static str,
    /// Whether the deployment commits each grant on a majority: held to its leases.
    majority_commits: bool,
    faults: String,
    clients: Vec<&'static str>,
}

fn run_args(deployment: &str, client: &str, faults: &str) -> Vec<String> {
    ["run", "--deployment", deployment, "--client", client]
        .into_iter()
        .chain(["--workload", "lock", "--nemesis", faults])
        .map(str::to_string)
        .collect()
}

/// Every deployment, client and mix `run` accepts, grouped by deployment and faults.
fn groups() -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for topology in splitbrain_systems::topologies() {
        let deployment = topology.name();
        let clients = splitbrain_systems::clients()
            .map(|c| c.name)
            .filter(|name| !name.starts_with(EXEC_PREFIX));
        for client in clients {
            if check(&run_args(deployment, client, "none")).is_err() {
                continue;
            }
            for mix in MIXES {
                let taken: Vec<&str> = mix
                    .iter()
                    .copied()
                    .filter(|fault| check(&run_args(deployment, client, fault)).is_ok())
                    .collect();
                let faults = taken.join(",");
                if taken.is_empty() || check(&run_args(deployment, client, &faults)).is_err() {
                    continue;
                }
                let same = |g: &&mut Group| g.deployment == deployment && g.faults == faults;
                match groups.iter_mut().find(same) {
                    Some(group) => group.clients.push(client),
                    None => groups.push(Group {
                        deployment,
                        majority_commits: topology.replication().majority_commits,
                        faults,
                        clients: vec![client],
                    }),
                }
            }
        }
    }
    groups
}

/// `matrices/faults.toml`.
fn sweep_file() -> String {
    let groups = groups();
    let cells: usize = groups.iter().map(|g| g.clients.len() * 2).sum();
    let mut file = format!(
        "# The fault sweep: every deployment with each lock client `splitbrain run` accepts\n\
         # there, under each mix of faults that applies (node faults, partitions, client\n\
         # faults, link faults), {cells} cells. Whatever the verdict, no violation may go\n\
         # unexplained; a deployment that commits each grant on a majority may grant no lock\n\
         # twice with both leases live.\n\
         # Generated from the registries by harness/src/matrix/fault_sweep.rs: do not edit;\n\
         # `SPLITBRAIN_BLESS=1 cargo test -p splitbrain fault_sweep` writes it again.\n\n\
         [defaults]\ntime-limit = \"{TIME_LIMIT}\"\n"
    );
    for group in groups {
        let quoted: Vec<String> = group.clients.iter().map(|c| format!("\"{c}\"")).collect();
        let (expect, judge) = match group.majority_commits {
            true => ("valid", "judge = \"leases\"\n"),
            false => ("any", ""),
        };
        let _ = write!(
            file,
            "\n[[group]]\ndeployments = [\"{}\"]\nclients = [{}]\nworkloads = [\"lock\"]\n\
             faults = [\"{}\"]\nseeds = {SEEDS}\nexpect = \"{expect}\"\n{judge}\
             forbid-causes = [\"unexplained\"]\n",
            group.deployment,
            quoted.join(", "),
            group.faults,
        );
    }
    file
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn the_fault_sweep_is_every_deployment_and_client_under_each_mix_that_applies() {
        crate::reference::tests::matches_committed_file(
            &sweep_file(),
            "matrices/faults.toml",
            "the registries make now: a new deployment, client or fault changed what the \
             sweep runs. Write it again with `SPLITBRAIN_BLESS=1 cargo test -p splitbrain \
             fault_sweep`, and run it (`splitbrain matrix matrices/faults.toml`)",
        );
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrices/faults.toml");
        let cells = super::super::file::load(&path).expect("the fault sweep loads");
        let groups = groups();
        assert_eq!(
            cells.len(),
            groups.iter().map(|g| g.clients.len() * 2).sum::<usize>()
        );
        for topology in splitbrain_systems::topologies() {
            let mixes = groups
                .iter()
                .filter(|g| g.deployment == topology.name())
                .count();
            assert!(
                mixes >= 3,
                "{} is swept under {mixes} mixes of faults",
                topology.name()
            );
        }
    }
}
