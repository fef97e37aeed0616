//! The command line. Parsing only: meaning and validation live in [`crate::spec`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde::{Deserialize, Serialize};

use crate::spec::parse::{count, duration};
use crate::spec::TestSpec;

/// How many violations of each kind a run's summary spells out; its report shows them all.
pub const SHOWN_AFTER_A_RUN: usize = 3;

/// The folder scenarios are read from, unless `--dir` says otherwise.
pub const SCENARIOS: &str = "scenarios";

/// A Jepsen-style chaos harness for distributed locks: Redis, and the etcd, ZooKeeper,
/// PostgreSQL and MariaDB locks people are told to use instead.
#[derive(Debug, Parser)]
#[command(
    name = "splitbrain",
    version,
    about,
    max_term_width = 100,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// What `check` does, for `--help`; main parses `check` on its own, with this.
pub const CHECK_ABOUT: &str = "Check a stored history.jsonl (or a Jepsen EDN history) again: \
print the verdict and every finding, and write results.json beside the history";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a deployment, run a workload against it under faults, check the history.
    Run(Box<RunArgs>),
    #[command(about = CHECK_ABOUT)]
    Check(CheckArgs),
    /// Run every cell of a matrix file, each against the verdict it should get.
    Matrix(MatrixArgs),
    /// The article's claims, each a named scenario: list them, or run one over seeds.
    Scenario(ScenarioArgs),
    /// The smallest fault schedule that still fails a stored failing run, by delta debugging
    /// over its faults, their targets and lengths; written as a scenario file.
    Shrink(ShrinkArgs),
    /// Real lock libraries, each an exec adapter of the catalog (adapters/<name>/) that
    /// `--client lib:NAME` runs, installed on first use into splitbrain's own cache.
    Library {
        #[command(subcommand)]
        command: LibraryCommand,
    },
    /// Build every server's image, the storage image and their Debian base, locally.
    Images {
        #[command(subcommand)]
        command: ImagesCommand,
    },
    /// Write a stored run's report.html again, or with --index the results folder's
    /// index.html; `report merge` joins matrix shards into one summary.
    Report(ReportArgs),
    /// Serve the results folder on 127.0.0.1, to browse the reports.
    Serve(ServeArgs),
    /// Remove the containers, networks and client programs of runs whose harness is gone.
    Clean {
        /// Only this run's (its id is printed at the start of the run and kept in test.json).
        #[arg(long)]
        run: Option<String>,
        /// Also those of runs still going (their harness alive, here or on another machine
        /// sharing the Docker engine).
        #[arg(long)]
        force: bool,
    },
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell, e.g.
    /// `source <(splitbrain completions bash)` in ~/.bashrc.
    Completions { shell: clap_complete::Shell },
    /// Write the man pages (splitbrain.1, and splitbrain-run.1 and so on for each command)
    /// into a folder, e.g. `splitbrain man --out ~/.cargo/share/man/man1` (where `man` looks
    /// for the programs in ~/.cargo/bin), then `man splitbrain`.
    Man {
        /// The folder to write them in (made if missing).
        #[arg(long, default_value = ".")]
        out: PathBuf,
    },
    /// The reaper a run starts: removes what its owner made once the owner's pipe closes.
    #[command(hide = true)]
    Reap {
        #[arg(long)]
        owner: String,
    },
}

#[derive(Debug, Args)]
pub struct ShrinkArgs {
    /// The failing run's folder (under results/): invalid, or unknown because of a possible
    /// double grant.
    pub run_dir: PathBuf,
    /// Replays of each candidate schedule; a candidate fails when most of them do.
    #[arg(long, default_value_t = 3, value_parser = count)]
    pub replays: usize,
    /// Replays of the result, for its reproduction rate.
    #[arg(long, default_value_t = 5, value_parser = count)]
    pub final_replays: usize,
    /// Where the candidates' runs and the scenario file go.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Print only the trials and the result, no progress.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum LibraryCommand {
    /// Every library: its version, language, the deployments it is written for, what kind of
    /// lock it is, whether it renews and returns fencing tokens, and whether it is installed.
    List,
    /// A library's report card: every scenario of the catalog whose hazard applies to its kind
    /// of lock, and a no-fault control, over seeds 1..=N with the library as the client; exits
    /// 0 when each got what the library's design predicts.
    Test {
        /// The library, as `library list` names it (`redis-py` or `lib:redis-py`).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        name: Option<String>,
        /// Every library, and the page of all cards (results/libraries-<time>/index.html).
        #[arg(long)]
        all: bool,
        /// Only this line of the card: `control`, or a scenario's name; repeat it for several.
        /// Every line by default.
        #[arg(long = "check", value_name = "CHECK")]
        checks: Vec<String>,
        /// The folder of the catalog's scenario files the cards run.
        #[arg(long, default_value = SCENARIOS)]
        scenarios: PathBuf,
        /// Run every seed of every line its full time. By default a seed of a hazard or a
        /// finding stops at its first violation explained by a cause the line expects (`run
        /// --stop-at-first`); controls and cures always run their full time.
        #[arg(long)]
        full_time: bool,
        #[command(flatten)]
        runs: SeedRuns,
    },
}

