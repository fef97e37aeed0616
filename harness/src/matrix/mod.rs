//! `splitbrain matrix`: many runs from one file, each cell with the verdict it should get, for
//! the nightly job that tells you in the morning that something changed.
//!
//! Every cell is a `splitbrain run` child process of its own, so that a cell that crashes,
//! hangs in teardown or is interrupted cannot take the rest of the matrix with it, and its
//! output goes to a log file beside its run folder. Cells run `--parallel N` at a time (by
//! default one per core, see [`default_parallel`]): each has its own run id, network and
//! results folder, so cells on one Docker engine do not collide, but they share the machine's
//! cores, and faults are timing-sensitive.

#[cfg(test)]
mod controls;
#[cfg(test)]
mod fault_sweep;
mod file;
mod html;
mod junit;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde::{Deserialize, Serialize};
use splitbrain_checker::acquisition_stats::{AcquisitionStats, OUTAGE_TTLS};
use splitbrain_checker::coverage::Coverage;
use splitbrain_checker::every::Sections;
use splitbrain_checker::explain::Cause;
use splitbrain_checker::lock_safety::LockSafety;
use splitbrain_checker::starvation::Starvation;
use splitbrain_checker::{Checked, Valid};
use tokio_util::sync::CancellationToken;

pub use file::stopping_at_first;
pub use file::{control, load_scenario, load_scenario_as, Cell, Claim, Expect, Judge};

use crate::cli::Shard;
use crate::error::{Exit, HarnessError};
use crate::progress;
use crate::store::{Results, RunDir};

impl Shard {
    /// Whether the cell numbered `number` (from 1) is this shard's.
    fn holds(self, number: usize) -> bool {
        (number - 1) % self.count == self.index - 1
    }
}

/// Whether a cell got the verdict it should have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Met {
    Yes,
    No,
    /// The run did not complete with a verdict.
    Error,
}

/// What one cell gave.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellOutcome {
    pub cell: Cell,
    pub verdict: Option<Valid>,
    /// The run's verdict line (`INVALID: 3 double grants`), or what went wrong.
    pub verdict_line: String,
    pub met: Met,
    pub seconds: f64,
    /// The cell's run folder, relative to the matrix folder, if the run made one.
    pub run_dir: Option<String>,
    /// The cell's output, relative to the matrix folder.
    pub log: String,
}

/// `matrix.json`: what a matrix (or one shard of it) ran and got.
#[derive(Debug, Serialize, Deserialize)]
pub struct MatrixRecord {
    pub file: String,
    pub started: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    pub cells: Vec<CellOutcome>,
}

/// How `splitbrain matrix` was asked to run.
pub struct MatrixOptions {
    pub file: PathBuf,
    pub results: PathBuf,
    pub junit: Option<PathBuf>,
    pub shard: Option<Shard>,
    /// How many cells run at once.
    pub parallel: usize,
}

/// How many cells run at once unless `--parallel` says: one per core, and no more than one
/// per 2 GiB of available memory (a five-node deployment, its clients and the harness stay
/// well under 1 GiB; the JVM of ZooKeeper nodes is the largest share).
pub fn default_parallel() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let by_memory = available_memory_bytes().map_or(cores, |bytes| (bytes >> 31) as usize);
    cores.min(by_memory).max(1)
}

/// `MemAvailable` of /proc/meminfo, where there is one.
fn available_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// Checks every cell, runs this shard's, writes `results/matrix-<time>/` and prints the table.
pub async fn run(
    options: MatrixOptions,
    interrupt: CancellationToken,
) -> Result<Exit, HarnessError> {
    let cells = file::load(&options.file)?;
    let total = cells.len();
    let mine: Vec<Cell> = match options.shard {
        Some(shard) => cells
            .into_iter()
            .filter(|c| shard.holds(c.number))
            .collect(),
        None => cells,
    };
    let name = format!(
        "matrix-{}{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S"),
        options
            .shard
            .map(|s| format!("-shard-{}-of-{}", s.index, s.count))
            .unwrap_or_default()
    );
    let (record, dir) = run_cells(&options, &name, mine, total, &interrupt).await?;
    stdout!("{}", table(&record, &dir));
    if interrupt.is_cancelled() {
        return Ok(Exit::Interrupted);
    }
    Ok(exit_of(&record))
}

