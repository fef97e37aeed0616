//! A matrix file: groups of cells, each group the cross product of the deployments, clients,
//! workloads, faults and seeds it lists, with the verdict every one of its cells should get.
//!
//! ```toml
//! [defaults]                      # `splitbrain run` options for every cell
//! time-limit = "10s"
//!
//! [[group]]
//! deployments = ["single", "sentinel"]
//! clients = ["set-nx-px"]
//! faults = ["none", "kill"]       # --nemesis values; "kill,pause" is one cell with both
//! seeds = [1, 2]
//! expect = "valid"                # valid | invalid | any
//! expect-fault-on-holder = true   # and some fault must have reached a lock's holder
//! expect-causes = ["zombie"]      # and every violation explained by one of these mechanisms
//! forbid-causes = ["unexplained"] # and no violation explained by one of these
//! judge = "leases"                # held to the lock's leases only, "livelock", "starvation" or "outage" (default: the verdict)
//! options = { ttl = "2s" }        # more run options, over the defaults
//!
//! [[fault]]                       # or: faults at fixed times, in every cell (`run --script`)
//! at = "5s"
//! fault = "kill"
//! targets = ["n1"]
//! for = "1s"
//! ```
//!
//! A list left out is the run's default. Every cell is checked as `splitbrain run` would check
//! it before any cell starts, and a mistake is reported at its line in the file.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use splitbrain_checker::explain::Cause;

use clap::Parser;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::cli::{Cli, Command};
use crate::error::HarnessError;
use crate::spec::TestSpec;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixFile {
    /// What a scenario file claims (see [`crate::scenario`]); a matrix has none.
    #[serde(default)]
    scenario: Option<Spanned<Claim>>,
    #[serde(default)]
    defaults: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
    #[serde(default)]
    group: Vec<Spanned<Group>>,
    /// Faults at fixed times for every cell, instead of `faults` (read by `run --script`).
    #[serde(default)]
    fault: Vec<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Group {
    #[serde(default)]
    deployments: Vec<Spanned<String>>,
    #[serde(default)]
    clients: Vec<Spanned<String>>,
    #[serde(default)]
    workloads: Vec<Spanned<String>>,
    #[serde(default)]
    faults: Vec<Spanned<String>>,
    #[serde(default)]
    seeds: Vec<Spanned<u64>>,
    expect: Spanned<Expect>,
    /// Whether a cell also needs a fault to have reached a lock's holder during its lease
    /// (the coverage a `valid` verdict rests on).
    #[serde(default, rename = "expect-fault-on-holder")]
    expect_fault_on_holder: bool,
    /// The mechanisms (`splitbrain_checker::explain::Cause`) the cell's violations must all be
    /// explained by: a cause named wrongly fails the cell as a wrong verdict would.
    #[serde(default, rename = "expect-causes")]
    expect_causes: Vec<Cause>,
    /// Mechanisms no violation of the cell may be explained by: a sweep that takes whatever
    /// verdict comes forbids `unexplained`, which is splitbrain's gap, not the system's.
    #[serde(default, rename = "forbid-causes")]
    forbid_causes: Vec<Cause>,
    #[serde(default)]
    judge: Judge,
    #[serde(default)]
    options: BTreeMap<Spanned<String>, Spanned<toml::Value>>,
}

/// A scenario's claim: what it shows, in one sentence, and where the claim comes from.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub claim: String,
    pub source: String,
    /// The scenario whose hazard this one cures, where it is a cure.
    #[serde(default)]
    pub cures: Option<String>,
    /// For a finding: lines of a real run that show it (the violation as the summary words it,
    /// the ops of the history it rests on), for the findings page.
    #[serde(default, rename = "shown-by", skip_serializing_if = "Option::is_none")]
    pub shown_by: Option<String>,
    /// For a finding with faults: why none of them can go, and none can be shorter or fewer,
    /// as `shrink` or a run without it showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fewest: Option<String>,
}

/// The verdict a cell should get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    Valid,
    Invalid,
    /// The checkers could not decide because an acquire whose outcome nobody knows overlapped
    /// another's grant (a possible double grant); unknown for another reason does not count.
    /// A library that tells its caller an acquire failed while a majority granted it shows
    /// this, and `shrink` keeps it.
    Unknown,
    /// Any verdict, as long as the run completes.
    Any,
}

