//! Helpers shared by the property tests.

use splitbrain_checker::Op;

/// The history of ops placed at millisecond times: sorted by time, stably, so that ops of one
/// process placed at increasing times keep their order, then numbered.
pub fn render(mut timed: Vec<(u64, Op)>) -> Vec<Op> {
    timed.sort_by_key(|(ms, _)| *ms);
    timed
        .into_iter()
        .enumerate()
        .map(|(index, (ms, op))| op.at(index as u64, ms * 1_000_000))
        .collect()
}
