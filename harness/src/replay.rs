//! Faults at fixed times: `splitbrain run --script FILE` reads them from a file, and
//! `splitbrain run --replay RUN_DIR` from a stored run's history, to run that run again with
//! its options and its exact fault schedule. What cannot be replayed is the clients' timing:
//! each replay interleaves their operations anew, so a failure comes back in some share of
//! replays, which is what a replay reports.

use std::path::{Path, PathBuf};

use splitbrain_checker::Valid;
use splitbrain_nemesis::find_fault;
use splitbrain_nemesis::script::{self, ScriptedFault};
use tokio_util::sync::CancellationToken;

use crate::error::{Exit, HarnessError};
use crate::script::Script;
use crate::spec::TestSpec;
use crate::store::RunDir;

/// A stored run, read back for a replay.
pub struct Stored {
    pub dir: PathBuf,
    pub spec: TestSpec,
    /// Its faults as they happened.
    pub faults: Vec<ScriptedFault>,
    /// Starts that hit nothing (no grant came, no node was master), not replayed.
    pub hit_nothing: usize,
    /// Its verdict, where it got one.
    pub valid: Option<Valid>,
}

impl Stored {
    pub fn read(dir: &Path) -> Result<Stored, HarnessError> {
        let bad = HarnessError::BadInput;
        // `results/latest` moves with every run: a replay names the run itself.
        let dir = &std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let run = RunDir::at(dir);
        let spec = run.spec()?;
        let ops = run.ops()?;
        let (faults, hit_nothing) = script::from_history(&ops)
            .map_err(|e| bad(format!("{}: {e}", run.history().display())))?;
        let valid = run.valid();
        Ok(Stored {
            dir: dir.to_path_buf(),
            spec,
            faults,
            hit_nothing,
            valid,
        })
    }

    /// The spec that runs it again: its options, its faults as a script, results in `results`.
    pub fn replay_spec(&self, results: &Path) -> Result<TestSpec, HarnessError> {
        if self.faults.is_empty() {
            return Err(HarnessError::BadInput(format!(
                "{} has no fault that hit anything in its history: there is nothing to replay \
                 (run it again with the command line in its test.json)",
                self.dir.display()
            )));
        }
        let script = Script {
            from: self.dir.clone(),
            replay: true,
            faults: self.faults.clone(),
        };
        let mut spec = self.spec.clone();
        spec.run_script(script)?;
        spec.results = results.to_path_buf();
        Ok(spec)
    }
}

/// `splitbrain run --replay DIR --replays N`: runs `dir` again `replays` times and says how
/// faithfully the faults were replayed and in how many replays the run failed.
pub async fn replay(
    dir: &Path,
    replays: usize,
    results: &Path,
    interrupt: CancellationToken,
) -> Result<Exit, HarnessError> {
    let stored = Stored::read(dir)?;
    let spec = stored.replay_spec(results)?;
    stdoutln!(
        "replaying {} fault(s) of {} at their times, on their targets, with their parameters{}",
        stored.faults.len(),
        dir.display(),
        match stored.hit_nothing {
            0 => String::new(),
            n => format!(" ({n} more hit nothing there and are left out)"),
        }
    );
    stdoutln!(
        "the clients' timing is not replayed: each replay interleaves their operations anew, \
         so a failure may come back in only some replays"
    );
    let mut failed = 0;
    let mut ran = 0;
    let mut last = Exit::Success;
    for _ in 0..replays {
        if interrupt.is_cancelled() {
            break;
        }
        let outcome = crate::run::run(spec.clone(), interrupt.clone()).await?;
        ran += 1;
        let replayed = Stored::read(&outcome.dir)?;
        stdoutln!("{}", fidelity(&stored.faults, &replayed.faults).line());
        if outcome.exit == Exit::Verdict(Valid::False) {
            failed += 1;
        }
        last = outcome.exit;
    }
    stdoutln!(
        "failed in {failed} of {ran} replay(s){}",
        match stored.valid {
            Some(Valid::False) => "; the original run failed",
            Some(Valid::True) => "; the original run was valid",
            _ => "",
        }
    );
    Ok(match (replays, failed) {
        (1, _) => last,
        (_, 0) => last,
        _ => Exit::Verdict(Valid::False),
    })
}

