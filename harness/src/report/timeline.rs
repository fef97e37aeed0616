//! The timeline: one lane per client process, lock holds as bars, failed and unknown
//! operations (and every operation of a data workload) as marks below them, fault periods as
//! bands across all lanes, who was master as a strip on top, a lane per node (and client
//! worker) for what the faults did to it, and every double grant highlighted where its holds
//! overlap, linked to its row in the checker section, lighting up the node lanes and events
//! its explanation names.
//!
//! Jepsen retires a process after an `info` and its worker carries on as a new process, so a
//! run with many timeouts has many short-lived processes. Up to [`MAX_PROCESS_LANES`] of them
//! each get a lane, which shows exactly which process did what; past that the lanes would be
//! too thin to read, so they are grouped by worker (`process % concurrency`): a worker's
//! processes never overlap in time, so its lane reads the same, only the numbers merge.
//!
//! A lane row with few elements draws each one, with a tooltip. A busy one (over
//! [`EXACT_BUDGET`] elements shared across the rows) draws holds as merged bars (gaps under a
//! pixel closed) and operations as a density per two-pixel column, in four shades: the page
//! stays small and quick for 100,000 ops. Double grants, faults and masters are always drawn
//! exactly.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use splitbrain_checker::holds::{DoubleGrant, Hold};
use splitbrain_checker::lock_safety::LockSafety;
use splitbrain_checker::timeline::{Spell, State};
use splitbrain_checker::windows::FaultWindow;
use splitbrain_checker::Process;

use super::aggregate::{density, merge_spans, shade, DENSITY_PX, SHADES};
use super::checks::GrantList;
use super::faults::{self, FaultPalette};
use super::html::{esc, seconds};
use super::operations::{Drawn, MasterPeriod, Operation, Outcome};
use super::scale::TimeScale;
use super::svg::{self, Rects};

/// More client processes than this are drawn as one lane per worker.
pub const MAX_PROCESS_LANES: usize = 40;
/// About how many elements the timeline draws one by one before it aggregates busy rows.
pub const EXACT_BUDGET: usize = 6_000;

const AXIS_HEIGHT: f64 = 22.0;
const MASTER_HEIGHT: f64 = 18.0;
/// A node's (or client worker's) lane: what the faults did to it.
const NODE_LANE_HEIGHT: f64 = 14.0;
const LANE_HEIGHT: f64 = 24.0;
const HOLD_TOP: f64 = 2.0;
const HOLD_HEIGHT: f64 = 10.0;
/// Rows in a lane: holds, then operations by outcome (ok, fail, info).
const ROWS_PER_LANE: usize = 4;
/// Operation marks sit below the holds, one thin row per outcome.
const MARK_TOP: f64 = 13.0;
const MARK_HEIGHT: f64 = 3.0;

/// What the timeline shows.
pub struct TimelineInput<'a> {
    pub operations: &'a [Operation<'a>],
    pub holds: &'a [Hold],
    pub faults: &'a [FaultWindow],
    pub palette: &'a FaultPalette,
    pub masters: &'a [MasterPeriod],
    /// What the faults did to each node and client worker, and who was master: a lane each.
    pub spells: &'a [Spell],
    pub node_lanes: &'a [String],
    pub lock_safety: Option<&'a LockSafety>,
    /// Client workers, from test.json; lanes group by worker only when it is known.
    pub concurrency: Option<usize>,
    pub scale: TimeScale,
    /// What every id in the drawing begins with: nothing for the run's timeline, a grant's
    /// anchor for its close-up, so that no id is on the page twice.
    pub ids: &'a str,
    /// Whether a click on a grant's mark opens its close-up ([`close_up`]), where it has
    /// one, rather than its row in the checker section.
    pub to_close_ups: bool,
}

/// How far either side of a double grant's overlap its close-up reaches.
pub const CLOSE_UP_MARGIN_MS: f64 = 2_000.0;

/// The time a grant's close-up shows, in ms: its overlap, and the margin either side.
pub fn close_up_span(grant: &DoubleGrant) -> (f64, f64) {
    let from_ms = (grant.second.start_ms - CLOSE_UP_MARGIN_MS).max(0.0);
    (
        from_ms,
        grant.second.start_ms + grant.overlap_ms + CLOSE_UP_MARGIN_MS,
    )
}

