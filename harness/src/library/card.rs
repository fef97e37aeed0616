//! `splitbrain library test`: a library's report card. Each scenario of the catalog whose
//! hazard applies to the library's kind of lock ([`checks`]) runs over seeds with the library
//! as its client, beside a no-fault control, and so does each of the library's own findings
//! (`scenarios/findings/`, with the client and variant they name); the card says for each
//! what the library's design (or the finding) predicts, what the seeds got, the causes their
//! violations were explained by, and links to the runs. `--all` makes the page of every
//! library's card.

use std::path::{Path, PathBuf};

use splitbrain_libraries::card::{checks, Check};
use splitbrain_libraries::{adapters_dir, catalog, find, Library, LIB_PREFIX};
use tokio_util::sync::CancellationToken;

use super::known::own_unknowns;
use super::page::{self, Card, CardLine};
use super::{bad_catalog, install};
use crate::cli::SeedRuns;
use crate::error::{Exit, HarnessError};
use crate::matrix::{self, Claim, Expect};
use crate::scenario;

/// How long each seed of a control runs, with no faults.
const CONTROL_TIME_LIMIT: &str = "20s";

/// What `library test` was asked for.
pub struct Cards<'a> {
    /// One library, or every one.
    pub name: Option<&'a str>,
    /// Only these lines of each card (`control` or a scenario's name); every line if empty.
    pub only: &'a [String],
    /// The folder of the catalog's scenarios.
    pub scenarios: &'a Path,
    /// The seeds, how many at once, and where their runs go.
    pub runs: &'a SeedRuns,
    /// Stop a hazard's or a finding's seed at its first violation of an expected cause.
    pub stop_at_first: bool,
}

/// `library test NAME` (or `--all`): runs the cards over seeds 1..=`seeds` into
/// `results/library-NAME-<time>/` (`libraries-<time>/` for all), with `cards.json` and the
/// page, `index.html`; exits 0 when every check got what its library's design predicts.
pub async fn test(asked: Cards<'_>, interrupt: CancellationToken) -> Result<Exit, HarnessError> {
    let Cards {
        name,
        scenarios,
        runs: seed_runs,
        ..
    } = asked;
    let dir = adapters_dir();
    let libraries = match name {
        Some(name) => vec![find(&dir, name.trim_start_matches(LIB_PREFIX)).map_err(bad_catalog)?],
        None => catalog(&dir).map_err(bad_catalog)?,
    };
    let libraries = with_lines(libraries, asked.only, scenarios)?;
    // Every scenario a card names is read before anything runs, so that a catalog without
    // one fails now rather than an hour in.
    for (library, lines) in &libraries {
        for line in lines {
            cells_of(library, line, &[1], scenarios)?;
        }
    }
    let started = chrono::Utc::now();
    let folder = seed_runs.results.join(format!(
        "{}-{}",
        match name {
            Some(_) => format!("library-{}", libraries[0].0.name),
            None => "libraries".to_string(),
        },
        started.format("%Y%m%dT%H%M%S")
    ));
    std::fs::create_dir_all(&folder).map_err(|e| {
        HarnessError::BadInput(format!(
            "creating {}: {e}: choose a results folder this user can write, with --results",
            folder.display()
        ))
    })?;
    let mut cards = Vec::new();
    // What stopped the cards, if anything did: the page still shows every line run so far.
    let mut failure = None;
    for (library, card_lines) in libraries {
        if interrupt.is_cancelled() || failure.is_some() {
            break;
        }
        let (card, stopped_by) = run_card(&asked, library, card_lines, &folder, &interrupt).await?;
        print_card(&card);
        cards.push(card);
        failure = stopped_by;
    }
    let when = started.format("%Y-%m-%d %H:%M UTC").to_string();
    let json = serde_json::to_string_pretty(&cards).map_err(anyhow::Error::from)?;
    std::fs::write(folder.join("cards.json"), json).map_err(anyhow::Error::from)?;
    std::fs::write(
        folder.join("index.html"),
        page::render(&cards, &when, seed_runs.seeds, seed_runs.parallel),
    )
    .map_err(anyhow::Error::from)?;
    if let Some(e) = failure {
        stdoutln!(
            "\nthe cards stopped; what ran is kept -> {}",
            folder.join("index.html").display()
        );
        return match e {
            HarnessError::Interrupted(why) => {
                stderrln!("{why}");
                Ok(Exit::Interrupted)
            }
            e => Err(e),
        };
    }
    let designed = cards.iter().filter(|c| c.as_designed()).count();
    stdoutln!(
        "\n{designed} of {} libraries as their design predicts -> {}",
        cards.len(),
        folder.join("index.html").display()
    );
    if interrupt.is_cancelled() {
        return Ok(Exit::Interrupted);
    }
    Ok(match designed == cards.len() {
        true => Exit::Success,
        false => Exit::Verdict(splitbrain_checker::Valid::False),
    })
}