/// Runs `cells` (of `total` in the file), `options.parallel` at a time, into
/// `results/<name>/`, and writes `matrix.json`, `index.html` and the JUnit file there; returns
/// what they got, in the file's order, and where.
pub async fn run_cells(
    options: &MatrixOptions,
    name: &str,
    cells: Vec<Cell>,
    total: usize,
    interrupt: &CancellationToken,
) -> Result<(MatrixRecord, PathBuf), HarnessError> {
    let started = chrono::Utc::now();
    let dir = options.results.join(name);
    std::fs::create_dir_all(dir.join("logs")).map_err(|e| {
        HarnessError::BadInput(format!(
            "creating {}: {e}: choose a results folder this user can write, with --results",
            dir.display()
        ))
    })?;
    // Each cell is a `run` of its own whose stderr goes to the cell's log: the note on what
    // earlier runs left is said here, where it is seen.
    if let Ok(docker) = splitbrain_compose::connect().await {
        crate::reaper::mention_abandoned(&docker).await;
    }
    let progress = Progress::new(&cells, total, options.parallel);
    let ticker = progress.tick();
    let mut waiting = cells.iter();
    let mut running = FuturesUnordered::new();
    let mut outcomes: Vec<CellOutcome> = Vec::new();
    loop {
        while running.len() < options.parallel && !interrupt.is_cancelled() {
            let Some(cell) = waiting.next() else { break };
            progress.started(cell);
            running.push(run_cell(cell, &dir, interrupt));
        }
        let Some(outcome) = running.next().await else {
            break;
        };
        // A cell that could not even start (its log not writable) ends the matrix; the cells
        // still running are children of their own, which clean up after themselves.
        let outcome = outcome?;
        progress.finished(&outcome);
        outcomes.push(outcome);
    }
    ticker.abort();
    drop(running);
    outcomes.sort_by_key(|outcome| outcome.cell.number);
    let record = MatrixRecord {
        file: options.file.display().to_string(),
        started: started.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        shard: options.shard,
        cells: outcomes,
    };
    write_outputs(&record, &dir, options.junit.as_deref())?;
    Ok((record, dir))
}

/// `splitbrain report merge`: joins shards' `matrix.json` into one summary in `out`.
pub fn merge(dirs: &[PathBuf], out: &Path, junit: Option<&Path>) -> Result<Exit, HarnessError> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let out_abs = std::fs::canonicalize(out).with_context(|| out.display().to_string())?;
    let mut merged: Option<MatrixRecord> = None;
    for dir in dirs {
        let path = dir.join("matrix.json");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            HarnessError::BadInput(format!(
                "{}: {e}; give the folders `splitbrain matrix` wrote (results/matrix-...)",
                path.display()
            ))
        })?;
        let mut record: MatrixRecord = serde_json::from_str(&text).map_err(|e| {
            HarnessError::BadInput(format!("{} is not a matrix record: {e}", path.display()))
        })?;
        let dir_abs = std::fs::canonicalize(dir).with_context(|| dir.display().to_string())?;
        let prefix = relative(&out_abs, &dir_abs);
        for outcome in &mut record.cells {
            outcome.run_dir = outcome
                .run_dir
                .as_ref()
                .map(|r| prefix.join(r).display().to_string());
            outcome.log = prefix.join(&outcome.log).display().to_string();
        }
        match &mut merged {
            None => {
                merged = Some(MatrixRecord {
                    shard: None,
                    ..record
                })
            }
            Some(all) => {
                if all.file != record.file {
                    return Err(HarnessError::BadInput(format!(
                        "{} ran {}, and {} ran {}: merge shards of one matrix",
                        dirs[0].display(),
                        all.file,
                        dir.display(),
                        record.file
                    )));
                }
                all.started = all.started.clone().min(record.started);
                all.cells.extend(record.cells);
            }
        }
    }
    let Some(mut record) = merged else {
        return Err(HarnessError::BadInput(
            "nothing to merge: give one or more matrix folders".into(),
        ));
    };
    record.cells.sort_by_key(|c| c.cell.number);
    record.cells.dedup_by_key(|c| c.cell.number);
    write_outputs(&record, out, junit)?;
    stdout!("{}", table(&record, out));
    Ok(exit_of(&record))
}

fn exit_of(record: &MatrixRecord) -> Exit {
    if record.cells.iter().all(|c| c.met == Met::Yes) {
        Exit::Success
    } else {
        Exit::Verdict(Valid::False)
    }
}

