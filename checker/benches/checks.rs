//! `splitbrain check` of a synthetic history of one million ops (50 processes on 10 keys with a
//! nemesis, as [`splitbrain_checker::testing`] simulates it), from its JSON lines in memory:
//! the outline pass, then every checker over the stream of events (all but the linearizability
//! search, which `check` leaves out above 100,000 client ops beside lock safety). Its anchor is
//! reading the same lines once into ops and nothing else; the ratio is printed at the end.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use splitbrain_checker::every::EveryChecker;
use splitbrain_checker::lock_safety::LockSafety;
use splitbrain_checker::stream::{Checker, Outline, Pairing, RunFacts};
use splitbrain_checker::testing::{lock_history, LockWorkload};
use splitbrain_checker::{HistoryReader, Op, OpType, Process};

fn blank() -> Op {
    Op::new(Process::Client(0), OpType::Invoke, "")
}

/// Reads every op of `jsonl` once: the anchor.
fn read_once(jsonl: &[u8]) -> u64 {
    let mut reader = HistoryReader::new(jsonl);
    let (mut op, mut last) = (blank(), 0);
    while reader.next_into(&mut op).expect("the history reads back") {
        last = op.time;
    }
    last
}

/// The outline, then every checker over the events, as `splitbrain check` reads a file.
fn check_everything(jsonl: &[u8]) -> usize {
    let mut outline = Outline::new();
    let mut reader = HistoryReader::for_outline(jsonl);
    let mut op = blank();
    while reader.next_into(&mut op).expect("the history reads back") {
        outline.observe(&op);
    }
    let mut checkers = EveryChecker::new(&outline, RunFacts::default());
    let mut pairing = Pairing::default();
    let mut reader = HistoryReader::new(jsonl);
    while reader.next_into(&mut op).expect("the history reads back") {
        pairing.feed_read(&mut op, &mut checkers);
    }
    pairing.finish(&mut checkers);
    let sections = checkers.finish();
    sections
        .get::<LockSafety>()
        .map_or(0, |safety| safety.holds)
}

fn jsonl_1m_ops() -> (usize, Vec<u8>) {
    let history = lock_history(&LockWorkload::default());
    let jsonl = history
        .iter()
        .flat_map(|op| {
            let mut line = serde_json::to_vec(op).unwrap();
            line.push(b'\n');
            line
        })
        .collect();
    (history.len(), jsonl)
}

fn every_checker_1m_ops(c: &mut Criterion) {
    let (ops, jsonl) = jsonl_1m_ops();
    let mut group = c.benchmark_group("checks");
    // One pass takes most of a second: ten flat samples keep the run short.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(ops as u64));
    group.bench_function("read_1m_ops_once", |b| {
        b.iter(|| read_once(black_box(&jsonl)))
    });
    group.bench_function("every_checker_1m_ops_streamed", |b| {
        b.iter(|| check_everything(black_box(&jsonl)))
    });
    group.finish();

    // The ratio, from the fastest of five runs of each, side by side.
    let fastest = |run: &dyn Fn() -> usize| {
        (0..5)
            .map(|_| {
                let started = Instant::now();
                black_box(run());
                started.elapsed()
            })
            .min()
            .expect("five runs")
    };
    let read = fastest(&|| read_once(&jsonl) as usize);
    let check = fastest(&|| check_everything(&jsonl));
    println!(
        "check of 1,000,000 ops: {check:.2?}, reading them once {read:.2?}: ratio {:.2}",
        check.as_secs_f64() / read.as_secs_f64()
    );
}

criterion_group!(benches, every_checker_1m_ops);
criterion_main!(benches);
