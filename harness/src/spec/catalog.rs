//! `splitbrain run --help`'s catalog: every deployment, client, workload and fault with its
//! one-line summary.

use splitbrain_nemesis::FAULTS;
use splitbrain_workloads::workload::WORKLOADS;

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
            splitbrain_systems::topologies()
                .map(|t| (t.name(), t.summary()))
                .collect(),
        ),
        section(
            "Servers (--server)",
            splitbrain_systems::servers()
                .map(|s| (s.name(), s.summary()))
                .collect(),
        ),
        section(
            "Clients",
            splitbrain_systems::clients()
                .map(|c| (c.name, c.summary))
                .collect(),
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

/// `--deployment`'s help: every deployment, by name.
pub fn deployment_help() -> String {
    let names: Vec<&str> = splitbrain_systems::topologies().map(|t| t.name()).collect();
    format!("Deployment: {}", names.join(" | "))
}

/// `--server`'s help: each system's servers, its default first, and the deployments that run
/// them.
pub fn server_help() -> String {
    let systems: Vec<String> = splitbrain_systems::SERVICES
        .iter()
        .map(|service| {
            let servers: Vec<&str> = service.servers().iter().map(|s| s.name()).collect();
            let deployments: Vec<&str> = service.topologies().iter().map(|t| t.name()).collect();
            format!("{} on {}", servers.join(" | "), deployments.join(", "))
        })
        .collect();
    format!(
        "The server version the deployment runs, each system's first its default: {}",
        systems.join("; ")
    )
}

/// `--client`'s help: every built-in client, the external-program and library clients, and
/// each system's default.
pub fn client_help() -> String {
    let builtin: Vec<&str> = splitbrain_systems::SERVICES
        .iter()
        .flat_map(|s| s.clients().iter().map(|c| c.name))
        .collect();
    let defaults: Vec<String> = splitbrain_systems::SERVICES
        .iter()
        .map(|s| format!("{} on {}", s.default_client(), s.name()))
        .collect();
    format!(
        "Lock algorithm: {} | exec:<command> (your own client, over the JSON-lines protocol) | \
         lib:<library> (a real lock library of the catalog: `splitbrain library list`). Default: \
         the deployment's own lock ({})",
        builtin.join(" | "),
        defaults.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags' help is made from the registries: a new system, deployment, server or
    /// client is in it without a word written by hand.
    #[test]
    fn the_flags_help_names_every_registered_deployment_server_and_client() {
        let (deployments, servers, clients) = (deployment_help(), server_help(), client_help());
        for topology in splitbrain_systems::topologies() {
            assert!(deployments.contains(topology.name()), "{deployments}");
            assert!(servers.contains(topology.name()), "{servers}");
        }
        for server in splitbrain_systems::servers() {
            assert!(servers.contains(server.name()), "{servers}");
        }
        for client in splitbrain_systems::clients() {
            assert!(
                clients.contains(client.name),
                "{} in {clients}",
                client.name
            );
        }
        assert!(clients.contains("mysql-get-lock on mariadb"), "{clients}");
    }
}
