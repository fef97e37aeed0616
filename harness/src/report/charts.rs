//! Latency and throughput over time, with the fault bands behind them.
//!
//! Latency is one scatter per kind of operation (`acquire`, `release`, `add`, ...), on a log
//! scale: x is the invoke, y how long the operation took, and the outcome is both a colour and
//! a shape (ok a green square, fail a brown cross, info an amber triangle). Points that would
//! land on the same 2-pixel cell are drawn once, which loses nothing on screen and keeps
//! 100,000 ops to a few thousand points. Throughput counts completions per time bucket, as
//! ops/s stacked by outcome.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;

use splitbrain_checker::windows::FaultWindow;

use super::faults::{self, FaultPalette};
use super::html::esc;
use super::operations::{Drawn, Operation, Outcome};
use super::scale::{latency_label, nice_step, LinearScale, LogScale, TimeScale};
use super::svg::{self, Rects};

const TOP: f64 = 8.0;
const PLOT_HEIGHT: f64 = 120.0;
const AXIS_HEIGHT: f64 = 22.0;
/// Points closer than this many pixels are drawn once.
const CELL_PX: f64 = 2.0;
/// About how many throughput buckets span a run.
const THROUGHPUT_BUCKETS: f64 = 120.0;

/// What the charts show.
pub struct ChartInput<'a> {
    pub operations: &'a [Operation<'a>],
    pub faults: &'a [FaultWindow],
    pub palette: &'a FaultPalette,
    pub scale: TimeScale,
}

/// One latency chart per kind of operation, busiest first, each under its heading.
pub fn latency(input: &ChartInput) -> String {
    let mut by_f: BTreeMap<&str, Vec<&Operation>> = BTreeMap::new();
    for operation in input.operations {
        by_f.entry(operation.invoke.f.as_str())
            .or_default()
            .push(operation);
    }
    let mut kinds: Vec<(&str, Vec<&Operation>)> = by_f.into_iter().collect();
    kinds.sort_by_key(|(f, ops)| (std::cmp::Reverse(ops.len()), *f));
    let mut out = String::new();
    for (i, (f, operations)) in kinds.iter().enumerate() {
        let unfinished = operations
            .iter()
            .filter(|o| o.latency_ns().is_none())
            .count();
        let note = if unfinished > 0 {
            format!(" <span class=\"note\">({unfinished} never completed, not drawn)</span>")
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "<h3>{} latency <span class=\"note\">({} ops)</span>{note}</h3>",
            esc(f),
            operations.len()
        );
        out += &latency_chart(&format!("latency-{i}"), operations, input);
    }
    out
}