/// The timeline of `input` from [`CLOSE_UP_MARGIN_MS`] before `grant` to as long after its
/// overlap, with only what happened then: where a kill, a pause or a cut that is a hairline
/// on a minute's axis can be read against each operation. Its ids start with `id`, the
/// close-up's own, so that none repeats the whole run's.
pub fn close_up(input: &TimelineInput, id: &str, grant: &DoubleGrant) -> String {
    let (from_ms, to_ms) = close_up_span(grant);
    let scale = TimeScale::window(ns(from_ms), ns(to_ms), input.scale.left, input.scale.width);
    let ms = |ns: u64| ns as f64 / 1e6;
    let operations: Vec<Operation> = input
        .operations
        .iter()
        .filter(|o| scale.shows_ms(ms(o.invoke.time), ms(o.end_ns())))
        .copied()
        .collect();
    let holds: Vec<Hold> = input
        .holds
        .iter()
        .filter(|h| scale.shows_ms(h.start_ms, h.end_ms.max(h.lease_end_ms)))
        .cloned()
        .collect();
    let faults: Vec<FaultWindow> = input
        .faults
        .iter()
        .filter(|f| scale.shows_ms(f.start_ms, f.stop_ms.unwrap_or(f64::INFINITY)))
        .cloned()
        .collect();
    let masters: Vec<MasterPeriod> = input
        .masters
        .iter()
        .filter(|m| scale.shows_ms(ms(m.start_ns), ms(m.end_ns)))
        .cloned()
        .collect();
    let spells: Vec<Spell> = input
        .spells
        .iter()
        .filter(|s| scale.shows_ms(s.start_ms, s.shown_stop_ms().unwrap_or(f64::INFINITY)))
        .cloned()
        .collect();
    let ids = format!("{id}-");
    render(&TimelineInput {
        operations: &operations,
        holds: &holds,
        faults: &faults,
        masters: &masters,
        spells: &spells,
        scale,
        ids: &ids,
        to_close_ups: false,
        ..*input
    })
}

/// The timeline as one `<svg id="timeline">`.
pub fn render(input: &TimelineInput) -> String {
    let lanes = Lanes::of(input);
    let nodes_top = AXIS_HEIGHT
        + if input.masters.is_empty() {
            0.0
        } else {
            MASTER_HEIGHT
        };
    let lanes_top = nodes_top + NODE_LANE_HEIGHT * input.node_lanes.len() as f64;
    let bottom = lanes_top + LANE_HEIGHT * lanes.rows.len() as f64;
    let scale = &input.scale;
    let width = scale.right() + 20.0;
    let mut out = svg::open(
        &format!("{}timeline", input.ids),
        "timeline",
        width,
        bottom + 4.0,
    );
    for (i, _) in lanes.rows.iter().enumerate().filter(|(i, _)| i % 2 == 1) {
        let _ = write!(
            out,
            "<rect class=\"lane-bg\" x=\"0\" y=\"{:.1}\" width=\"{width:.0}\" height=\"{LANE_HEIGHT}\"/>",
            lanes_top + LANE_HEIGHT * i as f64
        );
    }
    out += &faults::bands(
        input.faults,
        input.palette,
        scale,
        AXIS_HEIGHT,
        bottom - AXIS_HEIGHT,
    );
    out += &svg::time_axis(scale, 12.0, bottom);
    if !input.masters.is_empty() {
        out += &masters(input.masters, scale, AXIS_HEIGHT);
    }
    out += &node_lanes(input, nodes_top);
    let per_row = (EXACT_BUDGET / (lanes.rows.len() * ROWS_PER_LANE).max(1)).clamp(20, 400);
    for (i, lane) in lanes.rows.iter().enumerate() {
        let top = lanes_top + LANE_HEIGHT * i as f64;
        let _ = write!(
            out,
            "<g class=\"lane\" id=\"{}lane-{i}\"><text x=\"6\" y=\"{:.1}\">{}<title>{}</title></text>",
            input.ids,
            top + 15.0,
            esc(&lane.label),
            esc(&lane.members_label())
        );
        out += &holds(&lane.holds, scale, top, per_row);
        out += &marks(&lane.operations, scale, top, per_row);
        out.push_str("</g>");
    }
    if let Some(safety) = input.lock_safety {
        let nodes = NodeRows {
            names: input.node_lanes,
            top: nodes_top,
        };
        out += &highlights(safety, &lanes, &nodes, input, lanes_top);
    }
    out.push_str("</svg>");
    out
}