/// How a replay's faults compare with the original's.
#[derive(Debug, PartialEq)]
pub struct Fidelity {
    pub total: usize,
    /// Faults replayed with the same fault, targets and parameters.
    pub same: usize,
    /// Faults that aim at the holder of the moment even in a replay (a client pause freezes
    /// whoever enters a critical section next), which is the clients' timing: their targets
    /// may differ.
    pub aimed_again: usize,
    /// What differed, fault by fault.
    pub differences: Vec<String>,
    /// How much later than in the original each same fault took effect, and ended, in ms
    /// (the scheduling error).
    pub start_lag_ms: Vec<i64>,
    pub stop_lag_ms: Vec<i64>,
}

/// Compares the faults of a replay with the original's, in order.
pub fn fidelity(original: &[ScriptedFault], replayed: &[ScriptedFault]) -> Fidelity {
    let ms = |d: std::time::Duration| d.as_millis() as i64;
    let mut fidelity = Fidelity {
        total: original.len(),
        same: 0,
        aimed_again: 0,
        differences: Vec::new(),
        start_lag_ms: Vec::new(),
        stop_lag_ms: Vec::new(),
    };
    for (number, was) in original.iter().enumerate() {
        let aims = find_fault(&was.fault).is_some_and(|f| f.aims_when_started());
        match replayed.get(number) {
            Some(now) if now.fault == was.fault && (aims || now.targets == was.targets) => {
                // When an aimed fault takes effect is the clients' timing too.
                if aims {
                    fidelity.aimed_again += 1;
                    continue;
                } else if now.params == was.params {
                    fidelity.same += 1;
                } else {
                    fidelity.differences.push(format!(
                        "{} was replayed with other parameters: {} instead of {}",
                        was.describe(),
                        now.params,
                        was.params
                    ));
                    continue;
                }
                fidelity.start_lag_ms.push(ms(now.at) - ms(was.at));
                fidelity
                    .stop_lag_ms
                    .push(ms(now.at + now.hold) - ms(was.at + was.hold));
            }
            Some(now) => fidelity.differences.push(format!(
                "{} was replayed as {}",
                was.describe(),
                now.describe()
            )),
            None => fidelity.differences.push(format!(
                "{} was not replayed (the run ended first)",
                was.describe()
            )),
        }
    }
    fidelity
}

impl Fidelity {
    /// `12 of 12 faults replayed ...; they took effect 41 to 180 ms (median 62) later ...`.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} of {} faults replayed with the same targets and parameters",
            self.same, self.total
        );
        if self.aimed_again > 0 {
            line += &format!(
                ", {} aimed again at the holder of the moment (the clients' timing decides whom \
                 they hit)",
                self.aimed_again
            );
        }
        if let (Some(start), Some(stop)) = (spread(&self.start_lag_ms), spread(&self.stop_lag_ms)) {
            line += &format!(
                "; they took effect {start} later than in the original, and ended {stop} later"
            );
        }
        for difference in &self.differences {
            line += &format!("\n  {difference}");
        }
        line
    }
}

/// `41 to 180 ms (median 62)`.
fn spread(values: &[i64]) -> Option<String> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let (first, last) = (sorted.first()?, sorted.last()?);
    Some(format!(
        "{first} to {last} ms (median {})",
        sorted[sorted.len() / 2]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::tests::kill;

    #[test]
    fn a_replay_is_compared_fault_by_fault_with_its_lag() {
        let original = [
            kill(1000, "n1", 500),
            kill(3000, "n2", 0),
            kill(5000, "n3", 0),
        ];
        let replayed = [kill(1040, "n1", 480), kill(3100, "n4", 0)];
        let fidelity = fidelity(&original, &replayed);
        assert_eq!(fidelity.same, 1);
        assert_eq!(fidelity.start_lag_ms, [40]);
        assert_eq!(fidelity.stop_lag_ms, [20]);
        let line = fidelity.line();
        assert!(line.starts_with("1 of 3 faults replayed"), "{line}");
        assert!(
            line.contains("took effect 40 to 40 ms (median 40)"),
            "{line}"
        );
        assert!(
            line.contains("kill n2 at 3.00 s for 0.00 s was replayed as kill n4"),
            "{line}"
        );
        assert!(
            line.contains("kill n3 at 5.00 s for 0.00 s was not replayed"),
            "{line}"
        );

        // A client pause freezes whoever takes the lock next, in a replay too.
        let pause = |worker: &str| ScriptedFault {
            fault: "client-pause".into(),
            ..kill(1000, worker, 3000)
        };
        let fidelity = super::fidelity(&[pause("client-1")], &[pause("client-4")]);
        assert_eq!((fidelity.same, fidelity.aimed_again), (0, 1));
        assert!(
            fidelity.line().contains("1 aimed again"),
            "{}",
            fidelity.line()
        );
    }
}
