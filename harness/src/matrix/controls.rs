//! The control sweep: every deployment × server × client × workload × fencing on or off that
//! `run` accepts, each run with no faults, where it must be valid; and every combination it
//! refuses, each with the sentence that says why. Made from the registries themselves, so a
//! new deployment, server, client or workload adds its combinations here; the tests compare
//! `matrices/controls.toml` with what the registries make now, and `SPLITBRAIN_BLESS=1 cargo
//! test -p splitbrain controls` writes it again. `splitbrain matrix matrices/controls.toml`
//! runs it.

use std::fmt::Write;

use splitbrain_workloads::workload::WORKLOADS;
use splitbrain_workloads::EXEC_PREFIX;

use super::file::check;

/// One combination of the catalogs, as `run` options.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Combination {
    deployment: &'static str,
    server: &'static str,
    /// `None` for a data workload, which takes no lock client.
    client: Option<&'static str>,
    workload: &'static str,
    fencing: bool,
}

impl Combination {
    fn args(&self) -> Vec<String> {
        let mut args = vec![
            "run".to_string(),
            "--deployment".into(),
            self.deployment.into(),
            "--server".into(),
            self.server.into(),
            "--workload".into(),
            self.workload.into(),
            "--nemesis".into(),
            "none".into(),
        ];
        if let Some(client) = self.client {
            args.extend(["--client".into(), client.into()]);
        }
        if self.fencing {
            args.push("--fencing".into());
        }
        args
    }
}

/// Every combination of the catalogs: each lock workload with every client (but `exec:`,
/// which needs a program), each data workload with none.
fn combinations() -> Vec<Combination> {
    let mut all = Vec::new();
    for deployment in splitbrain_systems::topologies() {
        for server in splitbrain_systems::servers() {
            for workload in WORKLOADS {
                let clients: Vec<Option<&'static str>> = if workload.data.is_some() {
                    vec![None]
                } else {
                    splitbrain_systems::clients()
                        .filter(|c| !c.name.starts_with(EXEC_PREFIX))
                        .map(|c| Some(c.name))
                        .collect()
                };
                for client in clients {
                    for fencing in [false, true] {
                        all.push(Combination {
                            deployment: deployment.name(),
                            server: server.name(),
                            client,
                            workload: workload.name,
                            fencing,
                        });
                    }
                }
            }
        }
    }
    all
}

/// The combinations `run` accepts, and those it refuses with its reason.
fn sorted() -> (Vec<Combination>, Vec<(Combination, String)>) {
    let (mut accepted, mut refused) = (Vec::new(), Vec::new());
    for combination in combinations() {
        match check(&combination.args()) {
            Ok(_) => accepted.push(combination),
            Err(why) => refused.push((combination, why)),
        }
    }
    (accepted, refused)
}

/// How long each control runs, and over which seeds.
const TIME_LIMIT: &str = "8s";
const SEEDS: &str = "[1, 2]";

/// `matrices/controls.toml`: a group per deployment, server, workload and fencing, listing
/// the clients `run` accepts there; every cell expected valid.
fn controls_file() -> String {
    let (accepted, refused) = sorted();
    let mut file = format!(
        "# The control sweep: every combination of deployment, server, client, workload and\n\
         # fencing that `splitbrain run` accepts ({} of {}; the other {} are refused before\n\
         # anything starts), each with no faults, where a correct lock must be valid.\n\
         # Generated from the registries by harness/src/matrix/controls.rs: do not edit;\n\
         # `SPLITBRAIN_BLESS=1 cargo test -p splitbrain controls` writes it again.\n\n\
         [defaults]\ntime-limit = \"{TIME_LIMIT}\"\n",
        accepted.len(),
        accepted.len() + refused.len(),
        refused.len()
    );
    let mut groups: Vec<(&Combination, Vec<&str>)> = Vec::new();
    for combination in &accepted {
        let same_group = |c: &Combination| {
            (c.deployment, c.server, c.workload, c.fencing)
                == (
                    combination.deployment,
                    combination.server,
                    combination.workload,
                    combination.fencing,
                )
        };
        match groups.iter_mut().find(|(first, _)| same_group(first)) {
            Some((_, clients)) => clients.extend(combination.client),
            None => groups.push((combination, combination.client.into_iter().collect())),
        }
    }
    for (group, clients) in groups {
        let _ = write!(
            file,
            "\n[[group]]\ndeployments = [\"{}\"]\n",
            group.deployment
        );
        if !clients.is_empty() {
            let quoted: Vec<String> = clients.iter().map(|c| format!("\"{c}\"")).collect();
            let _ = writeln!(file, "clients = [{}]", quoted.join(", "));
        }
        let fencing = if group.fencing {
            ", fencing = true"
        } else {
            ""
        };
        let _ = write!(
            file,
            "workloads = [\"{}\"]\nfaults = [\"none\"]\nseeds = {SEEDS}\nexpect = \"valid\"\n\
             options = {{ server = \"{}\"{fencing} }}\n",
            group.workload, group.server
        );
    }
    file
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn the_controls_matrix_is_every_combination_run_accepts() {
        let file = controls_file();
        crate::reference::tests::matches_committed_file(
            &file,
            "matrices/controls.toml",
            "the registries make now: a new deployment, server, client or workload changed \
             which combinations run accepts. Write it again with `SPLITBRAIN_BLESS=1 cargo \
             test -p splitbrain controls`, and run it (`splitbrain matrix \
             matrices/controls.toml`): every cell must be valid",
        );
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrices/controls.toml");
        let cells = super::super::file::load(&path).expect("the controls matrix loads");
        let (accepted, _) = sorted();
        assert_eq!(cells.len(), accepted.len() * 2, "two seeds each");
    }

    #[test]
    fn every_refused_combination_says_why_and_what_to_do_instead() {
        let (accepted, refused) = sorted();
        assert!(accepted.len() > 50 && refused.len() > 50);
        let advice = ["choose", "use ", "add", "leave out", "drop", "lower"];
        let lost: Vec<String> = refused
            .iter()
            .filter(|(_, why)| !advice.iter().any(|word| why.contains(word)))
            .map(|(combination, why)| format!("{}: {why}", combination.args()[1..].join(" ")))
            .collect();
        assert!(
            lost.is_empty(),
            "refused without a way forward:\n{}",
            lost.join("\n")
        );
    }
}
