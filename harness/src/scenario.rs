//! `splitbrain scenario`: the claims of the article and the literature around it, each a named
//! scenario that reproduces it, run over seeds and held to the share of seeds its claim needs.
//!
//! A scenario is a matrix file of one group with a `[scenario]` table, in `scenarios/NAME.toml`:
//!
//! ```toml
//! [scenario]
//! claim = "A client paused past its lease wakes up as a zombie and writes."
//! source = "Kleppmann 2016, 'How to do distributed locking'"
//! cures = "other-scenario"        # where this one shows the cure of another's hazard
//!
//! [[group]]
//! deployments = ["single"]
//! clients = ["set-nx-px"]
//! workloads = ["lock-set"]
//! faults = ["client-pause"]
//! expect = "invalid"              # a hazard: invalid; a cure: valid
//! judge = "leases"                # optional: held to the lock's leases alone, not the verdict
//! options = { time-limit = "30s" }
//! ```
//!
//! A hazard is reproduced when at least nine seeds in ten show it (timing decides the rest); a
//! cure holds only when every seed is valid.
//!
//! A **finding** is a scenario in `scenarios/findings/`: a bug of one real lock library
//! (`clients = ["lib:NAME"]` or a variant, `lib:NAME:VARIANT`) that its own users report, with
//! the upstream issue as its `source`. It runs like any scenario, and is a line of its
//! library's report card; `docs/findings.md` is made from these files ([`crate::findings`]).
//! A finding with faults says in `fewest = "..."` why none of them can go (what a run without
//! each one, or `shrink`, showed): a bug report names the least it takes.

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use crate::claims::{self, ClaimOutcome};
use crate::cli::SeedRuns;
use crate::error::{Exit, HarnessError};
use crate::matrix::{self, Claim, Expect, Judge, MatrixOptions, Met};
use crate::store::{Results, RunDir};

/// The folder of findings, in the scenarios folder.
pub const FINDINGS: &str = "findings";

/// One scenario file, by name.
pub struct Scenario {
    pub name: String,
    pub path: PathBuf,
    pub claim: Claim,
    pub expect: Expect,
    pub judge: Judge,
    /// Its client, as the file names it (`lib:sherlock:expire-none` for a finding).
    pub client: String,
    /// Whether it is a library's finding (in `findings/`), not a claim of the literature.
    pub finding: bool,
}

/// Every scenario in `dir` and its `findings/`, by name, each read and checked as its runs
/// would be: the claims first, then the findings.
pub fn all(dir: &Path) -> Result<Vec<Scenario>, HarnessError> {
    let mut scenarios = read_folder(dir, false)?;
    let findings = dir.join(FINDINGS);
    if findings.is_dir() {
        scenarios.extend(read_folder(&findings, true)?);
    }
    for (i, scenario) in scenarios.iter().enumerate() {
        if let Some(twin) = scenarios[..i].iter().find(|s| s.name == scenario.name) {
            return Err(HarnessError::BadInput(format!(
                "{} and {} are both named `{}`: rename one",
                twin.path.display(),
                scenario.path.display(),
                scenario.name
            )));
        }
    }
    for scenario in &scenarios {
        if let Some(cured) = &scenario.claim.cures {
            if !scenarios.iter().any(|s| &s.name == cured) {
                return Err(HarnessError::BadInput(format!(
                    "{}: cures `{cured}`, which is no scenario in {}",
                    scenario.path.display(),
                    dir.display()
                )));
            }
        }
    }
    Ok(scenarios)
}

/// The scenario files of one folder, by name.
fn read_folder(dir: &Path, finding: bool) -> Result<Vec<Scenario>, HarnessError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        HarnessError::BadInput(format!(
            "cannot read the scenarios folder {}: {e}; run from the repository's root or \
             pass --dir",
            dir.display()
        ))
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    // By name, so that a hazard comes just before its cure (`x` before `x-fenced`).
    paths.sort_by_key(|path| name_of(path));
    paths
        .into_iter()
        .map(|path| {
            let (claim, cells) = matrix::load_scenario(&path, &[1])?;
            let has_faults = !matches!(cells[0].faults.as_str(), "" | "none");
            if finding && claim.cures.is_none() && has_faults && claim.fewest.is_none() {
                return Err(HarnessError::BadInput(format!(
                    "{}: a finding with faults says why they are the fewest that show it: \
                     add `fewest = \"...\"` to its [scenario] table (what a run without each \
                     one, or `splitbrain shrink`, showed)",
                    path.display()
                )));
            }
            Ok(Scenario {
                name: name_of(&path),
                claim,
                expect: cells[0].expect,
                judge: cells[0].judge,
                client: cells[0].client.clone(),
                finding,
                path,
            })
        })
        .collect()
}