/// Runs one cell as a child `splitbrain run` and reads back what it got.
async fn run_cell(
    cell: &Cell,
    dir: &Path,
    interrupt: &CancellationToken,
) -> Result<CellOutcome, HarnessError> {
    let log = format!("logs/{:03}.log", cell.number);
    let output = std::fs::File::create(dir.join(&log)).context("creating a cell's log")?;
    // A results folder of its own, so that its `latest` link is this cell's run even with
    // other cells finishing beside it.
    let runs = dir.join("runs").join(format!("{:03}", cell.number));
    let exe = std::env::current_exe().context("finding the splitbrain binary")?;
    let started = Instant::now();
    let mut child = tokio::process::Command::new(exe)
        .arg("run")
        .args(&cell.args)
        .arg("--results")
        .arg(&runs)
        .stdout(output.try_clone().context("sharing a cell's log")?)
        .stderr(output)
        .stdin(std::process::Stdio::null())
        .spawn()
        .context("starting a cell's run")?;
    let status = tokio::select! {
        status = child.wait() => status,
        () = interrupt.cancelled() => {
            // The child got the same Ctrl-C from the terminal, or gets it now: it heals,
            // cleans up and keeps its history.
            if let Some(pid) = child.id() {
                // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
                unsafe { libc::kill(pid as i32, libc::SIGINT) };
            }
            child.wait().await
        }
    }
    .context("waiting for a cell's run")?;
    let seconds = started.elapsed().as_secs_f64();
    let run_dir = std::fs::read_link(runs.join("latest"))
        .ok()
        .map(|link| runs.join(link))
        .filter(|run| RunDir::at(run).history().is_file());
    let verdict = match status.code() {
        Some(0) => Some(Valid::True),
        Some(1) => Some(Valid::False),
        Some(2) => Some(Valid::Unknown),
        _ => None,
    };
    let results = run_dir.as_deref().and_then(|run| RunDir::at(run).results());
    // The run wrote its verdict in words into results.json.
    let written = results
        .as_ref()
        .map(|r| r.verdict.clone())
        .filter(|verdict| !verdict.is_empty());
    let reached_a_holder = results
        .as_ref()
        .and_then(|r| r.checkers.get::<Coverage>())
        .is_some_and(|coverage| coverage.grants_faulted > 0);
    let verdict_line = match (&verdict, written) {
        (Some(_), Some(line)) => line,
        (Some(valid), None) => valid.label().to_string(),
        (None, _) => {
            let text = std::fs::read_to_string(dir.join(&log)).unwrap_or_default();
            let last = text
                .lines()
                .rev()
                .find(|l| l.starts_with("error"))
                .or_else(|| text.lines().last())
                .unwrap_or("no output");
            format!("no verdict (exit {}): {last}", describe_status(status))
        }
    };
    let (judged, verdict_line) = match (cell.judge, verdict) {
        (Judge::Leases, Some(_)) => {
            let safety = results.as_ref().and_then(|r| r.checkers.get());
            let (judged, words) = judged_on_leases(safety);
            (
                Some(judged),
                format!("{verdict_line}; judged on leases: {words}"),
            )
        }
        (judge @ (Judge::Livelock | Judge::Starvation | Judge::Outage), Some(verdict)) => {
            let checkers = results.as_ref().map(|r| &r.checkers);
            let (on, (judged, words)) = match judge {
                Judge::Livelock => (
                    "livelock",
                    judged_on_livelock(checkers.and_then(|c| c.get())),
                ),
                Judge::Outage => ("outage", judged_on_outage(checkers.and_then(|c| c.get()))),
                _ => (
                    "starvation",
                    judged_on_starvation(checkers.and_then(|c| c.get())),
                ),
            };
            // A live and fair lock must still be a safe one.
            let judged = match verdict {
                Valid::False => Valid::False,
                _ => judged,
            };
            (
                Some(judged),
                format!("{verdict_line}; judged on {on}: {words}"),
            )
        }
        _ => (verdict, verdict_line),
    };
    let possible_double_grant = results
        .as_ref()
        .and_then(|r| r.checkers.get::<LockSafety>())
        .is_some_and(|safety| safety.possible_double_grant_count > 0);
    let met = if judged.is_some() && cell.expect_fault_on_holder && !reached_a_holder {
        Met::No
    } else {
        meets(judged, cell.expect, possible_double_grant)
    };
    let verdict_line = if cell.expect_fault_on_holder && !reached_a_holder && judged.is_some() {
        format!("{verdict_line}; no fault reached a lock's holder, as the cell expects")
    } else {
        verdict_line
    };
    let (met, causes) = held_to_causes(cell, met, &causes_named(results.as_ref()));
    let verdict_line = format!("{verdict_line}{causes}");
    Ok(CellOutcome {
        cell: cell.clone(),
        verdict,
        verdict_line,
        met,
        seconds,
        run_dir: run_dir
            .and_then(|run| run.strip_prefix(dir).ok().map(|r| r.display().to_string())),
        log,
    })
}

/// `met` held to the causes `cell` expects and forbids, given those its violations'
/// explanations `named`, with what to add to its verdict line: `; causes: zombie 3`, and
/// which of them the cell did not allow.
fn held_to_causes(cell: &Cell, met: Met, named: &[(Cause, usize)]) -> (Met, String) {
    if named.is_empty() {
        return (met, String::new());
    }
    let misnamed = named
        .iter()
        .any(|(cause, _)| !cell.expect_causes.contains(cause));
    let forbidden: Vec<&str> = named
        .iter()
        .filter(|(cause, _)| cell.forbid_causes.contains(cause))
        .map(|(cause, _)| cause.label())
        .collect();
    let expected: Vec<&str> = cell.expect_causes.iter().map(|c| c.label()).collect();
    let met = match met {
        Met::Yes if !expected.is_empty() && misnamed => Met::No,
        Met::Yes if !forbidden.is_empty() => Met::No,
        met => met,
    };
    let counts: Vec<String> = named
        .iter()
        .map(|(cause, n)| format!("{} {n}", cause.label()))
        .collect();
    let not_allowed = if misnamed && !expected.is_empty() {
        format!(" (the cell expects only {})", expected.join(", "))
    } else if !forbidden.is_empty() {
        format!(" (the cell forbids {})", forbidden.join(", "))
    } else {
        String::new()
    };
    (met, format!("; causes: {}{not_allowed}", counts.join(", ")))
}

