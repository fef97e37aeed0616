//! Issue 7's reports: a `report.html` in every run folder, and `results/index.html` over all
//! the runs stored.
//!
//! A run's verdict says whether something went wrong; its report shows what, when, and under
//! which fault, which is what a person needs to believe a double grant or to debug a client.
//! Each report is one self-contained file (inline CSS and SVG, a few lines of script, nothing
//! fetched), so it can be mailed, attached to CI, or opened from disk years later.
//!
//! Everything is drawn from what the run stored, never from the live run: `splitbrain report
//! DIR` makes the same page again, from the same files, as the run did. The files here are the
//! stages of that: [`stored`] reads the folder; [`operations`] pairs the history's ops;
//! [`timeline`], [`charts`] and [`checks`] draw; [`index`] lists runs; [`html`], [`svg`],
//! [`scale`], [`aggregate`] and [`faults`] are the shared pieces.

mod aggregate;
mod charts;
mod checks;
mod faults;
pub mod html;
mod index;
mod operations;
mod scale;
pub mod stored;
mod svg;
mod timeline;

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use splitbrain_checker::{holds, windows};

use crate::cli::ReportArgs;
use crate::error::{Exit, HarnessError};
use crate::progress;
use crate::store::FORMAT;
use html::{esc, href, verdict_badge};
use stored::StoredRun;

pub use index::{listing_page, render_index, write_index};

/// Where plots start (lane and axis labels sit left of it) and how wide they are.
const LABEL_WIDTH: f64 = 150.0;
const PLOT_WIDTH: f64 = 1200.0;

/// `splitbrain report`: one run's report, or the index of a results folder.
pub fn command(args: &ReportArgs) -> Result<Exit, HarnessError> {
    if args.index {
        let root = args.dir.clone().unwrap_or_else(|| PathBuf::from("results"));
        let (path, runs) = write_index(&root)?;
        stdoutln!(
            "wrote {} ({runs} run{})",
            path.display(),
            if runs == 1 { "" } else { "s" }
        );
    } else {
        let dir = args.dir.as_deref().ok_or_else(|| {
            HarnessError::BadInput(
                "give a run folder, like results/<test>/<time>, or --index for the results \
                 folder's index"
                    .into(),
            )
        })?;
        stdoutln!("wrote {}", write_report(dir)?.display());
    }
    Ok(Exit::Success)
}

/// Writes `report.html` into the run folder `dir`, from what the folder holds.
pub fn write_report(dir: &Path) -> Result<PathBuf, HarnessError> {
    write_stored(&StoredRun::read(dir)?)
}

/// Writes `report.html` into `run.dir`.
pub fn write_stored(run: &StoredRun) -> Result<PathBuf, HarnessError> {
    let path = run.dir.join("report.html");
    std::fs::write(&path, render(run)).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// At the end of a run: its report, then the results folder's index. Neither may cost the run
/// anything, its history and results are stored already, so a failure (even a panic) is
/// logged and the run goes on to its verdict.
pub fn write_after_run(dir: &Path, results: &Path) {
    let report = std::panic::catch_unwind(|| write_report(dir).map(|_| ()));
    log_failure("the report", report);
    write_index_after(results);
}

/// The results folder's index, after a run or a group of runs (a matrix, a scenario, a card):
/// its runs are stored already, so a failure is logged and costs them nothing.
pub fn write_index_after(results: &Path) {
    let index = std::panic::catch_unwind(|| write_index(results).map(|_| ()));
    log_failure("the results index", index);
}

fn log_failure(what: &str, outcome: std::thread::Result<Result<(), HarnessError>>) {
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => progress::step(&format!("could not write {what}: {e:#}")),
        Err(_) => progress::step(&format!(
            "writing {what} panicked; the run's history and results are stored"
        )),
    }
}

