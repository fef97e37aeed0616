//! The reference pages in docs/ that list what the code defines: every command and option
//! (`docs/cli.md`, from the same clap definitions as the parser) and every catalog
//! (`docs/catalog.md`: deployments, servers, clients, workloads, faults, scenarios, from their
//! registries). A test compares them with the committed pages, so they cannot drift from the
//! code; `SPLITBRAIN_BLESS=1 cargo test -p splitbrain reference` writes them again.

use std::fmt::Write;
use std::path::Path;

use clap::CommandFactory;
use splitbrain_nemesis::FAULTS;
use splitbrain_systems::{clients, servers, topologies};
use splitbrain_workloads::workload::WORKLOADS;

use crate::cli::Cli;

const GENERATED: &str = "<!-- Generated from the code by harness/src/reference.rs; \
                         `SPLITBRAIN_BLESS=1 cargo test -p splitbrain reference` writes it again. -->";

/// docs/cli.md: each command's usage, then each of its options with its help and default.
fn cli_page() -> String {
    let mut root = Cli::command().bin_name("splitbrain");
    root.build();
    let mut page = format!(
        "# Every command and option\n\n{GENERATED}\n\nDurations read like `500ms`, `2s`, \
         `1m`. What each deployment, client and fault is: [catalog.md](catalog.md).\n"
    );
    for command in root.get_subcommands().filter(|c| !c.is_hide_set()) {
        command_section(&mut page, command, "splitbrain");
    }
    page
}

fn command_section(page: &mut String, command: &clap::Command, parent: &str) {
    let name = format!("{parent} {}", command.get_name());
    let about = command
        .get_about()
        .map(ToString::to_string)
        .unwrap_or_default();
    let _ = writeln!(page, "\n## `{name}`\n\n{about}\n");
    let mut usage = command.clone().bin_name(&name);
    let _ = writeln!(
        page,
        "```\n{}\n```\n",
        usage
            .render_usage()
            .to_string()
            .trim_start_matches("Usage: ")
    );
    let arguments: Vec<&clap::Arg> = command
        .get_arguments()
        .filter(|a| !a.is_hide_set() && a.get_id() != "help" && a.get_id() != "version")
        .collect();
    if !arguments.is_empty() {
        page.push_str("| option | what it does |\n|---|---|\n");
    }
    for argument in arguments {
        let _ = writeln!(
            page,
            "| {} | {} |",
            option_name(argument),
            option_help(argument)
        );
    }
    for sub in command.get_subcommands().filter(|c| !c.is_hide_set()) {
        command_section(page, sub, &name);
    }
}

fn option_name(argument: &clap::Arg) -> String {
    let value = argument
        .get_value_names()
        .map(|names| names.join(" "))
        .unwrap_or_else(|| argument.get_id().to_string().to_uppercase());
    let takes_value = argument.get_num_args().is_some_and(|n| n.takes_values());
    match argument.get_long() {
        Some(long) if takes_value => format!("`--{long} <{value}>`"),
        Some(long) => format!("`--{long}`"),
        None => format!("`<{value}>`"),
    }
}

fn option_help(argument: &clap::Arg) -> String {
    let mut help = argument
        .get_long_help()
        .or(argument.get_help())
        .map(|h| h.to_string().replace('\n', " ").replace('|', "\\|"))
        .unwrap_or_default();
    if !help.is_empty() && !help.ends_with('.') {
        help.push('.');
    }
    let values: Vec<String> = argument
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !values.is_empty() {
        let _ = write!(help, " One of {}.", values.join(", "));
    }
    let defaults: Vec<String> = argument
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() && argument.get_num_args().is_some_and(|n| n.takes_values()) {
        let _ = write!(help, " Default: `{}`.", defaults.join(","));
    }
    help
}