/// Installs a library and runs its card's lines, one after another; returns the card and,
/// where they stopped early (a failed install, a line that could not run, an interrupt), the
/// error that stopped them. The card keeps every line run before it.
async fn run_card(
    asked: &Cards<'_>,
    library: Library,
    card_lines: Vec<Line>,
    folder: &Path,
    interrupt: &CancellationToken,
) -> Result<(Card, Option<HarnessError>), HarnessError> {
    let (scenarios, seed_runs) = (asked.scenarios, asked.runs);
    let seed_list: Vec<u64> = (1..=seed_runs.seeds).collect();
    let mut failure = None;
    let mut lines = Vec::new();
    let mut stopped = None;
    if let Err(e) = install(library.clone(), interrupt).await {
        // The installer's error names the library and what it was doing.
        stopped = Some(e.to_string());
        failure = Some(e);
    } else {
        print_lines(&library, &card_lines);
    }
    for line in card_lines {
        if interrupt.is_cancelled() || failure.is_some() {
            break;
        }
        let (claim, cells, file) = cells_of(&library, &line, &seed_list, scenarios)?;
        let cells = matrix::stopping_at_first(cells, asked.stop_at_first);
        let runs = folder.join(format!("{}-{}", library.name, line.name()));
        let ran = scenario::run_claim(
            line.name(),
            claim,
            cells,
            &file,
            &runs,
            seed_runs.parallel,
            interrupt,
        )
        .await;
        let outcome = match ran {
            Ok(outcome) => outcome,
            Err(e) => {
                stopped = Some(format!("{} could not run: {e}", line.name()));
                failure = Some(e);
                break;
            }
        };
        // A line that expects valid may have seeds only the library's own finding made
        // unknown (`[[known-unknown]]`): the card lays those to the finding.
        let own_unknowns = match outcome.expect == Expect::Valid && !outcome.held {
            true => own_unknowns(&library.manifest.known_unknowns, &outcome.unknown_runs),
            false => None,
        };
        lines.push(CardLine {
            expected: line.expected().to_string(),
            outcome,
            own_unknowns,
        });
    }
    let card = Card {
        stopped,
        ..card_of(&library, lines)
    };
    Ok((card, failure))
}

/// One line of a card: a check of the library's kind of lock, or one of its own findings.
#[derive(Debug, Clone)]
enum Line {
    Kind(Check),
    /// A file of `scenarios/findings/` naming the library: a finding, or the cure of one.
    Finding {
        name: String,
        claim: String,
        path: PathBuf,
        cure: bool,
    },
}

impl Line {
    fn name(&self) -> &str {
        match self {
            Line::Kind(check) => check.name(),
            Line::Finding { name, .. } => name,
        }
    }

    /// What the library should show, in a sentence.
    fn expected(&self) -> &str {
        match self {
            Line::Kind(check) => check.expected(),
            Line::Finding { claim, .. } => claim,
        }
    }
}