impl Expect {
    pub fn label(self) -> &'static str {
        match self {
            Expect::Valid => "valid",
            Expect::Invalid => "invalid",
            Expect::Unknown => "unknown",
            Expect::Any => "any",
        }
    }

    /// The label with what it is held to, where that is not the verdict: `valid (leases)`.
    pub fn judged_label(self, judge: Judge) -> String {
        match judge {
            Judge::Verdict => self.label().to_string(),
            Judge::Leases => format!("{} (leases)", self.label()),
            Judge::Livelock => format!("{} (livelock)", self.label()),
            Judge::Starvation => format!("{} (starvation)", self.label()),
            Judge::Outage => format!("{} (outage)", self.label()),
        }
    }
}

/// What a cell's expectation is held to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Judge {
    /// The run's verdict: every checker's.
    #[default]
    Verdict,
    /// The lock's leases alone: invalid when it handed out two live leases at once (a `lease`
    /// double grant), valid when it never did. A holder that outlived its lease (a `stale`
    /// double grant, a zombie) is a claim of its own, which a claim about the lock itself (a
    /// release that frees another's lock) must not rest on.
    Leases,
    /// Whether contenders livelocked on split votes: invalid when every contender collided
    /// [`LIVELOCK_ROUNDS`](super::LIVELOCK_ROUNDS) times in a row or more (Redlock's retry
    /// without jitter), valid when the lock was granted and they never did. A run whose
    /// verdict is invalid stays invalid: a live lock must still be a safe one.
    Livelock,
    /// Whether the lock was fair to its clients, as the `starvation` checker (beside the
    /// verdict) says: invalid when some client was starved, valid when the lock was granted
    /// and nobody was. A run whose verdict is invalid stays invalid.
    Starvation,
    /// Whether the lock stayed available: invalid when it was free and asked for, and nobody
    /// was granted it, for [`OUTAGE_TTLS`](splitbrain_checker::acquisition_stats::OUTAGE_TTLS) TTLs or more (the acquisition
    /// statistics' longest outage), valid when it was granted and never was. For a lock that
    /// promises to survive the faults of the run (Redlock with a minority of its masters
    /// down). A run whose verdict is invalid stays invalid.
    Outage,
}

/// One run of the matrix.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    /// Its place in the whole matrix (before sharding), from 1.
    pub number: usize,
    /// `deployment/client/workload/faults/seed`, unique in the matrix.
    pub name: String,
    pub deployment: String,
    pub client: String,
    pub workload: String,
    pub faults: String,
    pub seed: u64,
    pub expect: Expect,
    /// The cell is met only if some fault reached a lock's holder during its lease.
    #[serde(default)]
    pub expect_fault_on_holder: bool,
    /// The cell is met only if every violation found is explained by one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect_causes: Vec<Cause>,
    /// The cell is not met if any violation found is explained by one of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbid_causes: Vec<Cause>,
    #[serde(default)]
    pub judge: Judge,
    /// How long the run's workload lasts, for the time-left estimate.
    pub time_limit_secs: f64,
    /// The `splitbrain run` arguments, without `--results`.
    pub args: Vec<String>,
}

impl Cell {
    /// What the cell expects, with what it is held to: `invalid`, `valid (leases)`.
    pub fn expected(&self) -> String {
        self.expect.judged_label(self.judge)
    }

    /// The cell stopped at the first violation explained by a cause it expects
    /// (`--stop-at-first`), where it expects a hazard with named causes and does not say
    /// otherwise already; any other cell (a control, a cure, a hazard of any cause) runs its
    /// full time, as it must to show that nothing happened.
    pub fn stopping_at_first(mut self) -> Cell {
        let asked = self.args.iter().any(|a| a == "--stop-at-first");
        if self.expect == Expect::Invalid && !self.expect_causes.is_empty() && !asked {
            let causes: Vec<String> = self.expect_causes.iter().map(|c| c.key()).collect();
            self.args
                .extend(["--stop-at-first".to_string(), causes.join(",")]);
        }
        self
    }
}

/// `cells`, each [`Cell::stopping_at_first`] where `stop` asks for it.
pub fn stopping_at_first(cells: Vec<Cell>, stop: bool) -> Vec<Cell> {
    match stop {
        true => cells.into_iter().map(Cell::stopping_at_first).collect(),
        false => cells,
    }
}