fn name_of(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().to_string())
        .unwrap_or_default()
}

/// `scenario list`: a line for each, its name, what it should get, its source and claim.
pub fn list(dir: &Path) -> Result<Exit, HarnessError> {
    let scenarios = all(dir)?;
    let width = scenarios.iter().map(|s| s.name.len()).max().unwrap_or(4);
    let expects: Vec<String> = scenarios
        .iter()
        .map(|s| s.expect.judged_label(s.judge))
        .collect();
    let expect_width = expects.iter().map(String::len).max().unwrap_or(7);
    for (scenario, expect) in scenarios.iter().zip(&expects) {
        let role = match (&scenario.claim.cures, scenario.finding) {
            (Some(cured), _) => format!("cures {cured}"),
            (None, true) => format!("finding on {}", scenario.client),
            (None, false) => "hazard".to_string(),
        };
        stdoutln!(
            "{:<width$}  {:<expect_width$}  {}\n{:<width$}  {:<expect_width$}  {} ({})",
            scenario.name,
            expect,
            scenario.claim.claim,
            "",
            "",
            scenario.claim.source,
            role,
        );
    }
    Ok(Exit::Success)
}

/// What `scenario run` was asked for: the folder of scenarios, the seeds and how they run.
pub struct Asked<'a> {
    pub dir: &'a Path,
    pub runs: &'a SeedRuns,
    /// Stop each seed of a hazard at its first violation of an expected cause.
    pub stop_at_first: bool,
}

/// `scenario run NAME --seeds N`: runs seeds 1..=N and says in how many the claim held.
pub async fn run(
    asked: &Asked<'_>,
    name: &str,
    interrupt: CancellationToken,
) -> Result<Exit, HarnessError> {
    let (dir, runs) = (asked.dir, asked.runs);
    let scenarios = all(dir)?;
    let Some(path) = scenarios
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.path.clone())
    else {
        let known: Vec<String> = scenarios.into_iter().map(|s| s.name).collect();
        return Err(HarnessError::BadInput(format!(
            "no scenario `{name}` in {}; choose one of: {} (see `splitbrain scenario list`)",
            dir.display(),
            known.join(", ")
        )));
    };
    let folder = runs.results.join(format!(
        "scenario-{name}-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S")
    ));
    let outcome = run_one(asked, name, &path, &folder, &interrupt).await?;
    if interrupt.is_cancelled() {
        return Ok(Exit::Interrupted);
    }
    Ok(exit_of(&[outcome]))
}

/// `scenario run --all`: every scenario, one after another, and the claims page
/// (`results/claims-<time>/index.html`, with `claims.json`) over them.
pub async fn run_all(
    asked: &Asked<'_>,
    interrupt: CancellationToken,
) -> Result<Exit, HarnessError> {
    let runs = asked.runs;
    let scenarios = all(asked.dir)?;
    let started = chrono::Utc::now();
    let page = runs
        .results
        .join(format!("claims-{}", started.format("%Y%m%dT%H%M%S")));
    let mut outcomes = Vec::new();
    for scenario in &scenarios {
        if interrupt.is_cancelled() {
            break;
        }
        let folder = page.join(format!("scenario-{}", scenario.name));
        outcomes.push(run_one(asked, &scenario.name, &scenario.path, &folder, &interrupt).await?);
    }
    let when = started.format("%Y-%m-%d %H:%M UTC").to_string();
    let html = claims::render(&outcomes, &when, runs.seeds as usize, runs.parallel);
    let json = serde_json::to_string_pretty(&outcomes).map_err(anyhow::Error::from)?;
    std::fs::write(page.join("index.html"), html).map_err(anyhow::Error::from)?;
    std::fs::write(page.join("claims.json"), json).map_err(anyhow::Error::from)?;
    let held = outcomes.iter().filter(|o| o.held).count();
    stdoutln!(
        "\nthe article, checked: {held} of {} claims reproduced -> {}",
        outcomes.len(),
        page.join("index.html").display()
    );
    for outcome in outcomes.iter().filter(|o| !o.held) {
        stdoutln!(
            "  NOT REPRODUCED: {} ({} in {} of {} seeds)",
            outcome.name,
            outcome.expect.judged_label(outcome.judge),
            outcome.met,
            outcome.seeds
        );
    }
    if interrupt.is_cancelled() {
        return Ok(Exit::Interrupted);
    }
    Ok(exit_of(&outcomes))
}