/// The whole page for one run.
fn render(run: &StoredRun) -> String {
    let history = &run.history;
    let operations = operations::operations(history);
    let holds = holds::holds(history);
    let fault_windows = windows::faults(history);
    let end_ns = history.iter().map(|op| op.time).max().unwrap_or(0);
    let scale = scale::TimeScale::new(end_ns, LABEL_WIDTH, PLOT_WIDTH);
    let palette = faults::FaultPalette::new(&fault_windows);
    let masters = operations::master_periods(history, end_ns);
    let node_timeline = splitbrain_checker::timeline::Timeline::of(history);
    let node_lanes = node_timeline.lanes();

    let mut body = header(run, end_ns, operations.len());
    body += "<h2 id=\"timeline-section\">Timeline</h2>";
    body += &palette.legend();
    body += TIMELINE_LEGEND;
    if operations.is_empty() {
        body += "<p class=\"note\">No client operations were recorded.</p>";
    }
    let whole_run = timeline::TimelineInput {
        operations: &operations,
        holds: &holds,
        faults: &fault_windows,
        palette: &palette,
        masters: &masters,
        spells: &node_timeline.spells,
        node_lanes: &node_lanes,
        lock_safety: run.results.checkers.get(),
        concurrency: run.test.concurrency,
        scale,
        ids: "",
        to_close_ups: true,
    };
    body += &timeline::render(&whole_run);
    body += &close_ups(&whole_run);
    let charts = charts::ChartInput {
        operations: &operations,
        faults: &fault_windows,
        palette: &palette,
        scale,
    };
    body += "<h2 id=\"latency-section\">Latency and throughput</h2>";
    body += LATENCY_LEGEND;
    body += &charts::latency(&charts);
    body += &charts::throughput(&charts);
    body += "<h2 id=\"checkers\">Checkers</h2>";
    if run.results_rechecked {
        body += "<p class=\"note\">This run has no results.json (it was stopped before writing \
                 one): the checkers ran again on its history for this report.</p>";
    }
    if run.results.format > FORMAT {
        body += &format!(
            "<p class=\"note\">This results.json was written by a newer splitbrain (format {}, \
             this one reads {FORMAT}): what it cannot read is shown as JSON.</p>",
            run.results.format
        );
    }
    body += &checks::render(&run.results, run.test.concurrency);
    body += &files(run);
    html::page(&format!("{} — splitbrain", run.test.name), &body)
}

/// A close-up of each of the first [`checks::CLOSE_UPS`] grants of each list, shown only
/// when its mark is followed (the page's address ends in its id).
fn close_ups(whole_run: &timeline::TimelineInput) -> String {
    let Some(safety) = whole_run.lock_safety else {
        return String::new();
    };
    let mut out = String::new();
    for list in checks::GrantList::ALL {
        for (i, grant) in list.grants(safety).iter().enumerate() {
            let (Some(id), anchor) = (list.close_up(i), list.anchor(i)) else {
                break;
            };
            let (from_ms, to_ms) = timeline::close_up_span(grant);
            let _ = write!(
                out,
                "<figure class=\"close-up\" id=\"{id}\"><figcaption>{name} #{n}, from {from} to \
                 {to}: <a href=\"#{anchor}\">what explains it</a> · \
                 <a href=\"#timeline-section\">the whole run</a></figcaption>{svg}</figure>",
                name = list.name(),
                n = i + 1,
                from = html::seconds(from_ms),
                to = html::seconds(to_ms),
                svg = timeline::close_up(whole_run, &id, grant),
            );
        }
    }
    out
}