/// Reads `path` and expands it into cells, each one checked as `splitbrain run` checks its
/// arguments; nothing runs.
pub fn load(path: &Path) -> Result<Vec<Cell>, HarnessError> {
    let (text, file) = read(path)?;
    expand(path, &text, &file, None)
}

/// Reads the scenario file `path`: its claim, and its one group's cells over `seeds`.
pub fn load_scenario(path: &Path, seeds: &[u64]) -> Result<(Claim, Vec<Cell>), HarnessError> {
    load_scenario_as(path, seeds, None)
}

/// [`load_scenario`], with `client` in place of the scenario's own where given: a library's
/// report card runs the catalog's scenarios with the library as the client.
pub fn load_scenario_as(
    path: &Path,
    seeds: &[u64],
    client: Option<&str>,
) -> Result<(Claim, Vec<Cell>), HarnessError> {
    let (text, mut file) = read(path)?;
    let at = located(path, &text);
    let Some(claim) = file.scenario.clone() else {
        return Err(at(
            0..0,
            "not a scenario: add a [scenario] table with its claim and source",
        ));
    };
    if file.group.len() != 1 {
        return Err(at(
            claim.span(),
            "a scenario is one [[group]]: one deployment, client, workload and faults",
        ));
    }
    let expect = &file.group[0].get_ref().expect;
    if *expect.get_ref() == Expect::Any {
        return Err(at(
            expect.span(),
            "a scenario claims a verdict: expect `invalid` (a hazard), `valid` (a cure) or \
             `unknown` (a possible double grant)",
        ));
    }
    if let Some(listed) = file.group[0].get_ref().seeds.first() {
        return Err(at(
            listed.span(),
            "a scenario takes its seeds from `scenario run --seeds N`; remove `seeds`",
        ));
    }
    if let Some(client) = client {
        let group = file.group[0].get_mut();
        let span = group.clients.first().map_or(0..0, Spanned::span);
        group.clients = vec![Spanned::new(span, client.to_string())];
    }
    let cells = expand(path, &text, &file, Some(seeds))?;
    if cells.len() != seeds.len() {
        return Err(at(
            file.group[0].span(),
            "a scenario's group lists one deployment, client, workload and faults each",
        ));
    }
    Ok((claim.get_ref().clone(), cells))
}

/// A file's text and what it says, or why it cannot be read.
fn read(path: &Path) -> Result<(String, MatrixFile), HarnessError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        HarnessError::BadInput(format!(
            "cannot read the matrix file {}: {e}",
            path.display()
        ))
    })?;
    let file: MatrixFile = toml::from_str(&text).map_err(|e| {
        let message = e.message().trim().to_string();
        located(path, &text)(e.span().unwrap_or(0..0), &message)
    })?;
    Ok((text, file))
}

/// An error at a place in the file: `path:line: message`.
fn located<'a>(path: &'a Path, text: &'a str) -> impl Fn(Range<usize>, &str) -> HarnessError + 'a {
    move |span: Range<usize>, message: &str| {
        let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
        HarnessError::BadInput(format!("{}:{line}: {message}", path.display()))
    }
}