/// Every line of `library`'s card: its kind's checks, then its findings in `scenarios`.
fn lines_of(library: &Library, scenarios: &[scenario::Scenario]) -> Vec<Line> {
    let own = |s: &&scenario::Scenario| {
        let named = s.client.strip_prefix(LIB_PREFIX).unwrap_or_default();
        s.finding && named.split(':').next() == Some(library.name.as_str())
    };
    let findings = scenarios.iter().filter(own).map(|s| Line::Finding {
        name: s.name.clone(),
        claim: s.claim.claim.clone(),
        path: s.path.clone(),
        cure: s.claim.cures.is_some(),
    });
    checks(&library.manifest)
        .into_iter()
        .map(Line::Kind)
        .chain(findings)
        .collect()
}

/// Each library with the lines of its card that were asked for (all of them when `only` is
/// empty), leaving out a library none of them applies to. A name on no card is refused.
fn with_lines(
    libraries: Vec<Library>,
    only: &[String],
    scenarios: &Path,
) -> Result<Vec<(Library, Vec<Line>)>, HarnessError> {
    let findings = match scenarios.join(scenario::FINDINGS).is_dir() {
        true => scenario::all(scenarios)?,
        false => Vec::new(),
    };
    let cards: Vec<(Library, Vec<Line>)> = libraries
        .into_iter()
        .map(|library| {
            let lines = lines_of(&library, &findings);
            (library, lines)
        })
        .collect();
    for (library, lines) in &cards {
        known_unknowns_are_findings(library, lines)?;
    }
    for name in only {
        let on_a_card = cards
            .iter()
            .any(|(_, lines)| lines.iter().any(|line| line.name() == name));
        if !on_a_card {
            let mut known: Vec<&str> = cards
                .iter()
                .flat_map(|(_, lines)| lines.iter().map(Line::name))
                .collect();
            known.sort_unstable();
            known.dedup();
            return Err(HarnessError::BadInput(format!(
                "--check {name}: no card asked for has that line; they have {}",
                known.join(", ")
            )));
        }
    }
    let wanted = |line: &Line| only.is_empty() || only.iter().any(|name| name == line.name());
    Ok(cards
        .into_iter()
        .map(|(library, lines)| (library, lines.into_iter().filter(wanted).collect()))
        .filter(|(_, lines): &(Library, Vec<Line>)| !lines.is_empty())
        .collect())
}

/// Refuses a manifest whose `[[known-unknown]]` names no finding on the library's card: the
/// card would lay seeds to a finding nobody can run.
fn known_unknowns_are_findings(library: &Library, lines: &[Line]) -> Result<(), HarnessError> {
    let findings: Vec<&str> = lines
        .iter()
        .filter(|line| matches!(line, Line::Finding { cure: false, .. }))
        .map(Line::name)
        .collect();
    match library
        .manifest
        .known_unknowns
        .iter()
        .find(|known| !findings.contains(&known.finding.as_str()))
    {
        None => Ok(()),
        Some(known) => Err(HarnessError::BadInput(format!(
            "{}: [[known-unknown]] names the finding `{}`, which is not one of {}'s findings \
             in scenarios/findings/ ({}); name one of them",
            library.dir.join("library.toml").display(),
            known.finding,
            library.name,
            match findings.is_empty() {
                true => "it has none".to_string(),
                false => findings.join(", "),
            }
        ))),
    }
}

/// A check's claim, its cells over `seeds` with the library as the client, and the file they
/// come from.
fn cells_of(
    library: &Library,
    line: &Line,
    seeds: &[u64],
    scenarios: &Path,
) -> Result<(Claim, Vec<matrix::Cell>, PathBuf), HarnessError> {
    let client = library.client_name();
    let check = match line {
        Line::Kind(check) => *check,
        // A finding runs as its file says, with the variant it names.
        Line::Finding { path, .. } => {
            let (claim, cells) = matrix::load_scenario(path, seeds)?;
            return Ok((claim, cells, path.clone()));
        }
    };
    match check {
        Check::Control => {
            let deployment = library.manifest.deployments.first().ok_or_else(|| {
                HarnessError::BadInput(format!(
                    "{}: `deployments` is empty; name the deployments it is written for",
                    library.dir.join("library.toml").display()
                ))
            })?;
            let args = [
                "--deployment",
                deployment,
                "--client",
                &client,
                "--nemesis",
                "none",
                "--time-limit",
                CONTROL_TIME_LIMIT,
            ];
            let claim = Claim {
                claim: check.expected().to_string(),
                source: format!("the control of {client}"),
                cures: None,
                shown_by: None,
                fewest: None,
            };
            let file = library.dir.join("library.toml");
            Ok((claim, matrix::control(&args, seeds)?, file))
        }
        Check::Scenario { name, .. } => {
            let path = scenarios.join(format!("{name}.toml"));
            if !path.is_file() {
                return Err(HarnessError::BadInput(format!(
                    "{client}'s card runs the scenario `{name}`, which is not in {}: run from \
                     splitbrain's folder, or pass --scenarios",
                    scenarios.display()
                )));
            }
            let (claim, cells) = matrix::load_scenario_as(&path, seeds, Some(&client))?;
            Ok((claim, cells, path))
        }
    }
}