const TIMELINE_LEGEND: &str = "<div class=\"legend\">\
<span><i class=\"swatch\" style=\"background:#3b73c4\"></i>lock held</span>\
<span><i class=\"swatch\" style=\"background:#8e44ad\"></i>held past its lease</span>\
<span><i class=\"swatch\" style=\"border:1px dashed #d98e04\"></i>may have held (unknown acquire)</span>\
<span><i class=\"swatch\" style=\"background:#2e8540\"></i>ok</span>\
<span><i class=\"swatch\" style=\"background:#b8a48e\"></i>fail</span>\
<span><i class=\"swatch\" style=\"background:#e07b00\"></i>info (unknown)</span>\
<span><i class=\"swatch\" style=\"background:rgba(215,38,61,.35);border-color:#d7263d\"></i>double grant (click: a close-up of the first five, the details of the rest)</span>\
<span><i class=\"swatch\" style=\"background:#d7263d\"></i>two masters</span>\
</div><div class=\"legend\">node lanes:\
<span><i class=\"swatch\" style=\"background:#3d3d3d\"></i>down</span>\
<span><i class=\"swatch\" style=\"background:#7f8fa6\"></i>paused</span>\
<span><i class=\"swatch\" style=\"background:#e4a11b\"></i>cut off</span>\
<span><i class=\"swatch\" style=\"background:#2a9d8f\"></i>clock off</span>\
<span><i class=\"swatch\" style=\"background:#c98bb9\"></i>links cut or degraded</span>\
<span><i class=\"swatch\" style=\"background:#cfd8e3\"></i>master</span>\
<span><i class=\"swatch\" style=\"border:2px solid #d7263d\"></i>what a double grant's explanation names (hover or follow it)</span>\
</div>";

const LATENCY_LEGEND: &str = "<div class=\"legend\">\
<span><svg width=\"10\" height=\"10\"><rect class=\"lat-ok\" x=\"3\" y=\"3\" width=\"4\" height=\"4\"/></svg>ok</span>\
<span><svg width=\"10\" height=\"10\"><path class=\"lat-fail\" d=\"M2 2l6 6m0 -6l-6 6\"/></svg>fail</span>\
<span><svg width=\"10\" height=\"10\"><path class=\"lat-info\" d=\"M5 1l4 8h-8z\"/></svg>info (timed out: the latency is the timeout)</span>\
</div>";

fn header(run: &StoredRun, end_ns: u64, operations: usize) -> String {
    let test = &run.test;
    let mut out = format!(
        "<h1>{}</h1><p>{}{}</p><dl class=\"facts\">",
        esc(&test.name),
        verdict_badge(Some(run.results.valid)),
        if run.results.interrupted {
            " <span class=\"note\">the run was interrupted; the verdict covers the history up \
             to then</span>"
        } else {
            ""
        }
    );
    let limit = test
        .time_limit_ms
        .map(|ms| {
            format!(
                "{}; ",
                humantime::format_duration(std::time::Duration::from_millis(ms))
            )
        })
        .unwrap_or_default();
    let facts = [
        (
            "deployment",
            match &test.server {
                Some(server) => format!("{} ({server})", test.deployment),
                None => test.deployment.clone(),
            },
        ),
        ("client", test.client.clone()),
        ("workload", test.workload.clone()),
        ("faults", test.faults_label()),
        (
            "seed",
            test.seed.map_or("unknown".into(), |s| s.to_string()),
        ),
        (
            "duration",
            format!(
                "{limit}the history spans {:.1} s: {} ops, {operations} client operations",
                end_ns as f64 / 1e9,
                run.history.len()
            ),
        ),
        ("started", test.started.clone().unwrap_or_default()),
        ("folder", run.dir.display().to_string()),
    ];
    for (name, value) in facts {
        let _ = write!(out, "<dt>{name}</dt><dd>{}</dd>", esc(&value));
    }
    out.push_str("</dl>");
    if let Some(command) = &test.command {
        let _ = write!(
            out,
            "<p>To run it again:</p><pre id=\"command\">{}</pre>",
            esc(command)
        );
    }
    out
}

fn files(run: &StoredRun) -> String {
    let mut out = String::from("<h2 id=\"files\">Files</h2><ul id=\"file-links\">");
    for file in &run.files {
        let _ = write!(out, "<li><a href=\"{}\">{}</a></li>", href(file), esc(file));
    }
    out.push_str("</ul>");
    out
}