/// The lanes, in order of process (or worker) number.
struct Lanes<'a> {
    rows: Vec<Lane<'a>>,
    /// Which row each process is drawn in.
    row_of: BTreeMap<u64, usize>,
}

struct Lane<'a> {
    label: String,
    processes: Vec<u64>,
    holds: Vec<&'a Hold>,
    operations: Vec<&'a Operation<'a>>,
}

impl Lane<'_> {
    fn members_label(&self) -> String {
        const SHOWN: usize = 12;
        let shown: Vec<String> = self
            .processes
            .iter()
            .take(SHOWN)
            .map(u64::to_string)
            .collect();
        let more = self.processes.len().saturating_sub(SHOWN);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        format!("process {}{more}", shown.join(", "))
    }
}

impl<'a> Lanes<'a> {
    fn of(input: &'a TimelineInput) -> Lanes<'a> {
        let processes: BTreeSet<u64> = input
            .operations
            .iter()
            .map(Operation::process)
            .chain(input.holds.iter().filter_map(|h| client(h.process)))
            .collect();
        let worker_of = match input.concurrency {
            Some(workers) if processes.len() > MAX_PROCESS_LANES && workers > 0 => {
                Some(workers as u64)
            }
            _ => None,
        };
        let lane_key = |p: u64| worker_of.map_or(p, |workers| p % workers);
        let keys: BTreeSet<u64> = processes.iter().map(|p| lane_key(*p)).collect();
        let index: BTreeMap<u64, usize> = keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
        let mut rows: Vec<Lane> = keys
            .iter()
            .map(|key| Lane {
                label: match worker_of {
                    Some(_) => format!("worker {key}"),
                    None => format!("process {key}"),
                },
                processes: Vec::new(),
                holds: Vec::new(),
                operations: Vec::new(),
            })
            .collect();
        let row_of: BTreeMap<u64, usize> = processes
            .iter()
            .map(|p| (*p, index[&lane_key(*p)]))
            .collect();
        for (process, row) in &row_of {
            rows[*row].processes.push(*process);
        }
        for hold in input.holds {
            if let Some(row) = client(hold.process).and_then(|p| row_of.get(&p)) {
                rows[*row].holds.push(hold);
            }
        }
        for operation in input.operations.iter().filter(|o| !o.shown_by_hold()) {
            rows[row_of[&operation.process()]]
                .operations
                .push(operation);
        }
        Lanes { rows, row_of }
    }
}

fn client(process: Process) -> Option<u64> {
    match process {
        Process::Client(p) => Some(p),
        Process::Nemesis(_) => None,
    }
}

fn ns(ms: f64) -> u64 {
    (ms.max(0.0) * 1e6) as u64
}

/// A lane's holds: definite ones solid (the part past the lease, a zombie's, in another
/// colour), possible ones (acquires of unknown outcome) as dashed outlines.
fn holds(holds: &[&Hold], scale: &TimeScale, top: f64, per_row: usize) -> String {
    let y = top + HOLD_TOP;
    let (possible, definite): (Vec<&Hold>, Vec<&Hold>) =
        holds.iter().partition(|h| h.ended_by == "unknown-outcome");
    let mut out = String::new();
    if definite.len() <= per_row {
        for hold in &definite {
            let live_end = hold.end_ms.min(hold.lease_end_ms);
            out += &bar(
                "hold",
                scale.x_ms(hold.start_ms),
                scale.x_ms(live_end),
                y,
                &describe_hold(hold),
            );
            if hold.end_ms > hold.lease_end_ms {
                let title = format!("past its lease: {}", describe_hold(hold));
                out += &bar(
                    "hold-stale",
                    scale.x_ms(hold.lease_end_ms),
                    scale.x_ms(hold.end_ms),
                    y,
                    &title,
                );
            }
        }
    } else {
        out += &merged("hold", &definite, scale, y, "holds");
    }
    if possible.len() <= per_row {
        for hold in &possible {
            out += &bar(
                "hold-possible",
                scale.x_ms(hold.start_ms),
                scale.x_ms(hold.end_ms),
                y,
                &describe_hold(hold),
            );
        }
    } else {
        out += &merged("hold-possible", &possible, scale, y, "possible holds");
    }
    out
}

fn bar(class: &str, x: f64, end: f64, y: f64, title: &str) -> String {
    format!(
        "<rect class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{HOLD_HEIGHT}\"><title>{}</title></rect>",
        (end - x).max(1.0),
        esc(title)
    )
}

fn merged(class: &str, holds: &[&Hold], scale: &TimeScale, y: f64, what: &str) -> String {
    let gap_ns = scale.end_ns() as f64 / scale.width;
    let spans = merge_spans(
        holds.iter().map(|h| (ns(h.start_ms), ns(h.end_ms))),
        gap_ns as u64,
    );
    let mut rects = Rects::default();
    for (start, end) in &spans {
        let x = scale.x(*start);
        rects.push(x, y, (scale.x(*end) - x).max(1.0), HOLD_HEIGHT);
    }
    rects.path(
        &format!("class=\"{class} merged\""),
        &format!(
            "{} {what}, merged where less than a pixel apart",
            holds.len()
        ),
    )
}

fn describe_hold(hold: &Hold) -> String {
    let nodes = hold
        .nodes
        .as_ref()
        .filter(|n| !n.is_empty())
        .map(|n| format!(" on {}", n.join(",")))
        .unwrap_or_default();
    let what = if hold.ended_by == "unknown-outcome" {
        "may have held"
    } else {
        "held"
    };
    format!(
        "process {} {what} {} from {} to {} ({}){nodes}; lease until {}",
        hold.process,
        hold.key,
        seconds(hold.start_ms),
        seconds(hold.end_ms),
        hold.ended_by,
        seconds(hold.lease_end_ms)
    )
}

/// A lane's operations, one thin row per outcome: each from invoke to completion with a
/// tooltip, or, in a busy row, as a density.
fn marks(operations: &[&Operation], scale: &TimeScale, top: f64, per_row: usize) -> String {
    let mut out = String::new();
    for (row, outcome) in Outcome::ALL.into_iter().enumerate() {
        let in_row: Vec<&Operation> = operations
            .iter()
            .copied()
            .filter(|o| o.ending() == outcome)
            .collect();
        let y = top + MARK_TOP + row as f64 * (MARK_HEIGHT + 0.5);
        let class = format!("op-{}", outcome.class());
        if in_row.len() <= per_row {
            for operation in in_row {
                let x = scale.x(operation.invoke.time);
                let _ = write!(
                    out,
                    "<rect class=\"{class}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{MARK_HEIGHT}\"><title>{}</title></rect>",
                    (scale.x(operation.end_ns()) - x).max(1.5),
                    esc(&describe_operation(operation))
                );
            }
        } else {
            let columns = (scale.width / DENSITY_PX) as usize;
            let counts = density(in_row.iter().map(|o| o.invoke.time), scale, columns);
            for (level, rects) in shade(&counts, scale, y, MARK_HEIGHT).iter().enumerate() {
                let title = format!(
                    "{} {} ops; darker columns hold more",
                    in_row.len(),
                    outcome.class()
                );
                out += &rects.path(
                    &format!(
                        "class=\"{class} density\" fill-opacity=\"{:.2}\"",
                        (level + 1) as f64 / SHADES as f64
                    ),
                    &title,
                );
            }
        }
    }
    out
}

fn describe_operation(operation: &Operation) -> String {
    let key = operation
        .invoke
        .key
        .as_deref()
        .map(|k| format!(" {k}"))
        .unwrap_or_default();
    let value = operation
        .invoke
        .value
        .as_ref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    let took = match operation.latency_ns() {
        Some(ns) => format!(", {:.1} ms", ns as f64 / 1e6),
        None => ", never completed".into(),
    };
    let error = operation
        .error()
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    format!(
        "process {} {}{key}{value} {} at {}{took}{error}",
        operation.process(),
        operation.invoke.f,
        operation.ending().class(),
        seconds(operation.invoke.time as f64 / 1e6)
    )
}

/// The master strip: who the harness saw as master, in red where two nodes were at once.
fn masters(periods: &[MasterPeriod], scale: &TimeScale, top: f64) -> String {
    let mut out = format!(
        "<g class=\"masters\" id=\"masters\"><text x=\"6\" y=\"{:.1}\">master</text>",
        top + 13.0
    );
    for period in periods {
        let x = scale.x(period.start_ns);
        let width = (scale.x(period.end_ns) - x).max(1.0);
        let names = period.nodes.join(",");
        let class = if period.nodes.len() > 1 {
            "master-split"
        } else {
            "master-one"
        };
        let label = if width > 8.0 * names.len() as f64 {
            format!(
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x + 3.0,
                top + 13.0,
                esc(&names)
            )
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "<g class=\"master-period\"><rect class=\"{class}\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"{:.1}\"><title>master: {} from {} to {}</title></rect>{label}</g>",
            top + 2.0,
            MASTER_HEIGHT - 4.0,
            esc(if names.is_empty() { "none" } else { &names }),
            seconds(period.start_ns as f64 / 1e6),
            seconds(period.end_ns as f64 / 1e6)
        );
    }
    out.push_str("</g>");
    out
}

/// Where the node lanes are.
struct NodeRows<'a> {
    names: &'a [String],
    top: f64,
}