/// The causes its explanations give a run's reported violations (double grants, fenced ones
/// too, stuck periods, keys with lost writes, fencing violations), each with how many it
/// explains, in order of first appearance.
pub(crate) fn causes_named(results: Option<&Results>) -> Vec<(Cause, usize)> {
    results.map(|r| causes_in(&r.checkers)).unwrap_or_default()
}

/// The causes the checkers' results give their violations, as [`causes_named`].
pub(crate) fn causes_in(checkers: &Sections) -> Vec<(Cause, usize)> {
    let mut named: Vec<(Cause, usize)> = Vec::new();
    for explanation in checkers
        .iter()
        .flat_map(|(_, checker)| checker.explanations())
    {
        match named.iter_mut().find(|(c, _)| *c == explanation.cause) {
            Some((_, n)) => *n += 1,
            None => named.push((explanation.cause, 1)),
        }
    }
    named
}

/// Whether a run judged `judged` (none: it gave no verdict) meets `expect`. An unknown
/// verdict meets `unknown` only with a possible double grant: unknown for want of evidence
/// (nothing was granted) is not the doubt a scenario expects.
pub(crate) fn meets(judged: Option<Valid>, expect: Expect, possible_double_grant: bool) -> Met {
    match (judged, expect) {
        (None, _) => Met::Error,
        (Some(_), Expect::Any)
        | (Some(Valid::True), Expect::Valid)
        | (Some(Valid::False), Expect::Invalid) => Met::Yes,
        (Some(Valid::Unknown), Expect::Unknown) if possible_double_grant => Met::Yes,
        _ => Met::No,
    }
}

/// A run's verdict on the lock's leases alone ([`Judge::Leases`]), from its lock-safety
/// result, and the words that say so: invalid on a double grant with both leases live, valid
/// when the lock granted something and never that, unknown when it granted nothing or an
/// acquire of unknown outcome may have overlapped a hold.
fn judged_on_leases(safety: Option<&LockSafety>) -> (Valid, String) {
    let Some(safety) = safety else {
        return (
            Valid::Unknown,
            "the run wrote no lock-safety result".to_string(),
        );
    };
    if safety.holds == 0 {
        return (Valid::Unknown, "nothing was granted".to_string());
    }
    let live = safety.lease_double_grant_count();
    let words = format!(
        "{live} double grants with both leases live ({} stale: a holder past its lease, not \
         this claim's)",
        safety.stale_double_grant_count
    );
    match (live, safety.possible_double_grant_count) {
        (0, 0) => (Valid::True, words),
        (0, possible) => (
            Valid::Unknown,
            format!("{words}; {possible} possible (acquires of unknown outcome)"),
        ),
        _ => (Valid::False, words),
    }
}

/// How many times in a row every contender must collide for a split-vote streak to be a
/// livelock. With jitter, the contenders that collided retry apart and one wins within a
/// round or two; without it, they retry together, and the collision repeats.
pub const LIVELOCK_ROUNDS: usize = 5;

/// A run's verdict on split-vote livelock ([`Judge::Livelock`]), from its acquisition
/// statistics, and the words that say so.
fn judged_on_livelock(stats: Option<&AcquisitionStats>) -> (Valid, String) {
    let Some(stats) = stats else {
        return (
            Valid::Unknown,
            "the run wrote no acquisition statistics".to_string(),
        );
    };
    let streak = stats.longest_split_vote_streak.as_ref();
    match streak {
        Some(s) if s.rounds >= LIVELOCK_ROUNDS => {
            (Valid::False, format!("a split-vote livelock: {s}"))
        }
        _ if stats.grants == 0 => (Valid::Unknown, "nothing was granted".to_string()),
        Some(s) => (
            Valid::True,
            format!(
                "no livelock: at most {} round(s) of split votes in a row ({} refusals)",
                s.rounds, s.refusals
            ),
        ),
        None => (Valid::True, "no livelock: no vote was split".to_string()),
    }
}

