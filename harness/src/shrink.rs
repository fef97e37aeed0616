//! `splitbrain shrink RUN_DIR`: the smallest fault schedule that still fails.
//!
//! A run fails when its verdict is invalid, or when it is unknown because an acquire whose
//! outcome nobody knows overlapped another grant (a possible double grant: a library that
//! tells its caller an acquire failed while a majority granted it). A replay fails when it
//! fails the same way, as the scenario written at the end expects. A failing run's faults,
//! read back as a script (see [`crate::replay`]), are cut after the first violation, then
//! reduced by delta debugging (Zeller's ddmin) over whole faults, moved as early as the run
//! allows, and reduced again over each fault's targets and length. Every candidate is replayed
//! several times, because the clients' timing is not replayed and a failure comes back only in
//! a share of replays: a candidate fails when most of its replays do. The result is written as
//! a scenario file, with its reproduction rate measured anew, and said in words: which faults
//! are left and what each one hit.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use splitbrain_checker::lock_safety::LockSafety;
use splitbrain_checker::{Op, OpType, Process, Valid};
use splitbrain_nemesis::links::parse_link_name;
use splitbrain_nemesis::script::ScriptedFault;
use tokio_util::sync::CancellationToken;

use crate::error::{Exit, HarnessError};
use crate::matrix::{self, Expect, Met};
use crate::progress;
use crate::replay::Stored;
use crate::script::Script;
use crate::spec::TestSpec;
use crate::store::RunDir;

/// How `splitbrain shrink` was asked to run.
pub struct ShrinkOptions {
    pub run_dir: PathBuf,
    /// Replays per candidate.
    pub replays: usize,
    /// Replays of the result, for its reproduction rate.
    pub final_replays: usize,
    /// Where the candidates' runs and the scenario file go.
    pub results: PathBuf,
}

/// The earliest a shifted schedule may start: the clients must have taken the lock by then.
const EARLIEST: Duration = Duration::from_secs(2);

pub async fn shrink(
    options: &ShrinkOptions,
    interrupt: CancellationToken,
) -> Result<Exit, HarnessError> {
    let stored = Stored::read(&options.run_dir)?;
    let original = RunDir::at(&options.run_dir);
    let failure = Failure::of(&original).ok_or_else(|| {
        HarnessError::BadInput(format!(
            "{} did not fail (its verdict is {}): shrink takes a run whose verdict is invalid, \
             or unknown because of a possible double grant",
            options.run_dir.display(),
            match stored.valid {
                Some(Valid::True) => "valid",
                Some(_) => "unknown, with no possible double grant",
                None => "missing: it has no results.json",
            }
        ))
    })?;
    stored.replay_spec(&options.results)?;
    let started = Instant::now();
    let folder = options.results.join(format!(
        "shrink-{}-{}",
        stored.spec.name,
        chrono::Utc::now().format("%Y%m%dT%H%M%S")
    ));
    let mut shrinker = Shrinker {
        stored: &stored,
        failure,
        replays: options.replays,
        results: folder.clone(),
        interrupt,
        trials: 0,
        last_failing: None,
    };
    progress::set_summaries(false);
    stdoutln!(
        "shrinking {} fault(s) of {}; each candidate is replayed up to {} times and fails when \
         most replays {} (the clients' timing is not replayed)",
        stored.faults.len(),
        options.run_dir.display(),
        options.replays,
        failure.words()
    );

    let cut = cut_after_first_violation(&stored.faults, first_violation(&original));
    let mut faults = if cut.len() < stored.faults.len() && shrinker.fails(&cut).await? {
        cut
    } else if shrinker.fails(&stored.faults).await? {
        stored.faults.clone()
    } else {
        stdoutln!(
            "the run's faults, replayed, did not fail in most replays: its failure depends on \
             the clients' timing more than on its faults; nothing to shrink"
        );
        return Ok(Exit::Verdict(Valid::Unknown));
    };
    faults = ddmin(faults, &mut shrinker).await?;
    let shifted = shift_to(&faults, EARLIEST);
    if shifted != faults && shrinker.fails(&shifted).await? {
        faults = shifted;
    }
    faults = fewer_targets(faults, &mut shrinker).await?;
    faults = shorter(faults, &mut shrinker).await?;

    // The reproduction rate, measured anew over more replays; one that fails explains it.
    shrinker.last_failing = None;
    let trials = shrinker.trials;
    shrinker.trials += 1;
    let mut failed = 0;
    for _ in 0..options.final_replays {
        if shrinker.replay(&faults).await? {
            failed += 1;
        }
    }
    let minutes = started.elapsed().as_secs_f64() / 60.0;
    let words = shrinker
        .last_failing
        .as_deref()
        .map(|dir| explain(&faults, &RunDir::at(dir).ops().unwrap_or_default()))
        .unwrap_or_default();
    let path = folder.join(format!("shrunk-{}.toml", stored.spec.name));
    let found = Found {
        faults: &faults,
        time_limit: shrinker.time_limit(&faults),
        words: &words,
        failed,
        replays: options.final_replays,
        trials,
        minutes,
    };
    let file = scenario_file(&stored, failure, &found);
    std::fs::create_dir_all(&folder).map_err(anyhow::Error::from)?;
    std::fs::write(&path, file).map_err(anyhow::Error::from)?;
    stdoutln!(
        "{} fault(s) down to {} in {} trials ({minutes:.1} min); the result failed in {failed} of {} replays",
        stored.faults.len(),
        faults.len(),
        trials,
        options.final_replays
    );
    for line in &words {
        stdoutln!("  {line}");
    }
    stdoutln!("written as a scenario: {}", path.display());
    Ok(Exit::Success)
}