/// docs/catalog.md: every registry, one table each.
fn catalog_page(scenarios: &Path) -> String {
    let table = |page: &mut String, title: &str, what: &str, rows: Vec<(String, String)>| {
        let _ = writeln!(
            page,
            "\n## {title}\n\n{what}\n\n| name | what it is |\n|---|---|"
        );
        for (name, summary) in rows {
            let _ = writeln!(page, "| `{name}` | {} |", summary.replace('|', "\\|"));
        }
    };
    let mut page = format!(
        "# Catalog: deployments, servers, clients, workloads, faults, scenarios\n\n{GENERATED}\n"
    );
    let own = |rows: Vec<(&str, &str)>| {
        rows.into_iter()
            .map(|(name, summary)| (name.to_string(), summary.to_string()))
            .collect()
    };
    table(
        &mut page,
        "Deployments",
        "`--deployment NAME`; how each is brought up and what its clients see: \
         [running.md](running.md).",
        own(topologies().map(|t| (t.name(), t.summary())).collect()),
    );
    table(
        &mut page,
        "Servers",
        "`--server NAME`: the server a deployment runs, built locally from Debian's packages \
         ([images.md](images.md)).",
        own(servers().map(|s| (s.name(), s.summary())).collect()),
    );
    table(
        &mut page,
        "Clients",
        "`--client NAME`: one lock algorithm each; `exec:CMD` runs your own \
         ([exec-protocol.md](exec-protocol.md)).",
        own(clients().map(|c| (c.name, c.summary)).collect()),
    );
    table(
        &mut page,
        "Workloads",
        "`--workload NAME`: what the clients do, and what the checkers look for \
         ([reading-results.md](reading-results.md)).",
        own(WORKLOADS.iter().map(|w| (w.name, w.summary)).collect()),
    );
    table(
        &mut page,
        "Faults",
        "`--nemesis NAME,NAME,...` (or `all`, or `none`).",
        own(FAULTS.iter().map(|f| (f.name(), f.summary())).collect()),
    );
    let scenarios = crate::scenario::all(scenarios).expect("the scenarios folder reads");
    table(
        &mut page,
        "Scenarios",
        "`splitbrain scenario run NAME`: the article's claims by name, each a run with the \
         verdict it must get ([scenarios.md](scenarios.md)).",
        scenarios
            .iter()
            .map(|s| {
                let role = match (&s.claim.cures, s.finding) {
                    (Some(cured), _) => format!("cures `{cured}`"),
                    (None, true) => format!("a finding on `{}`", s.client),
                    (None, false) => "hazard".to_string(),
                };
                let expect = s.expect.judged_label(s.judge);
                (
                    s.name.clone(),
                    format!(
                        "{} Expect {expect}; {role}; from {}.",
                        s.claim.claim, s.claim.source
                    ),
                )
            })
            .collect(),
    );
    page
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Compares a generated page of docs/ with the committed one, or writes it with
    /// SPLITBRAIN_BLESS=1.
    pub(crate) fn matches_committed(page: &str, name: &str) {
        matches_committed_file(
            page,
            &format!("docs/{name}"),
            "the code and files list now; write it again with \
             `SPLITBRAIN_BLESS=1 cargo test -p splitbrain`",
        );
    }

    /// Compares `made` with the committed file at `path` (from the repository's root), or
    /// writes it there with SPLITBRAIN_BLESS=1; `stale` ends the sentence a difference
    /// fails with: what the file should be, and how to write it again.
    pub(crate) fn matches_committed_file(made: &str, path: &str, stale: &str) {
        let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
        if std::env::var("SPLITBRAIN_BLESS").as_deref() == Ok("1") {
            std::fs::write(&full, made).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&full).unwrap_or_default();
        assert!(committed == made, "{path} is not what {stale}");
    }

    #[test]
    fn the_reference_of_every_option_is_the_parsers() {
        let page = cli_page();
        for option in ["--deployment", "--limit", "--seed", "--replay", "--junit"] {
            assert!(page.contains(&format!("`{option} ")), "{option}");
        }
        matches_committed(&page, "cli.md");
    }

    /// A Markdown page's lines outside its code blocks.
    fn prose(page: &str) -> impl Iterator<Item = &str> {
        let mut in_code = false;
        page.lines().filter(move |line| {
            if line.starts_with("```") {
                in_code = !in_code;
                return false;
            }
            !in_code
        })
    }

    /// The anchors a Markdown page offers: GitHub's slug of each heading, and `<a id>`s.
    fn anchors(page: &str) -> Vec<String> {
        let mut anchors = Vec::new();
        for line in prose(page) {
            if line.starts_with('#') {
                let heading = line.trim_start_matches('#').trim().to_lowercase();
                let slug: String = heading
                    .chars()
                    .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
                    .map(|c| if c == ' ' { '-' } else { c })
                    .collect();
                anchors.push(slug);
            }
            if let Some(at) = line.find("<a id=\"") {
                let id = &line[at + 7..];
                anchors.push(id[..id.find('"').unwrap_or(id.len())].to_string());
            }
        }
        anchors
    }

    /// Every `](target)` link in a Markdown page outside code blocks.
    fn links(page: &str) -> Vec<String> {
        let mut links = Vec::new();
        for line in prose(page) {
            let mut rest = line;
            while let Some(at) = rest.find("](") {
                let start = at + 2;
                let end = rest[start..].find(')').map_or(rest.len(), |e| start + e);
                links.push(rest[start..end].to_string());
                rest = &rest[end..];
            }
        }
        links
    }

    #[test]
    fn every_relative_link_in_the_readme_and_docs_resolves() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut pages = vec![root.join("README.md")];
        for entry in std::fs::read_dir(root.join("docs")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
        let mut broken = Vec::new();
        for page in &pages {
            let text = std::fs::read_to_string(page).unwrap();
            for link in links(&text) {
                if link.starts_with("http://") || link.starts_with("https://") {
                    continue;
                }
                let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
                let target = if file.is_empty() {
                    page.clone()
                } else {
                    page.parent().unwrap().join(file)
                };
                let resolves = target.exists()
                    && (anchor.is_empty()
                        || anchors(&std::fs::read_to_string(&target).unwrap_or_default())
                            .iter()
                            .any(|a| a == anchor));
                if !resolves {
                    broken.push(format!("{}: {link}", page.display()));
                }
            }
        }
        assert!(
            broken.is_empty(),
            "links that lead nowhere:\n{}",
            broken.join("\n")
        );
        assert!(pages.len() > 10, "README.md and docs/ were read");
    }

    #[test]
    fn running_md_describes_every_deployment_client_and_fault() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let page = std::fs::read_to_string(root.join("docs/running.md")).unwrap();
        let names = topologies()
            .map(|t| t.name())
            .chain(clients().map(|c| c.name))
            .chain(FAULTS.iter().map(|f| f.name()));
        let missing: Vec<&str> = names
            .filter(|name| !page.contains(&format!("`{name}`")))
            .collect();
        assert!(
            missing.is_empty(),
            "docs/running.md does not describe {missing:?}"
        );
    }

    /// `cargo install` ignores Cargo.lock unless told `--locked`, and then builds other
    /// versions of the dependencies than the tests ran with.
    #[test]
    fn every_cargo_install_in_the_readme_and_docs_is_locked() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut pages = vec![root.join("README.md")];
        for entry in std::fs::read_dir(root.join("docs")).unwrap() {
            pages.push(entry.unwrap().path());
        }
        for page in pages
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
        {
            let text = std::fs::read_to_string(page).unwrap();
            for line in text.lines().filter(|l| l.contains("cargo install --")) {
                assert!(line.contains("--locked"), "{}: {line}", page.display());
            }
        }
    }

    #[test]
    fn the_readme_is_a_front_door_of_about_300_lines() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        assert!(
            readme.lines().count() <= 300,
            "{} lines",
            readme.lines().count()
        );
    }

    #[test]
    fn the_catalog_page_lists_every_registry() {
        let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let page = catalog_page(&scenarios);
        for client in clients() {
            assert!(
                page.contains(&format!("| `{}` |", client.name)),
                "{}",
                client.name
            );
        }
        for fault in FAULTS {
            assert!(page.contains(&format!("| `{}` |", fault.name())));
        }
        matches_committed(&page, "catalog.md");
    }
}
