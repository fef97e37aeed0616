//! The linearizability check on simulated cas-register histories (see
//! [`splitbrain_checker::testing::linearizability_scenarios`]): one key and 5 to 20 processes,
//! 10 and 100 keys. Scenarios the checker cannot decide within its default limits are reported
//! and skipped: timing them would time the limit.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use splitbrain_checker::linearizability::{check, find_model, Limits};
use splitbrain_checker::testing::{linearizability_scenarios, object_history};
use splitbrain_checker::Valid;

fn cas_register(c: &mut Criterion) {
    let model = find_model("cas-register").expect("a registered model");
    let mut group = c.benchmark_group("linearizability");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (name, workload) in linearizability_scenarios() {
        let history = object_history(&workload);
        let result = check(&history, model, Limits::default()).expect("a well-formed history");
        if result.valid != Valid::True {
            eprintln!("{name}: skipped, {}", result.cause.unwrap_or_default());
            continue;
        }
        group.throughput(Throughput::Elements(history.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| check(black_box(&history), model, Limits::default()))
        });
    }
    group.finish();
}

criterion_group!(benches, cas_register);
criterion_main!(benches);