/// 0 when every claim held, 1 when one did not.
fn exit_of(outcomes: &[ClaimOutcome]) -> Exit {
    if outcomes.iter().all(|o| o.held) {
        Exit::Success
    } else {
        Exit::Verdict(splitbrain_checker::Valid::False)
    }
}

/// Runs the scenario at `path` over seeds 1..=`asked.runs.seeds` into `folder`, prints its table
/// and whether its claim held, and returns what the claims page shows of it.
async fn run_one(
    asked: &Asked<'_>,
    name: &str,
    path: &Path,
    folder: &Path,
    interrupt: &CancellationToken,
) -> Result<ClaimOutcome, HarnessError> {
    let seeds: Vec<u64> = (1..=asked.runs.seeds).collect();
    let (claim, cells) = matrix::load_scenario(path, &seeds)?;
    let cells = matrix::stopping_at_first(cells, asked.stop_at_first);
    let parallel = asked.runs.parallel;
    run_claim(name, claim, cells, path, folder, parallel, interrupt).await
}

/// Runs a claim's `cells` (one a seed, read from `file`; `parallel` at once) into `folder`,
/// prints their table and whether the claim held, and returns what a page of claims shows.
pub async fn run_claim(
    name: &str,
    claim: Claim,
    cells: Vec<matrix::Cell>,
    file: &Path,
    folder: &Path,
    parallel: usize,
    interrupt: &CancellationToken,
) -> Result<ClaimOutcome, HarnessError> {
    let seeds = cells.len();
    let (expect, judge) = (cells[0].expect, cells[0].judge);
    let options = MatrixOptions {
        file: file.to_path_buf(),
        results: folder.parent().unwrap_or(Path::new(".")).to_path_buf(),
        junit: None,
        shard: None,
        parallel,
    };
    let folder_name = folder
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let total = cells.len();
    let started = std::time::Instant::now();
    let (record, out) = matrix::run_cells(&options, &folder_name, cells, total, interrupt).await?;
    stdout!("{}", matrix::table(&record, &out));
    let met: Vec<&matrix::CellOutcome> =
        record.cells.iter().filter(|c| c.met == Met::Yes).collect();
    let held = reproduced(expect, met.len(), seeds);
    stdoutln!(
        "\nscenario {name}: {}\n  expected {} in {} of {} seeds; got it in {}: {}",
        claim.claim,
        expect.judged_label(judge),
        needed(expect, seeds),
        seeds,
        met.len(),
        if held {
            "the claim holds"
        } else {
            "NOT REPRODUCED"
        }
    );
    let every_run: Vec<Results> = record
        .cells
        .iter()
        .filter_map(|cell| cell.run_dir.as_ref())
        .filter_map(|run| RunDir::at(&out.join(run)).results())
        .collect();
    let runs: Vec<Results> = met
        .iter()
        .filter_map(|cell| cell.run_dir.as_ref())
        .filter_map(|run| RunDir::at(&out.join(run)).results())
        .collect();
    Ok(ClaimOutcome {
        name: name.to_string(),
        expect,
        judge,
        met: met.len(),
        seeds,
        parallel,
        held,
        seconds: started.elapsed().as_secs_f64(),
        seeds_page: format!("{folder_name}/index.html"),
        shown_by: met
            .iter()
            .find_map(|cell| cell.run_dir.as_ref())
            .map(|run| format!("{folder_name}/{run}/report.html")),
        figure: claims::figure(&runs, expect, judge),
        verdicts: claims::verdicts(&record.cells),
        causes: claims::causes(&every_run),
        unknown_runs: record
            .cells
            .iter()
            .filter(|cell| cell.verdict == Some(splitbrain_checker::Valid::Unknown))
            .filter_map(|cell| cell.run_dir.as_ref())
            .map(|run| out.join(run))
            .collect(),
        claim,
    })
}

/// How many of `seeds` must meet the expectation: all for a cure (`valid`), nine in ten
/// (rounded up) for a hazard or a possible double grant, whose timing a busy machine may miss
/// now and then.
fn needed(expect: Expect, seeds: usize) -> usize {
    match expect {
        Expect::Invalid | Expect::Unknown => (seeds * 9).div_ceil(10),
        Expect::Valid | Expect::Any => seeds,
    }
}

