//! The seeds of a card line that a library's own finding left `unknown`. A library that
//! raises to its caller after it may have set the lock's keys (redlock-py's
//! `MultipleRedlockException`) makes each such acquire `unknown`, and any run where one
//! overlaps another's hold `unknown` too, whatever else the run tests. Its manifest names
//! those errors (`[[known-unknown]]`) with the finding that shows them; a line that expects
//! `valid` then tells the seeds they alone made unknown from a failure of its own claim.

use std::path::PathBuf;

use serde::Serialize;
use splitbrain_checker::lock_safety::LockSafety;
use splitbrain_checker::{Checked, Op, OpType, Valid};
use splitbrain_libraries::KnownUnknown;

use crate::store::RunDir;

/// Seeds of one line left unknown by the library's own findings alone.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OwnUnknowns {
    pub seeds: usize,
    /// The findings they were laid to, each once.
    pub findings: Vec<String>,
}

/// Of `runs` (the folders of a line's `unknown` seeds), those whose every acquire that made
/// the verdict unknown ended in one of `known`; `None` when there is none.
pub fn own_unknowns(known: &[KnownUnknown], runs: &[PathBuf]) -> Option<OwnUnknowns> {
    let mut own = OwnUnknowns {
        seeds: 0,
        findings: Vec::new(),
    };
    for laid in runs
        .iter()
        .filter_map(|run| laid_to(known, &RunDir::at(run)))
    {
        own.seeds += 1;
        for finding in laid {
            if !own.findings.contains(&finding) {
                own.findings.push(finding);
            }
        }
    }
    (own.seeds > 0).then_some(own)
}

/// The findings that made `run` unknown, where they alone did: its verdict is unknown only by
/// lock safety's possible double grants, and each of their acquires ended in a known error.
fn laid_to(known: &[KnownUnknown], run: &RunDir) -> Option<Vec<String>> {
    let results = run.results()?;
    let safety = results.checkers.get::<LockSafety>()?;
    let others_valid = results
        .in_verdict()
        .iter()
        .all(|checker| checker.name() == safety.name() || checker.valid() == Valid::True);
    // Every group must be listed, or an unlisted acquire could be unknown for another reason.
    let every_group_listed =
        safety.possible_double_grant_groups.len() == safety.possible_double_grant_acquires;
    if results.valid != Valid::Unknown
        || safety.valid != Valid::Unknown
        || !others_valid
        || !every_group_listed
    {
        return None;
    }
    let ops = run.ops().ok()?;
    let mut findings = Vec::new();
    for group in &safety.possible_double_grant_groups {
        let error = ended_with(&ops, group.unknown_acquire.acquire_index)?;
        let known = known.iter().find(|k| k.matches(error))?;
        findings.push(known.finding.clone());
    }
    Some(findings)
}

/// The error the acquire invoked at `index` ended with, where it ended in one.
fn ended_with(ops: &[Op], index: u64) -> Option<&str> {
    let invoke = ops.iter().find(|op| op.index == index)?;
    ops.iter()
        .filter(|op| op.index > index && op.process == invoke.process && op.f == invoke.f)
        .find(|op| op.kind != OpType::Invoke)?
        .error
        .as_deref()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redlock_py() -> Vec<KnownUnknown> {
        vec![KnownUnknown {
            error: "MultipleRedlockException".into(),
            finding: "redlock-py-one-master-down".into(),
        }]
    }

    #[test]
    fn a_known_error_is_matched_from_the_start_of_the_adapters_error() {
        let known = &redlock_py()[0];
        assert!(known.matches("MultipleRedlockException: Error 111 connecting"));
        assert!(!known.matches("TimeoutError: MultipleRedlockException"));
    }

    /// A run folder holding `lines` as its history, checked as a run's is.
    fn run_of(lines: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::at(dir.path());
        std::fs::write(run.history(), lines.join("\n") + "\n").unwrap();
        let facts = splitbrain_checker::stream::RunFacts::default();
        let results =
            crate::check::history::check_history(&run.history(), false, None, facts).unwrap();
        run.write_results(&results).unwrap();
        dir
    }

    /// Process 0 holds the lock for 1.5 s; process 1's acquire, asked meanwhile, ends in
    /// `error`, so its outcome is unknown and overlaps that hold.
    fn overlapped_by_an_acquire_that_raised(error: &str) -> tempfile::TempDir {
        let raised = format!(
            r#"{{"index":3,"time":3000000,"process":1,"type":"info","f":"acquire","key":"lock","error":"{error}"}}"#
        );
        run_of(&[
            r#"{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","key":"lock","ttl_ms":2000}"#,
            r#"{"index":1,"time":1000000,"process":0,"type":"ok","f":"acquire","key":"lock","token":"a","validity_ms":1990}"#,
            r#"{"index":2,"time":2000000,"process":1,"type":"invoke","f":"acquire","key":"lock","ttl_ms":2000}"#,
            &raised,
            r#"{"index":4,"time":1500000000,"process":0,"type":"invoke","f":"release","key":"lock","token":"a"}"#,
            r#"{"index":5,"time":1501000000,"process":0,"type":"ok","f":"release","key":"lock","token":"a"}"#,
        ])
    }

    #[test]
    fn a_seed_unknown_only_by_the_librarys_known_error_is_laid_to_its_finding() {
        let raised = overlapped_by_an_acquire_that_raised("MultipleRedlockException: Error 111");
        assert_eq!(
            RunDir::at(raised.path()).valid(),
            Some(Valid::Unknown),
            "the history should be unknown by a possible double grant"
        );
        let timed_out = overlapped_by_an_acquire_that_raised("TimeoutError: timed out");
        let runs = [raised.path().to_path_buf(), timed_out.path().to_path_buf()];
        assert_eq!(
            own_unknowns(&redlock_py(), &runs),
            Some(OwnUnknowns {
                seeds: 1,
                findings: vec!["redlock-py-one-master-down".into()],
            }),
            "only the seed whose unknown acquire raised the known error is the finding's"
        );
    }

    #[test]
    fn no_run_no_own_unknowns() {
        assert_eq!(own_unknowns(&redlock_py(), &[]), None);
        let missing = PathBuf::from("/nonexistent/run");
        assert_eq!(own_unknowns(&redlock_py(), &[missing]), None);
    }
}