impl NodeRows<'_> {
    fn y(&self, node: &str) -> Option<f64> {
        let row = self.names.iter().position(|n| n == node)?;
        Some(self.top + NODE_LANE_HEIGHT * row as f64)
    }
}

/// A lane per node and client worker: down, paused, cut off (and from whom), clock offset,
/// links cut, master, each spell with the sentence an explanation would use as its tooltip.
fn node_lanes(input: &TimelineInput, top: f64) -> String {
    let scale = &input.scale;
    let mut out = format!("<g class=\"node-lanes\" id=\"{}node-lanes\">", input.ids);
    for (i, name) in input.node_lanes.iter().enumerate() {
        let y = top + NODE_LANE_HEIGHT * i as f64;
        let _ = write!(
            out,
            "<g class=\"node-lane\" id=\"{}node-lane-{}\"><text x=\"6\" y=\"{:.1}\">{}</text>",
            input.ids,
            esc(name),
            y + 11.0,
            esc(name)
        );
        for spell in input.spells.iter().filter(|s| &s.node == name) {
            let x = scale.x_ms(spell.start_ms);
            let end = spell
                .shown_stop_ms()
                .map_or(scale.right(), |stop| scale.x_ms(stop));
            let width = (end - x).max(2.0);
            let label = match spell.offset_ms {
                Some(offset) if width > 50.0 => format!(
                    "<text x=\"{:.1}\" y=\"{:.1}\">{offset:+.0} ms</text>",
                    x + 3.0,
                    y + 11.0
                ),
                _ => String::new(),
            };
            let _ = write!(
                out,
                "<rect class=\"spell spell-{}\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"{:.1}\"><title>{} ({})</title></rect>{label}",
                state_class(spell.state),
                y + 2.0,
                NODE_LANE_HEIGHT - 4.0,
                esc(&spell.phrase()),
                esc(&spell.fault)
            );
        }
        out.push_str("</g>");
    }
    out.push_str("</g>");
    out
}