/// The file's cells, with `seeds` in place of every group's where given.
fn expand(
    path: &Path,
    text: &str,
    file: &MatrixFile,
    seeds: Option<&[u64]>,
) -> Result<Vec<Cell>, HarnessError> {
    let at = located(path, text);
    let defaults = options(&file.defaults).map_err(|(span, m)| at(span, &m))?;
    if file.group.is_empty() {
        return Err(at(
            0..0,
            "no cells: add a [[group]] with deployments, clients, faults, seeds and expect",
        ));
    }
    let mut cells: Vec<Cell> = Vec::new();
    for group in &file.group {
        let span = group.span();
        let group = group.get_ref();
        let mut options = defaults.clone();
        for (flag, value, span) in
            self::options(&group.options).map_err(|(span, m)| at(span, &m))?
        {
            options.retain(|(f, _, _)| *f != flag);
            options.push((flag, value, span));
        }
        let or_default = |list: &[Spanned<String>]| -> Vec<Option<Spanned<String>>> {
            if list.is_empty() {
                vec![None]
            } else {
                list.iter().cloned().map(Some).collect()
            }
        };
        let seeds: Vec<Option<u64>> = match seeds {
            Some(seeds) => seeds.iter().copied().map(Some).collect(),
            None if group.seeds.is_empty() => vec![None],
            None => group.seeds.iter().map(|s| Some(*s.get_ref())).collect(),
        };
        for deployment in or_default(&group.deployments) {
            for client in or_default(&group.clients) {
                for workload in or_default(&group.workloads) {
                    for faults in or_default(&group.faults) {
                        for seed in &seeds {
                            let choices = [
                                ("--deployment", &deployment),
                                ("--client", &client),
                                ("--workload", &workload),
                                ("--nemesis", &faults),
                            ];
                            let mut args: Vec<String> = vec!["run".into()];
                            for (flag, choice) in choices {
                                if let Some(value) = choice {
                                    args.extend([flag.to_string(), value.get_ref().clone()]);
                                }
                            }
                            if let Some(seed) = seed {
                                args.extend(["--seed".to_string(), seed.to_string()]);
                            }
                            if !file.fault.is_empty() {
                                args.extend(["--script".to_string(), path.display().to_string()]);
                            }
                            for (flag, value, _) in &options {
                                args.push(format!("--{flag}"));
                                args.extend(value.clone());
                            }
                            let spec = check(&args).map_err(|message| {
                                // Name the value or option the message is about, if it
                                // names one.
                                let culprit = choices
                                    .iter()
                                    .filter_map(|(_, choice)| choice.as_ref())
                                    .find(|v| message.contains(&format!("`{}`", v.get_ref())))
                                    .map(|value| value.span())
                                    .or_else(|| {
                                        options
                                            .iter()
                                            .find(|(flag, _, _)| {
                                                message.contains(&format!("--{flag}"))
                                            })
                                            .map(|(_, _, span)| span.clone())
                                    });
                                at(culprit.unwrap_or(span.clone()), &message)
                            })?;
                            let cell = cell_of(
                                cells.len() + 1,
                                &spec,
                                &args,
                                Held {
                                    expect: *group.expect.get_ref(),
                                    expect_fault_on_holder: group.expect_fault_on_holder,
                                    expect_causes: group.expect_causes.clone(),
                                    forbid_causes: group.forbid_causes.clone(),
                                    judge: group.judge,
                                },
                            );
                            if cells.iter().any(|c| c.name == cell.name) {
                                return Err(at(
                                    span.clone(),
                                    &format!("cell {} is in the matrix twice", cell.name),
                                ));
                            }
                            cells.push(cell);
                        }
                    }
                }
            }
        }
    }
    Ok(cells)
}

/// What a cell is held to.
struct Held {
    expect: Expect,
    expect_fault_on_holder: bool,
    expect_causes: Vec<Cause>,
    forbid_causes: Vec<Cause>,
    judge: Judge,
}

/// The cell numbered `number` that runs `splitbrain <args>`, checked as `spec`.
fn cell_of(number: usize, spec: &TestSpec, args: &[String], held: Held) -> Cell {
    // A data workload takes no lock client.
    let client = match spec.workload_kind().data {
        Some(_) => "-".to_string(),
        None => spec.client().to_string(),
    };
    let faults = match (&spec.nemesis.script, spec.fault_names()) {
        (Some(_), Some(names)) => format!("script:{names}"),
        (None, Some(names)) => names,
        (_, None) => "none".into(),
    };
    // A server other than the default, and fencing, make cells of their
    // own: `single@valkey-8.1`, `lock-set+fencing`.
    let server = spec.server();
    let name = format!(
        "{}{}/{}/{}{}/{}/seed-{}",
        spec.deployment().name(),
        if server.name() == spec.deployment().system().name() {
            String::new()
        } else {
            format!("@{}", server.name())
        },
        client,
        spec.workload_kind().name,
        if spec.workload.fencing {
            "+fencing"
        } else {
            ""
        },
        faults,
        spec.seed()
    );
    Cell {
        number,
        name,
        deployment: spec.deployment().name().to_string(),
        client,
        workload: spec.workload_kind().name.to_string(),
        faults: spec.fault_names().unwrap_or_default(),
        seed: spec.seed(),
        expect: held.expect,
        expect_fault_on_holder: held.expect_fault_on_holder,
        expect_causes: held.expect_causes,
        forbid_causes: held.forbid_causes,
        judge: held.judge,
        time_limit_secs: spec.time_limit().as_secs_f64(),
        args: args[1..].to_vec(),
    }
}