/// A run's verdict on availability ([`Judge::Outage`]), from its acquisition statistics, and
/// the words that say so.
fn judged_on_outage(stats: Option<&AcquisitionStats>) -> (Valid, String) {
    let Some(stats) = stats else {
        return (
            Valid::Unknown,
            "the run wrote no acquisition statistics".to_string(),
        );
    };
    match stats.longest_outage.as_ref() {
        Some(outage) if outage.ttls >= OUTAGE_TTLS => {
            (Valid::False, format!("an outage: {outage}"))
        }
        _ if stats.grants == 0 => (Valid::Unknown, "nothing was granted".to_string()),
        Some(outage) => (
            Valid::True,
            format!(
                "no outage: the lock, free and asked for, was granted within {:.1} TTLs at most",
                outage.ttls
            ),
        ),
        None => (
            Valid::True,
            "no outage: the lock was never free and asked for without being granted".to_string(),
        ),
    }
}

/// A run's verdict on fairness ([`Judge::Starvation`]), from its `starvation` result, and the
/// words that say so.
fn judged_on_starvation(starvation: Option<&Starvation>) -> (Valid, String) {
    let Some(starvation) = starvation else {
        return (
            Valid::Unknown,
            "the run wrote no starvation result".to_string(),
        );
    };
    match starvation.findings(1).first() {
        Some(first) => (
            Valid::False,
            format!("{} starved, the first: {first}", starvation.starved_count),
        ),
        None if starvation.waits == 0 => (Valid::Unknown, "nobody waited".to_string()),
        None => (
            Valid::True,
            format!("nobody starved in {} waits", starvation.waits),
        ),
    }
}

fn describe_status(status: std::process::ExitStatus) -> String {
    match status.code() {
        Some(code) => code.to_string(),
        None => "by a signal".into(),
    }
}