/// A spell's CSS class suffix: its state in kebab case.
fn state_class(state: State) -> &'static str {
    match state {
        State::Down => "down",
        State::Paused => "paused",
        State::CutOff => "cut-off",
        State::Clock => "clock",
        State::Links => "links",
        State::Packets => "packets",
        State::Failover => "failover",
        State::ClientPaused => "client-paused",
        State::ClientCrashed => "client-crashed",
        State::Master => "master",
    }
}

/// What an explained double grant's mark lights up while it is hovered or followed: the
/// lanes of the nodes its sentence names and the spells it rests on.
fn explained_spells(grant: &DoubleGrant, nodes: &NodeRows, scale: &TimeScale) -> String {
    let Some(explained) = &grant.explanation else {
        return String::new();
    };
    let mut out = String::from("<g class=\"why\">");
    for node in &explained.nodes {
        if let Some(y) = nodes.y(node) {
            let _ = write!(
                out,
                "<rect class=\"why-lane\" x=\"0\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{NODE_LANE_HEIGHT}\"/>",
                scale.right() + 20.0
            );
        }
    }
    for spell in &explained.spells {
        let Some(y) = nodes.y(&spell.node) else {
            continue;
        };
        let x = scale.x_ms(spell.start_ms);
        let end = spell
            .shown_stop_ms()
            .map_or(scale.right(), |stop| scale.x_ms(stop));
        let _ = write!(
            out,
            "<rect class=\"why-spell\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>",
            x - 1.0,
            y + 1.0,
            (end - x).max(2.0) + 2.0,
            NODE_LANE_HEIGHT - 2.0
        );
    }
    out.push_str("</g>");
    out
}