/// A no-fault control over `seeds`: `splitbrain run <args> --seed N`, each to be valid.
pub fn control(args: &[&str], seeds: &[u64]) -> Result<Vec<Cell>, HarnessError> {
    seeds
        .iter()
        .enumerate()
        .map(|(i, seed)| {
            let args: Vec<String> = std::iter::once("run")
                .chain(args.iter().copied())
                .map(str::to_string)
                .chain(["--seed".to_string(), seed.to_string()])
                .collect();
            let spec = check(&args).map_err(HarnessError::BadInput)?;
            let held = Held {
                expect: Expect::Valid,
                expect_fault_on_holder: false,
                expect_causes: Vec::new(),
                forbid_causes: Vec::new(),
                judge: Judge::Verdict,
            };
            Ok(cell_of(i + 1, &spec, &args, held))
        })
        .collect()
}

/// Run options as command-line words, with where each was written: `ttl = "2s"` is
/// `--ttl 2s`, `no-jitter = true` is `--no-jitter`. A table or list cannot be an option.
type Options = Vec<(String, Vec<String>, Range<usize>)>;

fn options(
    table: &BTreeMap<Spanned<String>, Spanned<toml::Value>>,
) -> Result<Options, (Range<usize>, String)> {
    let mut options = Vec::new();
    for (flag, value) in table {
        let words = match value.get_ref() {
            toml::Value::String(s) => vec![s.clone()],
            toml::Value::Integer(n) => vec![n.to_string()],
            toml::Value::Float(x) => vec![x.to_string()],
            toml::Value::Boolean(true) => Vec::new(),
            toml::Value::Boolean(false) => continue,
            _ => {
                return Err((
                    value.span(),
                    format!(
                        "option `{}` takes a string, a number or true, as on the command line",
                        flag.get_ref()
                    ),
                ))
            }
        };
        let reserved = [
            "results",
            "deployment",
            "client",
            "workload",
            "nemesis",
            "seed",
        ];
        if reserved.contains(&flag.get_ref().as_str()) {
            return Err((
                flag.span(),
                format!(
                    "option `{}` is set by the matrix itself; list it in the group \
                     (deployments, clients, workloads, faults, seeds)",
                    flag.get_ref()
                ),
            ));
        }
        options.push((flag.get_ref().clone(), words, flag.span()));
    }
    Ok(options)
}