fn reproduced(expect: Expect, met: usize, seeds: usize) -> bool {
    met >= needed(expect, seeds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repository_scenarios() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
    }

    #[test]
    fn every_scenario_in_the_repository_reads_and_names_its_source() {
        let scenarios = all(&repository_scenarios()).unwrap();
        assert!(scenarios.len() >= 8, "{}", scenarios.len());
        for scenario in &scenarios {
            assert!(!scenario.claim.claim.is_empty(), "{}", scenario.name);
            assert!(!scenario.claim.source.is_empty(), "{}", scenario.name);
            // A cure is valid; a hazard is what a run finds invalid.
            let cure = scenario.claim.cures.is_some();
            let expected = if cure { Expect::Valid } else { Expect::Invalid };
            assert_eq!(scenario.expect, expected, "{}", scenario.name);
        }
    }

    #[test]
    fn a_hazard_needs_nine_seeds_in_ten_and_a_cure_every_seed() {
        assert_eq!(needed(Expect::Invalid, 10), 9);
        assert_eq!(needed(Expect::Invalid, 1), 1);
        assert_eq!(needed(Expect::Invalid, 3), 3);
        assert_eq!(needed(Expect::Invalid, 20), 18);
        assert_eq!(needed(Expect::Valid, 10), 10);
        assert!(reproduced(Expect::Invalid, 9, 10));
        assert!(!reproduced(Expect::Valid, 9, 10));
    }

    #[test]
    fn a_scenario_file_is_one_group_with_a_claim() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let group = "[[group]]\ndeployments = [\"single\"]\nclients = [\"set-nx-px\"]\n\
                     faults = [\"none\"]\nexpect = \"valid\"\n";
        let bare = write("bare.toml", group);
        let error = matrix::load_scenario(&bare, &[1])
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("add a [scenario] table"), "{error}");
        let two = write(
            "two.toml",
            &format!("[scenario]\nclaim = \"c\"\nsource = \"s\"\n\n{group}{group}"),
        );
        let error = matrix::load_scenario(&two, &[1]).err().unwrap().to_string();
        assert!(error.contains("one [[group]]"), "{error}");
        let wide = write(
            "wide.toml",
            &format!(
                "[scenario]\nclaim = \"c\"\nsource = \"s\"\n\n{}",
                group.replace("[\"none\"]", "[\"none\", \"kill\"]")
            ),
        );
        let error = matrix::load_scenario(&wide, &[1])
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("one deployment, client"), "{error}");
        let seeded = write(
            "seeded.toml",
            &format!("[scenario]\nclaim = \"c\"\nsource = \"s\"\n\n{group}seeds = [1]\n"),
        );
        let error = matrix::load_scenario(&seeded, &[1])
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("seeded.toml:10: a scenario takes its seeds"),
            "{error}"
        );
        let vague = write(
            "vague.toml",
            &format!(
                "[scenario]\nclaim = \"c\"\nsource = \"s\"\n\n{}",
                group.replace("\"valid\"", "\"any\"")
            ),
        );
        let error = matrix::load_scenario(&vague, &[1])
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("vague.toml:9: a scenario claims a verdict"),
            "{error}"
        );
        let good = write(
            "good.toml",
            &format!("[scenario]\nclaim = \"c\"\nsource = \"s\"\n\n{group}"),
        );
        let (claim, cells) = matrix::load_scenario(&good, &[1, 2, 3]).unwrap();
        assert_eq!(claim.claim, "c");
        let seeds: Vec<u64> = cells.iter().map(|c| c.seed).collect();
        assert_eq!(seeds, [1, 2, 3]);
        assert_eq!(cells[0].judge, Judge::Verdict, "by default");
        let judged = |judge: &str| {
            let text = format!(
                "[scenario]\nclaim = \"c\"\nsource = \"s\"\n\n{group}judge = \"{judge}\"\n"
            );
            matrix::load_scenario(&write("judged.toml", &text), &[1])
        };
        assert_eq!(judged("leases").unwrap().1[0].judge, Judge::Leases);
        assert_eq!(judged("livelock").unwrap().1[0].judge, Judge::Livelock);
        assert_eq!(judged("starvation").unwrap().1[0].judge, Judge::Starvation);
        assert_eq!(judged("outage").unwrap().1[0].judge, Judge::Outage);
        let error = judged("zombies").err().unwrap().to_string();
        assert!(
            error.contains("judged.toml:10")
                && error.contains(
                    "expected one of `verdict`, `leases`, `livelock`, `starvation`, `outage`"
                ),
            "{error}"
        );
    }
}