/// What decides whether a candidate schedule still fails.
trait Trial {
    async fn fails(&mut self, faults: &[ScriptedFault]) -> Result<bool, HarnessError>;
}

/// How the original run failed, which a replay must show to fail too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// Its verdict is invalid.
    Invalid,
    /// Its verdict is unknown, with a possible double grant.
    PossibleDoubleGrant,
}

impl Failure {
    /// How `run` failed, where shrink can keep it: `None` for a valid run, or an unknown one
    /// whose doubt is not a possible double grant (nothing was granted, say).
    fn of(run: &RunDir) -> Option<Failure> {
        let results = run.results()?;
        let possible = results
            .checkers
            .get::<LockSafety>()
            .map_or(0, |lock| lock.possible_double_grant_count);
        Failure::judged(results.valid, possible)
    }

    /// How a run with this verdict and this many possible double grants failed: the failure
    /// whose expectation it meets, by the rule scenarios are judged by.
    fn judged(valid: Valid, possible_double_grants: usize) -> Option<Failure> {
        [Failure::Invalid, Failure::PossibleDoubleGrant]
            .into_iter()
            .find(|failure| {
                matrix::meets(Some(valid), failure.expect(), possible_double_grants > 0) == Met::Yes
            })
    }

    /// The verdict a scenario of the shrunk schedule expects.
    fn expect(self) -> Expect {
        match self {
            Failure::Invalid => Expect::Invalid,
            Failure::PossibleDoubleGrant => Expect::Unknown,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Failure::Invalid => "are invalid",
            Failure::PossibleDoubleGrant => "are unknown with a possible double grant",
        }
    }
}

/// Replays candidates and remembers how many it ran.
struct Shrinker<'a> {
    stored: &'a Stored,
    failure: Failure,
    replays: usize,
    results: PathBuf,
    interrupt: CancellationToken,
    trials: usize,
    /// The run folder of the last replay that failed, for the summary's words.
    last_failing: Option<PathBuf>,
}

