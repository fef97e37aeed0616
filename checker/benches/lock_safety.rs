//! The lock-safety check on a synthetic history of one million ops: 50 processes on 10 keys
//! with a nemesis, as [`splitbrain_checker::testing`] simulates it.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use splitbrain_checker::lock_safety;
use splitbrain_checker::testing::{lock_history, LockWorkload};

fn check_1m_ops(c: &mut Criterion) {
    let history = lock_history(&LockWorkload::default());
    let mut group = c.benchmark_group("lock_safety");
    // One check takes about a tenth of a second: ten flat samples keep the run short.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(history.len() as u64));
    group.bench_function("check_1m_ops", |b| {
        b.iter(|| lock_safety::check(black_box(&history)))
    });
    group.finish();
}

criterion_group!(benches, check_1m_ops);
criterion_main!(benches);