fn write_outputs(record: &MatrixRecord, dir: &Path, junit: Option<&Path>) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(record)?;
    std::fs::write(dir.join("matrix.json"), json).context("writing matrix.json")?;
    std::fs::write(dir.join("index.html"), html::render(record)).context("writing index.html")?;
    if let Some(path) = junit {
        let xml = junit::render("splitbrain matrix", &record.started, &record.cells);
        std::fs::write(path, xml).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// The summary for the terminal: one line per cell, then what did not meet its expectation.
pub fn table(record: &MatrixRecord, dir: &Path) -> String {
    use std::fmt::Write;
    let width = record
        .cells
        .iter()
        .map(|c| c.cell.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let expect_width = record
        .cells
        .iter()
        .map(|c| c.cell.expected().len())
        .max()
        .unwrap_or(7)
        .max(7);
    let mut out = format!(
        "\n{:<width$}  {:<expect_width$}  {:>6}  verdict\n",
        "cell", "expect", "time"
    );
    for outcome in &record.cells {
        let mark = match outcome.met {
            Met::Yes => "ok  ",
            Met::No => "FAIL",
            Met::Error => "ERR ",
        };
        let _ = writeln!(
            out,
            "{:<width$}  {:<expect_width$}  {:>5.0}s  {mark} {}",
            outcome.cell.name,
            outcome.cell.expected(),
            outcome.seconds,
            outcome.verdict_line
        );
    }
    let met = record.cells.iter().filter(|c| c.met == Met::Yes).count();
    let _ = writeln!(
        out,
        "\nmatrix: {met} of {} cells met their expectation -> {}",
        record.cells.len(),
        dir.join("index.html").display()
    );
    for outcome in record.cells.iter().filter(|c| c.met != Met::Yes) {
        let _ = writeln!(
            out,
            "  cell {} expected {}, got {} (log: {})",
            outcome.cell.name,
            outcome.cell.expected(),
            outcome.verdict_line,
            dir.join(&outcome.log).display()
        );
    }
    out
}

/// `to` as seen from `from`, both absolute: `../shard-1` from `.../merged` to `.../shard-1`.
fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for part in &to[common..] {
        path.push(part);
    }
    path
}

/// What the person watching sees while the matrix runs, through the run's own progress
/// display: a step line as each cell ends, and between, a status line with the running cells
/// and the time left (redrawn on a terminal, now and then otherwise).
#[derive(Clone)]
struct Progress {
    state: Arc<Mutex<ProgressState>>,
}

struct ProgressState {
    cells: usize,
    parallel: usize,
    /// The time limits of the cells not started yet.
    waiting: Vec<f64>,
    /// The cells running: number, name, time limit, start.
    running: Vec<(usize, String, f64, Instant)>,
    /// How long each finished cell took.
    finished: Vec<f64>,
}

impl Progress {
    fn new(cells: &[Cell], total: usize, parallel: usize) -> Progress {
        let shard = if cells.len() == total {
            String::new()
        } else {
            format!(" (this shard's share of {total})")
        };
        let at_once = if parallel > 1 {
            format!(", {parallel} at a time")
        } else {
            String::new()
        };
        progress::step(&format!("matrix: {} cells{shard}{at_once}", cells.len()));
        Progress {
            state: Arc::new(Mutex::new(ProgressState {
                cells: cells.len(),
                parallel,
                waiting: cells.iter().rev().map(|c| c.time_limit_secs).collect(),
                running: Vec::new(),
                finished: Vec::new(),
            })),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ProgressState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn started(&self, cell: &Cell) {
        let mut state = self.state();
        state.waiting.pop();
        state.running.push((
            cell.number,
            cell.name.clone(),
            cell.time_limit_secs,
            Instant::now(),
        ));
    }

    /// Redraws the status line until the returned task is aborted.
    fn tick(&self) -> tokio::task::AbortHandle {
        let progress = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(progress::status_interval());
            loop {
                ticks.tick().await;
                progress::status(&progress.state().status());
            }
        })
        .abort_handle()
    }

    fn finished(&self, outcome: &CellOutcome) {
        let mut state = self.state();
        state
            .running
            .retain(|(number, ..)| *number != outcome.cell.number);
        state.finished.push(outcome.seconds);
        let mark = match outcome.met {
            Met::Yes => "ok",
            Met::No => "FAILED",
            Met::Error => "ERROR",
        };
        progress::step(&format!(
            "[{}/{}] {}: {mark}, {} in {}",
            state.finished.len(),
            state.cells,
            outcome.cell.name,
            outcome.verdict_line,
            clock(outcome.seconds)
        ));
    }
}

impl ProgressState {
    /// A cell's expected length: the mean of those finished, or before any has finished its
    /// time limit plus bring-up and teardown.
    fn per_cell(&self, time_limit_secs: f64) -> f64 {
        if self.finished.is_empty() {
            time_limit_secs + 15.0
        } else {
            self.finished.iter().sum::<f64>() / self.finished.len() as f64
        }
    }

    /// `[3/12] a 12s of ~45s, b 3s of ~45s: about 4m10s left`; a cell past what was expected
    /// of it, `a 52s, past ~45s`.
    fn status(&self) -> String {
        let running: Vec<String> = self
            .running
            .iter()
            .map(|(_, name, limit, start)| {
                let (took, expected) = (start.elapsed().as_secs_f64(), self.per_cell(*limit));
                let word = if took > expected { ", past" } else { " of" };
                format!("{name} {}{word} ~{}", clock(took), clock(expected))
            })
            .collect();
        let left_running: f64 = self
            .running
            .iter()
            .map(|(_, _, limit, start)| {
                (self.per_cell(*limit) - start.elapsed().as_secs_f64()).max(0.0)
            })
            .sum();
        let left_waiting: f64 = self.waiting.iter().map(|limit| self.per_cell(*limit)).sum();
        format!(
            "[{}/{}] {}: about {} left",
            self.finished.len() + 1,
            self.cells,
            running.join(", "),
            clock((left_running + left_waiting) / self.parallel as f64)
        )
    }
}

/// Seconds as `1m05s`.
fn clock(seconds: f64) -> String {
    let whole = seconds.round() as u64;
    if whole >= 60 {
        format!("{}m{:02}s", whole / 60, whole % 60)
    } else {
        format!("{whole}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_held_to_the_causes_it_expects_and_forbids() {
        let args = ["--deployment", "single", "--client", "set-nx-px"];
        let mut cell = control(&args, &[1]).unwrap().remove(0);
        let named = [(Cause::Zombie, 2), (Cause::Unexplained, 1)];
        assert_eq!(
            held_to_causes(&cell, Met::Yes, &[]),
            (Met::Yes, String::new())
        );
        assert_eq!(
            held_to_causes(&cell, Met::Yes, &named),
            (Met::Yes, "; causes: zombie 2, unexplained 1".to_string()),
            "a cell that names no cause takes any"
        );
        cell.forbid_causes = vec![Cause::Unexplained];
        assert_eq!(
            held_to_causes(&cell, Met::Yes, &named),
            (
                Met::No,
                "; causes: zombie 2, unexplained 1 (the cell forbids unexplained)".to_string()
            )
        );
        assert_eq!(held_to_causes(&cell, Met::Yes, &named[..1]).0, Met::Yes);
        cell.forbid_causes.clear();
        cell.expect_causes = vec![Cause::Zombie];
        let (met, words) = held_to_causes(&cell, Met::Yes, &named);
        assert_eq!(met, Met::No);
        assert!(words.ends_with("(the cell expects only zombie)"), "{words}");
        assert_eq!(
            held_to_causes(&cell, Met::No, &named[..1]).0,
            Met::No,
            "causes never make a wrong verdict right"
        );
    }

    #[test]
    fn judged_on_starvation_a_starved_client_is_invalid_and_nobody_waiting_unknown() {
        let starvation = |starved: serde_json::Value, count: usize, waits: usize| {
            serde_json::from_value::<Starvation>(serde_json::json!({
                "valid": if count > 0 { serde_json::json!(false) } else { serde_json::json!(true) },
                "after_ttls": 5, "waits": waits, "longest_wait_ms": 9000.0,
                "starved_count": count, "starved": starved,
            }))
            .unwrap()
        };
        let one = serde_json::json!([{
            "key": "lock", "process": 3, "from_ms": 0.0, "passed_over_until_ms": 9000.0,
            "to_ms": 9500.0, "ttl_ms": 1000, "refusals": 40, "passed_over": 12, "granted": true
        }]);
        let (judged, words) = judged_on_starvation(Some(&starvation(one, 1, 20)));
        assert_eq!(judged, Valid::False);
        assert!(
            words.starts_with("1 starved, the first: process 3 asked for lock"),
            "{words}"
        );
        let none = serde_json::json!([]);
        assert_eq!(
            judged_on_starvation(Some(&starvation(none.clone(), 0, 20))).0,
            Valid::True
        );
        assert_eq!(
            judged_on_starvation(Some(&starvation(none, 0, 0))).0,
            Valid::Unknown
        );
        assert_eq!(judged_on_starvation(None).0, Valid::Unknown);
    }

    #[test]
    fn judged_on_outage_a_lock_free_and_granted_to_nobody_for_five_ttls_is_invalid() {
        let stats = |grants: usize, ttls: Option<f64>| {
            let outage = ttls.map(|ttls| {
                serde_json::json!({
                    "from_ms": 3000.0, "to_ms": 3000.0 + ttls * 2000.0, "ended_by_grant": true,
                    "ttls": ttls, "attempts": 164, "refused_held": 154, "refused_other": 0,
                    "unknown": 10, "first_unknown_error": "MultipleRedlockException: [n5]"
                })
            });
            let latency = serde_json::json!({
                "count": 0, "mean_ms": 0.0, "p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0
            });
            serde_json::from_value::<AcquisitionStats>(serde_json::json!({
                "attempts": 200, "grants": grants, "refused_held": 154, "refused_split_vote": 0,
                "refused_unavailable": 0, "unknown": 10, "grant_latency": latency,
                "attempt_latency": latency, "split_vote_share": 0.0, "grants_per_second": 1.0,
                "longest_outage": outage
            }))
            .unwrap()
        };
        let (judged, words) = judged_on_outage(Some(&stats(11, Some(10.0))));
        assert_eq!(judged, Valid::False);
        assert!(
            words.starts_with("an outage: nobody was granted the lock from 3.0 s to 23.0 s"),
            "{words}"
        );
        assert!(
            words.ends_with("(the first: MultipleRedlockException: [n5])"),
            "{words}"
        );
        let judge = |grants, ttls| judged_on_outage(Some(&stats(grants, ttls))).0;
        assert_eq!(judge(25, Some(OUTAGE_TTLS - 0.1)), Valid::True);
        assert_eq!(judge(25, None), Valid::True, "always granted when free");
        assert_eq!(judge(0, Some(1.0)), Valid::Unknown, "nothing granted");
        assert_eq!(judged_on_outage(None).0, Valid::Unknown);
    }

    #[test]
    fn judged_on_livelock_every_contender_must_collide_five_times_running() {
        let stats = |grants: usize, rounds: Option<usize>| {
            let streak = rounds.map(|rounds| {
                serde_json::json!({
                    "refusals": rounds * 3, "clients": 3, "rounds": rounds,
                    "from_ms": 100.0, "to_ms": 2100.0
                })
            });
            let latency = serde_json::json!({
                "count": 0, "mean_ms": 0.0, "p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0
            });
            serde_json::from_value::<AcquisitionStats>(serde_json::json!({
                "attempts": 100, "grants": grants, "refused_held": 0, "refused_split_vote": 15,
                "refused_unavailable": 0, "unknown": 0, "grant_latency": latency,
                "attempt_latency": latency, "split_vote_share": 0.15, "grants_per_second": 1.0,
                "longest_split_vote_streak": streak
            }))
            .unwrap()
        };
        let (judged, words) = judged_on_livelock(Some(&stats(0, Some(LIVELOCK_ROUNDS))));
        assert_eq!(judged, Valid::False, "a livelock needs no grant to show");
        assert!(
            words.starts_with("a split-vote livelock: 15 split votes in a row from 0.1 s to 2.1 s"),
            "{words}"
        );
        let judge = |grants, rounds| judged_on_livelock(Some(&stats(grants, rounds))).0;
        assert_eq!(judge(10, Some(LIVELOCK_ROUNDS - 1)), Valid::True);
        assert_eq!(judge(10, None), Valid::True, "no split vote at all");
        assert_eq!(judge(0, Some(1)), Valid::Unknown, "nothing granted");
        assert_eq!(judged_on_livelock(None).0, Valid::Unknown);
    }

    #[test]
    fn a_verdict_meets_its_expectation_and_unknown_only_with_a_possible_double_grant() {
        use Valid::*;
        assert_eq!(meets(Some(True), Expect::Valid, false), Met::Yes);
        assert_eq!(meets(Some(False), Expect::Invalid, true), Met::Yes);
        assert_eq!(meets(Some(Unknown), Expect::Any, false), Met::Yes);
        assert_eq!(meets(Some(Unknown), Expect::Unknown, true), Met::Yes);
        assert_eq!(meets(Some(Unknown), Expect::Unknown, false), Met::No);
        assert_eq!(meets(Some(False), Expect::Unknown, true), Met::No);
        assert_eq!(meets(Some(Unknown), Expect::Invalid, true), Met::No);
        assert_eq!(meets(None, Expect::Any, false), Met::Error);
    }

    #[test]
    fn judged_on_leases_only_a_double_grant_with_both_leases_live_is_invalid() {
        let safety = |holds: usize, grants: usize, stale: usize, possible: usize| {
            serde_json::from_value::<LockSafety>(serde_json::json!({
                "valid": grants == 0, "holds": holds, "unknown_acquires": possible,
                "double_grant_count": grants, "stale_double_grant_count": stale,
                "double_grants": [], "fenced_double_grant_count": 0, "fenced_double_grants": [],
                "possible_double_grant_count": possible
            }))
            .unwrap()
        };
        let (judged, words) = judged_on_leases(Some(&safety(40, 3, 1, 0)));
        assert_eq!(judged, Valid::False);
        assert!(
            words.starts_with("2 double grants with both leases live (1 stale"),
            "{words}"
        );
        let judge = |s: LockSafety| judged_on_leases(Some(&s)).0;
        assert_eq!(judge(safety(40, 5, 5, 0)), Valid::True, "zombies only");
        assert_eq!(judge(safety(40, 0, 0, 0)), Valid::True);
        let (judged, words) = judged_on_leases(Some(&safety(0, 0, 0, 0)));
        assert_eq!(
            (judged, words.as_str()),
            (Valid::Unknown, "nothing was granted")
        );
        assert_eq!(
            judged_on_leases(None).0,
            Valid::Unknown,
            "no result to judge"
        );
        assert_eq!(judge(safety(40, 2, 2, 1)), Valid::Unknown, "a possible one");
        assert_eq!(
            judge(safety(40, 3, 2, 1)),
            Valid::False,
            "a certain one decides"
        );
    }

    #[test]
    fn shards_split_the_cells_between_them() {
        let shard: Shard = "2/3".parse().unwrap();
        assert_eq!(shard, Shard { index: 2, count: 3 });
        for bad in ["0/3", "4/3", "x", "1/0", "1-2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let owners = |number: usize| {
            (1..=3)
                .filter(|i| {
                    Shard {
                        index: *i,
                        count: 3,
                    }
                    .holds(number)
                })
                .count()
        };
        assert!((1..=10).all(|n| owners(n) == 1));
    }

    #[test]
    fn relative_paths_climb_out_and_back_in() {
        assert_eq!(
            relative(Path::new("/r/merged"), Path::new("/r/shard-1")),
            PathBuf::from("../shard-1")
        );
        assert_eq!(
            relative(Path::new("/r"), Path::new("/r/a")),
            PathBuf::from("a")
        );
    }

    #[test]
    fn the_time_left_shares_the_remaining_cells_between_the_parallel_slots() {
        let state = ProgressState {
            cells: 4,
            parallel: 2,
            waiting: vec![45.0, 45.0],
            running: vec![(1, "a".into(), 45.0, Instant::now())],
            finished: vec![30.0],
        };
        // One running cell (30 s expected) and two waiting (30 s each), two at a time.
        assert_eq!(state.status(), "[2/4] a 0s of ~30s: about 45s left");
        let fresh = ProgressState {
            finished: Vec::new(),
            ..state
        };
        assert!(fresh.status().ends_with("a 0s of ~1m00s: about 1m30s left"));
        let late = ProgressState {
            running: vec![(
                1,
                "a".into(),
                45.0,
                Instant::now() - std::time::Duration::from_secs(40),
            )],
            ..fresh
        };
        assert!(
            late.status().starts_with("[1/4] a 40s of ~1m00s"),
            "{}",
            late.status()
        );
        let overdue = ProgressState {
            finished: vec![9.0],
            ..late
        };
        assert!(
            overdue.status().starts_with("[2/4] a 40s, past ~9s"),
            "{}",
            overdue.status()
        );
    }

    #[test]
    fn the_default_runs_at_least_one_cell() {
        let parallel = default_parallel();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!((1..=cores).contains(&parallel), "{parallel}");
    }

    #[test]
    fn clock_reads_like_a_person_would_write_it() {
        assert_eq!(clock(5.4), "5s");
        assert_eq!(clock(65.0), "1m05s");
    }
}