impl Trial for Shrinker<'_> {
    /// Whether `faults` fail in most of up to `replays` replays (stopping once it is decided).
    async fn fails(&mut self, faults: &[ScriptedFault]) -> Result<bool, HarnessError> {
        self.trials += 1;
        let need = self.replays / 2 + 1;
        let (mut failed, mut passed) = (0, 0);
        while failed < need && passed + need <= self.replays {
            if self.replay(faults).await? {
                failed += 1;
            } else {
                passed += 1;
            }
        }
        let fails = failed >= need;
        stdoutln!(
            "trial {}: {} fault(s) over {:.0} s: failed {failed} of {}{}",
            self.trials,
            faults.len(),
            self.time_limit(faults).as_secs_f64(),
            failed + passed,
            if fails { ", kept" } else { "" }
        );
        Ok(fails)
    }
}

impl Shrinker<'_> {
    /// One replay of `faults`; whether it failed.
    async fn replay(&mut self, faults: &[ScriptedFault]) -> Result<bool, HarnessError> {
        if self.interrupt.is_cancelled() {
            return Err(HarnessError::Crash(anyhow::anyhow!(
                "interrupted while shrinking"
            )));
        }
        let mut spec: TestSpec = self.stored.replay_spec(&self.results)?;
        spec.limits.time_limit = self.time_limit(faults);
        // Each candidate's script is kept as a file, which its runs' command lines name.
        let trials = self.results.join("trials");
        let from = trials.join(format!("trial-{}.toml", self.trials));
        std::fs::create_dir_all(&trials).map_err(anyhow::Error::from)?;
        std::fs::write(&from, script_toml(faults)).map_err(anyhow::Error::from)?;
        let script = Script {
            from,
            replay: false,
            faults: faults.to_vec(),
        };
        spec.run_script(script)?;
        let ran = crate::run::run(spec, self.interrupt.clone()).await?;
        // As the scenario written at the end expects: an invalid replay of a possible double
        // grant is another failure (the restart hazard, say), not the one being shrunk.
        let failed = Failure::of(&RunDir::at(&ran.dir)) == Some(self.failure);
        if failed {
            self.last_failing = Some(ran.dir);
        }
        Ok(failed)
    }

    /// A candidate runs until its last fault has ended and the leases it could have broken
    /// have run out (three TTLs, at least 5 s), within the original's time limit.
    fn time_limit(&self, faults: &[ScriptedFault]) -> Duration {
        let spec = &self.stored.spec;
        let last_end = faults
            .iter()
            .map(|f| f.at + f.hold)
            .max()
            .unwrap_or_default();
        let tail = (spec.workload.ttl * 3).max(Duration::from_secs(5));
        (last_end + tail).min(spec.time_limit().max(last_end + tail / 2))
    }
}

