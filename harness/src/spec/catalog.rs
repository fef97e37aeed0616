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