/// Checks one cell's arguments as `splitbrain run` would.
pub(super) fn check(args: &[String]) -> Result<TestSpec, String> {
    let argv = std::iter::once("splitbrain".to_string()).chain(args.iter().cloned());
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        let rendered = e.render().to_string();
        rendered
            .lines()
            .next()
            .unwrap_or("bad arguments")
            .trim_start_matches("error: ")
            .to_string()
    })?;
    let Command::Run(run) = cli.command else {
        unreachable!("the matrix builds `run` commands");
    };
    run.spec.checked().map_err(|e| match e {
        HarnessError::BadInput(message) | HarnessError::Interrupted(message) => message,
        HarnessError::Crash(e) => e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Result<Vec<Cell>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.toml");
        std::fs::write(&path, text).unwrap();
        load(&path).map_err(|e| match e {
            HarnessError::BadInput(m) => m.replace(&path.display().to_string(), "m.toml"),
            e => panic!("{e}"),
        })
    }

    /// The repository's own matrices: every cell a run accepts, and none left to `any`
    /// without a comment saying why just above its group.
    #[test]
    fn the_shipped_matrices_load_and_every_any_says_why() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrices");
        for name in ["smoke.toml", "nightly.toml", "systems.toml"] {
            let path = dir.join(name);
            let cells = load(&path).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert!(!cells.is_empty(), "{name}");
            let text = std::fs::read_to_string(&path).unwrap();
            let parts: Vec<&str> = text.split("[[group]]").collect();
            for (i, pair) in parts.windows(2).enumerate() {
                let (before, group) = (pair[0], pair[1]);
                let said = before.trim_end().lines().last().unwrap_or_default();
                assert!(
                    !group.contains("expect = \"any\"") || said.starts_with('#'),
                    "{name}: group {} expects any with no comment on why",
                    i + 1
                );
            }
        }
    }

    #[test]
    fn a_group_is_the_cross_product_of_its_lists() {
        let cells = load_text(
            r#"
[defaults]
time-limit = "5s"

[[group]]
deployments = ["single", "sentinel"]
clients = ["set-nx-px"]
faults = ["none", "kill,pause"]
seeds = [1, 2]
expect = "any"
options = { ttl = "1s", time-limit = "7s" }
"#,
        )
        .unwrap();
        assert_eq!(cells.len(), 8);
        assert_eq!(cells[0].name, "single/set-nx-px/lock/none/seed-1");
        assert_eq!(cells[3].name, "single/set-nx-px/lock/kill,pause/seed-2");
        assert_eq!(cells[7].number, 8);
        let args = cells[0].args.join(" ");
        assert!(args.contains("--ttl 1s"), "{args}");
        // The group's options win over the defaults.
        assert!(
            args.contains("--time-limit 7s") && !args.contains("5s"),
            "{args}"
        );
    }

    #[test]
    fn only_a_hazard_with_named_causes_stops_at_its_first_violation() {
        let cells = load_text(
            r#"
[[group]]
deployments = ["single"]
clients = ["set-nx-px"]
faults = ["client-pause"]
expect = "invalid"
expect-causes = ["zombie", "slow-holder"]

[[group]]
deployments = ["single"]
clients = ["set-nx-px"]
faults = ["kill"]
expect = "invalid"

[[group]]
deployments = ["single"]
clients = ["fenced"]
faults = ["client-pause"]
expect = "valid"

[[group]]
deployments = ["single"]
clients = ["set-nx-px"]
faults = ["pause"]
expect = "invalid"
expect-causes = ["zombie"]
options = { stop-at-first = "hijack" }
"#,
        )
        .unwrap();
        let args: Vec<String> = cells
            .into_iter()
            .map(|cell| cell.stopping_at_first().args.join(" "))
            .collect();
        assert!(
            args[0].ends_with("--stop-at-first zombie,slow-holder"),
            "{}",
            args[0]
        );
        for unnamed_or_cure in &args[1..3] {
            assert!(
                !unnamed_or_cure.contains("--stop-at-first"),
                "{unnamed_or_cure}"
            );
        }
        assert_eq!(args[3].matches("--stop-at-first").count(), 1, "{}", args[3]);
        assert!(args[3].contains("--stop-at-first hijack"), "its own wins");
    }

    #[test]
    fn a_typo_in_a_deployment_names_its_line() {
        let message =
            load_text("[[group]]\ndeployments = [\"single\",\n  \"sentinal\"]\nexpect = \"any\"\n")
                .unwrap_err();
        assert!(message.starts_with("m.toml:3: "), "{message}");
        assert!(message.contains("sentinal"), "{message}");
    }

    #[test]
    fn an_unknown_key_names_its_line() {
        let message =
            load_text("[[group]]\nexpect = \"any\"\nclient = [\"set-nx-px\"]\n").unwrap_err();
        assert!(message.starts_with("m.toml:3: "), "{message}");
        assert!(message.contains("client"), "{message}");
    }

    #[test]
    fn an_unknown_option_and_a_bad_expect_are_refused() {
        let message =
            load_text("[[group]]\nexpect = \"any\"\noptions = { tll = \"1s\" }\n").unwrap_err();
        assert!(
            message.starts_with("m.toml:3: ") && message.contains("tll"),
            "{message}"
        );
        let message = load_text("[[group]]\nexpect = \"green\"\n").unwrap_err();
        assert!(message.starts_with("m.toml:2: "), "{message}");
        let message = load_text("[defaults]\nseed = 3\n").unwrap_err();
        assert!(message.contains("set by the matrix"), "{message}");
    }

    #[test]
    fn the_shipped_matrices_load() {
        for name in ["smoke", "nightly"] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("matrices")
                .join(format!("{name}.toml"));
            let cells = load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!cells.is_empty(), "{name}");
        }
    }

    #[test]
    fn an_empty_matrix_is_refused() {
        assert!(load_text("").unwrap_err().contains("no cells"));
    }
}