/// Every double grant the checker listed, over the lanes of both holders where their holds
/// overlap, linked to its close-up where it has one, else to its row in the checker section;
/// hovering or following one lights up what its explanation names.
fn highlights(
    safety: &LockSafety,
    lanes: &Lanes,
    nodes: &NodeRows,
    input: &TimelineInput,
    lanes_top: f64,
) -> String {
    let scale = &input.scale;
    let mut out = String::from("<g class=\"highlights\">");
    for list in GrantList::ALL {
        for (i, grant) in list.grants(safety).iter().enumerate() {
            let overlap_end = grant.second.start_ms + grant.overlap_ms;
            if !scale.shows_ms(grant.second.start_ms, overlap_end) {
                continue;
            }
            let rows: Vec<usize> = [&grant.first, &grant.second]
                .iter()
                .filter_map(|h| client(h.process))
                .filter_map(|p| lanes.row_of.get(&p).copied())
                .collect();
            let (Some(first), Some(last)) = (rows.iter().min(), rows.iter().max()) else {
                continue;
            };
            let start = scale.x_ms(grant.second.start_ms);
            let end = scale.x_ms(grant.second.start_ms + grant.overlap_ms);
            // An overlap under a few pixels still gets a mark wide enough to see and click.
            let (x, width) = if end - start < 3.0 {
                (start - 1.5, 3.0)
            } else {
                (start, end - start)
            };
            let anchor = list.anchor(i);
            let close_up = list.close_up(i).filter(|_| input.to_close_ups);
            let target = close_up.as_ref().unwrap_or(&anchor);
            let _ = write!(
                out,
                "<a href=\"#{target}\" id=\"{}{anchor}-mark\" class=\"{}\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"{:.1}\"/><title>{}</title></a>",
                input.ids,
                list.class(),
                x,
                lanes_top + LANE_HEIGHT * *first as f64 + 1.0,
                LANE_HEIGHT * (last - first + 1) as f64 - 2.0,
                esc(&describe_grant(list, i, grant, close_up.is_some()))
            );
            out += &explained_spells(grant, nodes, scale);
        }
    }
    out.push_str("</g>");
    out
}

fn describe_grant(list: GrantList, i: usize, grant: &DoubleGrant, close_up: bool) -> String {
    let why = grant
        .explanation
        .as_ref()
        .map_or(String::new(), |explained| format!("\n{}", explained.line()));
    format!(
        "{} #{} on {}: processes {} and {} overlapping {:.1} ms from {} (click for {}){why}",
        list.name(),
        i + 1,
        grant.key,
        grant.first.process,
        grant.second.process,
        grant.overlap_ms,
        seconds(grant.second.start_ms),
        match close_up {
            true => "a close-up",
            false => "details",
        }
    )
}
