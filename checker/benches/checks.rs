//! Every checker a run's history goes through, on a synthetic history of one million ops (50
//! processes on 10 keys with a nemesis, as [`splitbrain_checker::testing`] simulates it), read
//! from its JSON lines: the whole of `splitbrain check` but the linearizability search beside
//! lock safety (left out above 100,000 client ops) and the writing of results. The baseline
//! for checks that stream.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use splitbrain_checker::coverage::RunFacts;
use splitbrain_checker::testing::{lock_history, LockWorkload};
use splitbrain_checker::{
    acquisition_stats, coverage, fencing, lock_safety, lost_writes, read_history, stats,
    stuck_lock, Op,
};

/// Reads `jsonl` and runs every checker on it, as `splitbrain check` does.
fn check_everything(jsonl: &[u8]) -> usize {
    let ops: Vec<Op> = read_history(jsonl).expect("the history reads back").ops;
    let stats = stats::check(&ops, &stats::needed_for(&ops));
    let coverage = coverage::check(&ops, RunFacts::default());
    let safety = lock_safety::check(&ops);
    let lost = lost_writes::check(&ops);
    let fencing = fencing::check(&ops);
    let stuck = stuck_lock::check(&ops, Duration::from_millis(500), None);
    let acquisition = acquisition_stats::check(&ops);
    black_box((&stats, &coverage, &lost, &fencing, &stuck, &acquisition));
    safety.holds
}

fn every_checker_1m_ops(c: &mut Criterion) {
    let history = lock_history(&LockWorkload::default());
    let jsonl: Vec<u8> = history
        .iter()
        .flat_map(|op| {
            let mut line = serde_json::to_vec(op).unwrap();
            line.push(b'\n');
            line
        })
        .collect();
    let mut group = c.benchmark_group("checks");
    // One pass takes over a second: ten flat samples keep the run short.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(20))
        .throughput(Throughput::Elements(history.len() as u64));
    group.bench_function("every_checker_1m_ops_from_json_lines", |b| {
        b.iter(|| check_everything(black_box(&jsonl)))
    });
    group.finish();
}

criterion_group!(benches, every_checker_1m_ops);
criterion_main!(benches);