/// Zeller's ddmin over whole faults: the smallest subset found that still fails, trying
/// halves, then complements, then finer pieces.
async fn ddmin(
    mut faults: Vec<ScriptedFault>,
    shrinker: &mut impl Trial,
) -> Result<Vec<ScriptedFault>, HarnessError> {
    let mut pieces = 2;
    while faults.len() >= 2 {
        let chunks = split(&faults, pieces);
        let mut reduced = false;
        for chunk in &chunks {
            if shrinker.fails(chunk).await? {
                faults = chunk.clone();
                pieces = 2;
                reduced = true;
                break;
            }
        }
        if !reduced && pieces > 2 {
            for skip in 0..chunks.len() {
                let complement: Vec<ScriptedFault> = chunks
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != skip)
                    .flat_map(|(_, chunk)| chunk.iter().cloned())
                    .collect();
                if shrinker.fails(&complement).await? {
                    faults = complement;
                    pieces = (pieces - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if pieces >= faults.len() {
                break;
            }
            pieces = (pieces * 2).min(faults.len());
        }
    }
    Ok(faults)
}

/// `items` in `pieces` runs of nearly equal length, in order.
fn split<T: Clone>(items: &[T], pieces: usize) -> Vec<Vec<T>> {
    let pieces = pieces.clamp(1, items.len().max(1));
    (0..pieces)
        .map(|i| items[i * items.len() / pieces..(i + 1) * items.len() / pieces].to_vec())
        .filter(|chunk| !chunk.is_empty())
        .collect()
}

/// Each fault with one target fewer, while it still fails (faults that pick their targets
/// when they start have none to drop).
async fn fewer_targets(
    mut faults: Vec<ScriptedFault>,
    shrinker: &mut impl Trial,
) -> Result<Vec<ScriptedFault>, HarnessError> {
    for i in 0..faults.len() {
        let mut t = 0;
        while faults[i].targets.len() > 1 && t < faults[i].targets.len() {
            let mut candidate = faults.clone();
            candidate[i].targets.remove(t);
            // A partition's grudge names its targets; it stays as it was.
            if !candidate[i].params.is_null() && candidate[i].params.get("grudge").is_some() {
                break;
            }
            if shrinker.fails(&candidate).await? {
                faults = candidate;
            } else {
                t += 1;
            }
        }
    }
    Ok(faults)
}

/// Each fault half as long, while it still fails and lasts over 100 ms.
async fn shorter(
    mut faults: Vec<ScriptedFault>,
    shrinker: &mut impl Trial,
) -> Result<Vec<ScriptedFault>, HarnessError> {
    for i in 0..faults.len() {
        while faults[i].hold > Duration::from_millis(100) {
            let mut candidate = faults.clone();
            // To the millisecond, as the script files write it.
            candidate[i].hold = Duration::from_millis(candidate[i].hold.as_millis() as u64 / 2);
            if !shrinker.fails(&candidate).await? {
                break;
            }
            faults = candidate;
        }
    }
    Ok(faults)
}

/// The faults that started before `first` (the first violation), and the one on at that
/// moment: a fault after the failure cannot have caused it.
fn cut_after_first_violation(
    faults: &[ScriptedFault],
    first: Option<Duration>,
) -> Vec<ScriptedFault> {
    match first {
        Some(first) => faults.iter().filter(|f| f.at <= first).cloned().collect(),
        None => faults.to_vec(),
    }
}

/// The schedule moved so that its first fault starts at `earliest`, where it starts later.
fn shift_to(faults: &[ScriptedFault], earliest: Duration) -> Vec<ScriptedFault> {
    let first = faults.iter().map(|f| f.at).min().unwrap_or_default();
    let by = first.saturating_sub(earliest);
    faults
        .iter()
        .map(|f| ScriptedFault {
            at: f.at - by,
            ..f.clone()
        })
        .collect()
}

/// When the run's first double grant, certain or possible, began (the second grant's start),
/// from its results.
fn first_violation(run: &RunDir) -> Option<Duration> {
    let results = run.results()?;
    let lock = results.checkers.get::<LockSafety>()?;
    lock.double_grants
        .iter()
        .chain(
            lock.possible_double_grant_groups
                .iter()
                .map(|group| &group.first),
        )
        .map(|grant| grant.second.start_ms)
        .min_by(f64::total_cmp)
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
}

/// Each fault left, in words, with what it hit in a failing replay: the nodes of the lock's
/// grant at that moment among its targets.
fn explain(faults: &[ScriptedFault], history: &[Op]) -> Vec<String> {
    let nodes: usize = history
        .iter()
        .filter_map(|op| op.node.as_ref().filter(|_| !op.process.is_nemesis()))
        .flatten()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let starts = history
        .iter()
        .filter(|op| op.process.is_nemesis() && op.f == "start");
    let mut words = Vec::new();
    for (fault, start) in faults.iter().zip(starts) {
        let at = start.time;
        let held = history.iter().rev().find(|op| {
            matches!(op.process, Process::Client(_))
                && op.kind == OpType::Ok
                && op.f == "acquire"
                && op.time <= at
                && op.time + op.validity_ms.or(op.ttl_ms).unwrap_or(0) * 1_000_000 >= at
        });
        let hit = match held {
            Some(grant) => {
                let granted = grant.node.clone().unwrap_or_default();
                // A client link (`g1->n3`) counts as the node it leads to.
                let node_of = |target: &str| -> String {
                    parse_link_name(target)
                        .map_or(target, |(_, node)| node)
                        .to_string()
                };
                let betrayed: Vec<&String> = fault
                    .targets
                    .iter()
                    .filter(|t| granted.contains(&node_of(t)))
                    .collect();
                let process = match grant.process {
                    Process::Client(p) => p,
                    _ => 0,
                };
                if granted.is_empty() {
                    format!("process {process} held the lock when it started")
                } else if betrayed.is_empty() {
                    format!(
                        "process {process} held the lock on {} then, none of them hit",
                        granted.join(", ")
                    )
                } else {
                    let hit = betrayed
                        .iter()
                        .map(|t| match node_of(t) {
                            node if node == **t => node,
                            node => format!("{t} (to {node})"),
                        })
                        .collect::<Vec<_>>()
                        .join(", ");
                    let earlier = (at - grant.time) as f64 / 1e9;
                    if let [only] = granted.as_slice() {
                        format!(
                            "it hit {only}, the one node that granted the lock process {process} \
                             held then, {earlier:.2} s earlier"
                        )
                    } else {
                        format!(
                            "{hit} {} the {} nodes ({}) whose {} granted the lock process \
                             {process} held then, {earlier:.2} s earlier",
                            if betrayed.len() == 1 {
                                "was one of"
                            } else {
                                "were among"
                            },
                            granted.len(),
                            granted.join(", "),
                            if granted.len() == nodes / 2 + 1 {
                                "bare majority"
                            } else {
                                "quorum"
                            },
                        )
                    }
                }
            }
            None => "no one held the lock when it started".to_string(),
        };
        words.push(format!("{}: {hit}", fault.describe()));
    }
    words
}

/// What shrinking found.
struct Found<'a> {
    faults: &'a [ScriptedFault],
    /// How long a run of it lasts.
    time_limit: Duration,
    words: &'a [String],
    /// In how many of `replays` final replays it failed.
    failed: usize,
    replays: usize,
    trials: usize,
    minutes: f64,
}

/// The shrunk schedule as a scenario file: the original run's options, the faults left, and
/// how it was found.
fn scenario_file(stored: &Stored, failure: Failure, found: &Found) -> String {
    let Found {
        faults,
        time_limit,
        words,
        failed,
        replays,
        trials,
        minutes,
    } = *found;
    let spec = &stored.spec;
    let mut text = format!(
        "# Shrunk by `splitbrain shrink` from {}: {} fault(s) down to {} in {trials} trials \
         ({minutes:.1} min).\n# Replayed {replays} times: failed in {failed}.\n",
        stored.dir.display(),
        stored.faults.len(),
        faults.len()
    );
    for line in words {
        text += &format!("# {line}\n");
    }
    let claim = format!(
        "{} {} the {} client on {} fail.",
        faults
            .iter()
            .map(|f| f.describe())
            .collect::<Vec<_>>()
            .join("; "),
        if faults.len() == 1 { "makes" } else { "make" },
        spec.client(),
        spec.deployment().name()
    );
    text += &format!(
        "[scenario]\nclaim = {}\nsource = {}\n\n[[group]]\ndeployments = [{}]\nclients = [{}]\n\
         workloads = [{}]\nexpect = \"{}\"\noptions = {{ {} }}\n\n",
        toml_string(&claim),
        toml_string(&format!("splitbrain shrink of {}", stored.dir.display())),
        toml_string(spec.deployment().name()),
        toml_string(&spec.client().to_string()),
        toml_string(spec.workload_kind().name),
        failure.expect().label(),
        scenario_options(spec, time_limit)
    );
    text += &script_toml(faults);
    text
}

/// Faults as a script file's `[[fault]]` tables.
fn script_toml(faults: &[ScriptedFault]) -> String {
    #[derive(serde::Serialize)]
    struct Faults<'a> {
        fault: &'a [ScriptedFault],
    }
    toml::to_string(&Faults { fault: faults }).expect("a script serialises")
}

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// The run options of `spec` a scenario sets, as TOML: the group names the deployment,
/// client and workload, the seeds come from `scenario run`, the faults are the script.
fn scenario_options(spec: &TestSpec, time_limit: Duration) -> String {
    let set_by_the_scenario = [
        "deployment",
        "client",
        "workload",
        "nemesis",
        "script",
        "seed",
    ];
    let time_limit = humantime::format_duration(time_limit).to_string();
    spec.options()
        .into_iter()
        .filter(|(flag, _)| !set_by_the_scenario.contains(&flag.as_str()))
        .map(|(flag, value)| match flag.as_str() {
            "time-limit" => (flag, Some(time_limit.clone())),
            _ => (flag, value),
        })
        .map(|(flag, value)| match value {
            Some(value) => format!("{flag} = {}", toml_string(&value)),
            None => format!("{flag} = true"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kill(at_s: u64, targets: &[&str], hold_ms: u64) -> ScriptedFault {
        ScriptedFault {
            at: Duration::from_secs(at_s),
            fault: "kill".into(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            hold: Duration::from_millis(hold_ms),
            params: serde_json::Value::Null,
        }
    }

    /// A deployment that fails whenever n3 is down at 7 s for at least 200 ms, counting trials.
    struct N3At7s(usize);

    impl Trial for N3At7s {
        async fn fails(&mut self, faults: &[ScriptedFault]) -> Result<bool, HarnessError> {
            self.0 += 1;
            Ok(faults.iter().any(|f| {
                f.at == Duration::from_secs(7)
                    && f.targets.iter().any(|t| t == "n3")
                    && f.hold >= Duration::from_millis(200)
            }))
        }
    }

    #[tokio::test]
    async fn shrinking_finds_the_one_fault_target_and_length_that_matter() {
        let mut faults: Vec<ScriptedFault> = (1..=12)
            .map(|s| kill(s, &["n1", "n3", "n5"], 1000))
            .collect();
        faults[6] = kill(7, &["n2", "n3", "n4"], 1000);
        let mut trial = N3At7s(0);
        let left = ddmin(faults, &mut trial).await.unwrap();
        assert_eq!(left, [kill(7, &["n2", "n3", "n4"], 1000)]);
        let left = fewer_targets(left, &mut trial).await.unwrap();
        assert_eq!(left, [kill(7, &["n3"], 1000)]);
        let left = shorter(left, &mut trial).await.unwrap();
        assert_eq!(left, [kill(7, &["n3"], 250)]);
        assert!(trial.0 < 20, "{} trials", trial.0);
    }

    #[test]
    fn faults_after_the_first_violation_are_cut_and_the_rest_moved_early() {
        let faults = [
            kill(3, &["n1"], 0),
            kill(9, &["n2"], 0),
            kill(12, &["n3"], 0),
        ];
        let cut = cut_after_first_violation(&faults, Some(Duration::from_millis(9500)));
        assert_eq!(cut, faults[..2]);
        assert_eq!(cut_after_first_violation(&faults, None), faults);
        assert_eq!(
            shift_to(&faults[1..], Duration::from_secs(2)),
            [kill(2, &["n2"], 0), kill(5, &["n3"], 0)]
        );
        assert_eq!(split(&[1, 2, 3, 4, 5], 2), [vec![1, 2], vec![3, 4, 5]]);
    }

    /// A run unknown for a possible double grant is shrunk as such, into a scenario that
    /// expects `unknown`; an unknown run with no possible double grant is not a failure.
    #[test]
    fn a_possible_double_grant_is_a_failure_of_its_own() {
        use Failure::*;
        assert_eq!(Failure::judged(Valid::False, 0), Some(Invalid));
        assert_eq!(
            Failure::judged(Valid::Unknown, 2),
            Some(PossibleDoubleGrant)
        );
        assert_eq!(Failure::judged(Valid::Unknown, 0), None);
        assert_eq!(Failure::judged(Valid::True, 0), None);
        assert_eq!(PossibleDoubleGrant.expect(), Expect::Unknown);
    }
}