/// What each line of the card is about to probe, before it runs.
fn print_lines(library: &Library, lines: &[Line]) {
    stdoutln!("\n{}'s card probes:", library.client_name());
    for line in lines {
        let what = match line {
            Line::Kind(Check::Control) => "control",
            Line::Kind(_) => "its kind of lock",
            Line::Finding { cure: false, .. } => "finding",
            Line::Finding { cure: true, .. } => "cure of a finding",
        };
        stdoutln!("  {} ({what}): {}", line.name(), line.expected());
    }
}

fn card_of(library: &Library, lines: Vec<CardLine>) -> Card {
    let manifest = &library.manifest;
    Card {
        client: format!("{LIB_PREFIX}{}", library.name),
        package: manifest.package.clone(),
        version: manifest.version.clone(),
        summary: manifest.summary.clone(),
        kind: manifest.kind.name.to_string(),
        renews: manifest.renews.name().to_string(),
        fencing: manifest.fencing,
        lines,
        stopped: None,
    }
}

/// The card as text: a line per check, what it should get, in how many seeds it did, the
/// verdicts and the causes.
fn print_card(card: &Card) {
    stdoutln!(
        "\n{}: {} {}, {} (renews: {}, fencing: {})",
        card.client,
        card.package,
        card.version,
        card.kind,
        card.renews,
        if card.fencing { "yes" } else { "no" }
    );
    let width = card
        .lines
        .iter()
        .map(|l| l.outcome.name.len())
        .max()
        .unwrap_or(0);
    for line in &card.lines {
        let outcome = &line.outcome;
        stdoutln!(
            "  {:<width$}  {:<8} {}: {}{}",
            outcome.name,
            outcome.expect.judged_label(outcome.judge),
            line.result(),
            outcome.verdicts,
            if outcome.causes.is_empty() {
                String::new()
            } else {
                format!("; causes: {}", outcome.causes)
            }
        );
    }
    if let Some(why) = &card.stopped {
        stdoutln!("  the card stopped here: {why}");
    }
}

#[cfg(test)]
mod tests {
    use splitbrain_libraries::catalog;

    use super::*;

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    #[test]
    fn every_known_unknown_of_the_catalog_names_a_finding_of_its_library() {
        let libraries = catalog(&root().join("adapters")).unwrap();
        assert!(
            libraries
                .iter()
                .any(|library| !library.manifest.known_unknowns.is_empty()),
            "redlock-py declares MultipleRedlockException a known unknown"
        );
        with_lines(libraries, &[], &root().join("scenarios")).unwrap();
    }

    #[test]
    fn a_known_unknown_naming_no_finding_of_its_library_is_refused() {
        let mut redlock_py = find(&root().join("adapters"), "redlock-py").unwrap();
        redlock_py.manifest.known_unknowns[0].finding = "sherlock-expire-none".into();
        let refused = with_lines(vec![redlock_py], &[], &root().join("scenarios"));
        let Err(HarnessError::BadInput(message)) = refused else {
            panic!("a known unknown of another library's finding was accepted");
        };
        assert!(
            message.contains("`sherlock-expire-none`")
                && message.contains("redlock-py-one-master-down"),
            "{message}"
        );
    }
}