#[derive(Debug, Subcommand)]
pub enum ImagesCommand {
    /// Build the images now, even if they exist.
    Build,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The run: its deployment, client, workload, faults and limits, as test.json stores it.
    #[command(flatten)]
    pub spec: TestSpec,
    /// Print only errors and the summary, no progress.
    #[arg(long)]
    pub quiet: bool,
    /// Spell out at most N violations of each kind in the summary (results.json and the
    /// report have them all).
    #[arg(long, default_value_t = SHOWN_AFTER_A_RUN, value_parser = count)]
    pub limit: usize,
    /// Run a stored run again: its options and its exact fault schedule (each fault's
    /// targets, parameters and times). The clients' timing is not replayed. Takes no other
    /// run options but --results, --quiet and --replays.
    #[arg(long, value_name = "RUN_DIR")]
    pub replay: Option<PathBuf>,
    /// With --replay: how many times to run it again (the clients' timing differs each time).
    #[arg(long, default_value_t = 1, requires = "replay", value_parser = count)]
    pub replays: usize,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A history.jsonl, a run directory that holds one, or a Jepsen/knossos EDN history.
    pub history: PathBuf,
    /// Check linearizability with this model (register, cas-register, mutex, owner-mutex,
    /// set, counter, multi-register); by default the one the operations call for. EDN
    /// histories need one.
    #[arg(long)]
    pub model: Option<String>,
    /// How long the linearizability search may run before its verdict is unknown.
    #[arg(long, default_value = "30s", value_parser = duration, allow_hyphen_values = true)]
    pub time_limit: Duration,
    /// How much memory (MiB) the linearizability search may hold before its verdict is
    /// unknown.
    #[arg(long, default_value_t = 1024)]
    pub memory_limit_mib: usize,
    /// EDN ops carry Jepsen's independent `[key value]` tuples: check each key on its own.
    #[arg(long)]
    pub independent: bool,
    /// Where results.json (and report.html) go; by default the history's own folder.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write report.html (JSON-lines histories only).
    #[arg(long)]
    pub report: bool,
    /// Print results.json on stdout instead of the summary, for scripts.
    #[arg(long)]
    pub json: bool,
    /// Spell out at most N findings of each kind (default: all that results.json lists).
    #[arg(long, value_parser = count)]
    pub limit: Option<usize>,
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Join the folders that `splitbrain matrix --shard` wrote into one summary.
    Merge {
        /// The shards' folders (results/matrix-...-shard-i-of-n).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where the joined index.html and matrix.json go.
        #[arg(long, default_value = "results/matrix-merged")]
        out: PathBuf,
        /// Also write the joined outcome as JUnit XML.
        #[arg(long)]
        junit: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// The matrix: a TOML file of groups of cells (see matrices/smoke.toml).
    pub file: PathBuf,
    /// Also write the outcome as JUnit XML, one test case per cell.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Run only slice i of n (every n-th cell from the i-th), for CI runners side by side.
    #[arg(long)]
    pub shard: Option<Shard>,
    /// How many cells run at once on the one Docker engine. Default: one per core, at most
    /// one per 2 GiB of available memory.
    #[arg(long, value_parser = count)]
    pub parallel: Option<usize>,
    /// Where runs and the matrix summary (matrix-<time>/) are stored.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Print only the summary table.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ScenarioArgs {
    #[command(subcommand)]
    pub command: ScenarioCommand,
    /// The folder of scenario files (NAME.toml).
    #[arg(long, global = true, default_value = SCENARIOS)]
    pub dir: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum ScenarioCommand {
    /// Every scenario: its name, the verdict it should get, its claim and where it comes from.
    List,
    /// Run one scenario over seeds 1..=N and say in how many its claim held (a hazard needs
    /// nine in ten, a cure every one).
    Run {
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        name: Option<String>,
        /// Every scenario, and the claims page over them (results/claims-<time>/index.html).
        #[arg(long)]
        all: bool,
        /// Stop each seed of a hazard at its first violation explained by a cause the
        /// scenario expects (`run --stop-at-first`); cures run their full time.
        #[arg(long)]
        stop_at_first: bool,
        #[command(flatten)]
        runs: SeedRuns,
    },
}

/// How `scenario run` and `library test` run each claim's seeds.
#[derive(Debug, Clone, Args)]
pub struct SeedRuns {
    /// Run seeds 1..=N of each scenario.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub seeds: u64,
    /// How many seeds of a scenario run at once on the one Docker engine. One by default: a
    /// detection share is measured one seed at a time, and seeds side by side each see a
    /// busier machine (faster, and a harder test for the timing of faults and clients).
    #[arg(long, default_value_t = 1, value_parser = count)]
    pub parallel: usize,
    /// Where the runs and the summary (scenario-NAME-<time>/, library-NAME-<time>/) go.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Print only the summary.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ReportArgs {
    #[command(subcommand)]
    pub command: Option<ReportCommand>,
    /// A run folder (results/<test>/<time>); with --index, a results folder (default: results).
    pub dir: Option<PathBuf>,
    /// Write index.html, listing every run stored in the results folder.
    #[arg(long)]
    pub index: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The port to listen on, on 127.0.0.1 (0: any free one).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// The results folder to serve.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
}

/// Which slice of the cells to run: the `index`-th of `count` (from 1), every `count`-th cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let parsed = text
            .split_once('/')
            .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
        match parsed {
            Some((index, count)) if index >= 1 && index <= count => Ok(Shard { index, count }),
            _ => Err(format!(
                "`{text}` is not a shard: write i/n with 1 <= i <= n, like 2/4"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn run_alone_means_redlock_under_kills_for_a_minute() {
        let cli = Cli::try_parse_from(["splitbrain", "run"]).unwrap();
        let Command::Run(args) = cli.command else {
            panic!("not a run")
        };
        let spec = &args.spec;
        assert_eq!(spec.deployment().name(), "redlock");
        assert!(
            spec.client.client.is_none(),
            "the deployment's default, resolved later"
        );
        assert_eq!(spec.fault_names().as_deref(), Some("kill"));
        assert_eq!(spec.time_limit(), Duration::from_secs(60));
        assert_eq!(spec.nemesis.nemesis_interval, None);
    }
}