fn latency_chart(id: &str, operations: &[&Operation], input: &ChartInput) -> String {
    let scale = &input.scale;
    let latencies_ms: Vec<f64> = operations
        .iter()
        .filter_map(|o| o.latency_ns())
        .map(|ns| ns as f64 / 1e6)
        .collect();
    let min = latencies_ms.iter().copied().fold(f64::INFINITY, f64::min);
    let max = latencies_ms.iter().copied().fold(0.0, f64::max);
    let bottom = TOP + PLOT_HEIGHT;
    let y_scale = LogScale::new(
        if min.is_finite() { min } else { 1.0 },
        max,
        bottom,
        PLOT_HEIGHT,
    );
    let mut out = frame(id, "latency", input, bottom);
    for (y, value) in y_scale.ticks() {
        out += &y_tick(scale, y, &latency_label(value));
    }
    let mut seen: HashSet<(i64, i64, Outcome)> = HashSet::new();
    let mut ok = Rects::default();
    let (mut fail, mut info) = (String::new(), String::new());
    for operation in operations {
        let Some(ns) = operation.latency_ns() else {
            continue;
        };
        let (x, y) = (scale.x(operation.invoke.time), y_scale.y(ns as f64 / 1e6));
        let outcome = operation.ending();
        if !seen.insert(((x / CELL_PX) as i64, (y / CELL_PX) as i64, outcome)) {
            continue;
        }
        match outcome {
            Outcome::Ok => ok.push(x - 1.2, y - 1.2, 2.4, 2.4),
            Outcome::Fail => {
                let _ = write!(fail, "M{:.1} {:.1}l3 3m0 -3l-3 3", x - 1.5, y - 1.5);
            }
            Outcome::Unknown => {
                let _ = write!(info, "M{x:.1} {:.1}l2.5 4.5h-5z", y - 2.5);
            }
        }
    }
    out += &ok.path("class=\"lat-ok\"", "ok");
    for (class, data, title) in [("lat-fail", fail, "fail"), ("lat-info", info, "info")] {
        if !data.is_empty() {
            let _ = write!(
                out,
                "<path class=\"{class}\" d=\"{data}\"><title>{title}</title></path>"
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// Completions per second in buckets of a round length, stacked by outcome.
pub fn throughput(input: &ChartInput) -> String {
    let scale = &input.scale;
    let bucket_s = nice_step(scale.end_ns() as f64 / 1e9 / THROUGHPUT_BUCKETS);
    let bucket_ns = (bucket_s * 1e9) as u64;
    let buckets = (scale.end_ns().div_ceil(bucket_ns.max(1))) as usize;
    let mut counts = vec![[0u32; 3]; buckets.max(1)];
    for operation in input.operations {
        if let Some(done) = operation.completion {
            let bucket = ((done.time / bucket_ns.max(1)) as usize).min(counts.len() - 1);
            counts[bucket][outcome_row(operation.ending())] += 1;
        }
    }
    let rate = |count: u32| count as f64 / bucket_s;
    let busiest = counts
        .iter()
        .map(|c| rate(c.iter().sum()))
        .fold(0.0, f64::max);
    let bottom = TOP + PLOT_HEIGHT;
    let y_scale = LinearScale::new(busiest, bottom, PLOT_HEIGHT);
    let mut out = format!(
        "<h3>throughput <span class=\"note\">(completed ops per second, in {} buckets)</span></h3>",
        esc(&format!("{bucket_s} s"))
    );
    out += &frame("throughput", "throughput", input, bottom);
    for (y, value) in y_scale.ticks() {
        out += &y_tick(scale, y, &format!("{value}/s"));
    }
    let mut stacks: Vec<Rects> = Outcome::ALL.iter().map(|_| Rects::default()).collect();
    for (i, bucket) in counts.iter().enumerate() {
        let x = scale.x(i as u64 * bucket_ns);
        let width = (scale.x((i as u64 + 1) * bucket_ns) - x - 0.5).max(0.5);
        let mut below = 0;
        for (row, count) in bucket.iter().enumerate().filter(|(_, c)| **c > 0) {
            let (base, top) = (y_scale.y(rate(below)), y_scale.y(rate(below + count)));
            stacks[row].push(x, top, width, base - top);
            below += count;
        }
    }
    for (outcome, rects) in Outcome::ALL.iter().zip(&stacks) {
        let class = format!("class=\"tp-{}\"", outcome.class());
        out += &rects.path(&class, outcome.class());
    }
    out.push_str("</svg>");
    out
}

fn outcome_row(outcome: Outcome) -> usize {
    Outcome::ALL.iter().position(|o| *o == outcome).unwrap_or(0)
}

/// An `<svg>` with the fault bands and the time axis under the plot.
fn frame(id: &str, class: &str, input: &ChartInput, bottom: f64) -> String {
    let scale = &input.scale;
    let mut out = svg::open(id, class, scale.right() + 20.0, bottom + AXIS_HEIGHT);
    out += &faults::bands(input.faults, input.palette, scale, TOP, PLOT_HEIGHT);
    out += &svg::time_axis(scale, bottom + 16.0, bottom);
    out
}

fn y_tick(scale: &TimeScale, y: f64, label: &str) -> String {
    format!(
        "<g class=\"axis\"><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text></g>",
        scale.left,
        scale.right(),
        scale.left - 6.0,
        y + 4.0,
        esc(label)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::operations::operations;
    use splitbrain_checker::{Op, OpType, Process};

    fn history(n: u64) -> Vec<Op> {
        (0..n)
            .flat_map(|i| {
                let p = Process::Client(i % 3);
                let kind = if i % 10 == 0 {
                    OpType::Fail
                } else {
                    OpType::Ok
                };
                [
                    Op::new(p, OpType::Invoke, "add").at(2 * i, i * 1_000_000),
                    Op::new(p, kind, "add").at(2 * i + 1, i * 1_000_000 + 500_000),
                ]
            })
            .collect()
    }

    #[test]
    fn points_on_one_cell_are_drawn_once() {
        let history = history(20_000);
        let operations = operations(&history);
        let palette = FaultPalette::new(&[]);
        let input = ChartInput {
            operations: &operations,
            faults: &[],
            palette: &palette,
            scale: TimeScale::new(20_000_000_000, 150.0, 1200.0),
        };
        let html = latency(&input);
        assert!(html.contains("add latency"));
        // Equal latencies, 20,000 ops over 600 columns: one point per column and outcome.
        let squares = html.matches("h-2.4z").count();
        assert!(squares <= 600, "{squares} squares drawn");
        assert!(html.contains("class=\"lat-fail\""));
    }

    #[test]
    fn throughput_is_per_second_in_round_buckets() {
        let history = history(10_000);
        let operations = operations(&history);
        let palette = FaultPalette::new(&[]);
        let input = ChartInput {
            operations: &operations,
            faults: &[],
            palette: &palette,
            scale: TimeScale::new(10_000_000_000, 150.0, 1200.0),
        };
        let html = throughput(&input);
        // 10 s / 120 buckets rounds up to 0.1 s buckets of 100 ops: 1000 ops/s at the top.
        assert!(html.contains("in 0.1 s buckets"), "{}", &html[..200]);
        assert!(html.contains(">1000/s<"));
        assert!(html.contains("class=\"tp-ok\"") && html.contains("class=\"tp-fail\""));
    }
}
