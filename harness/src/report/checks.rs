//! The checkers' findings, from `results.json`: lock-safety's double grants (each with both
//! holds, the overlap and the faults active, anchored so the timeline can link to it), lost
//! writes, fencing violations, stuck periods, acquisition statistics and linearizability (the
//! last operations linearized and those that could not come next). Any other checker in the
//! list of every checker is shown by its summary lines and findings; a section nobody can read
//! (a newer splitbrain's) as its JSON.

use std::fmt::Write;

use serde_json::Value;
use splitbrain_checker::acquisition_stats::AcquisitionStats;
use splitbrain_checker::coverage::Coverage;
use splitbrain_checker::every::{Registration, Role, Section};
use splitbrain_checker::fencing::{FencePair, Fencing};
use splitbrain_checker::holds::{DoubleGrant, Hold};
use splitbrain_checker::linearizability::{Linearizability, OpSummary};
use splitbrain_checker::lock_safety::LockSafety;
use splitbrain_checker::lost_writes::LostWrites;
use splitbrain_checker::stats::Stats;
use splitbrain_checker::stuck_lock::StuckLock;
use splitbrain_checker::REPORTED_VIOLATIONS;
use splitbrain_checker::{Checked, Process, Valid};

use super::faults;
use super::html::{anchored_table, aside_badge, esc, seconds, table, verdict_badge};
use crate::store::Results;

/// A section shown as JSON is cut at this many characters; results.json has the rest.
const JSON_SHOWN: usize = 200_000;

/// Lock-safety's three lists of overlapping holds.
#[derive(Debug, Clone, Copy)]
pub enum GrantList {
    /// Double grants: violations.
    Definite,
    /// Overlaps with an acquire of unknown outcome: the verdict is unknown.
    Possible,
    /// Zombie overlaps the storage fenced off: not violations.
    Fenced,
}

impl GrantList {
    pub const ALL: [GrantList; 3] = [GrantList::Definite, GrantList::Possible, GrantList::Fenced];

    /// The grants listed; for possible ones, the first overlap of each unknown acquire.
    pub fn grants(self, safety: &LockSafety) -> Vec<&DoubleGrant> {
        match self {
            GrantList::Definite => safety.double_grants.iter().collect(),
            GrantList::Possible => safety
                .possible_double_grant_groups
                .iter()
                .map(|group| &group.first)
                .collect(),
            GrantList::Fenced => safety.fenced_double_grants.iter().collect(),
        }
    }

    fn count(self, safety: &LockSafety) -> usize {
        match self {
            GrantList::Definite => safety.double_grant_count,
            GrantList::Possible => safety.possible_double_grant_acquires,
            GrantList::Fenced => safety.fenced_double_grant_count,
        }
    }

    /// The id of the `i`th grant's row (from 0); its mark on the timeline adds `-mark`.
    pub fn anchor(self, i: usize) -> String {
        let prefix = match self {
            GrantList::Definite => "dg",
            GrantList::Possible => "pdg",
            GrantList::Fenced => "fdg",
        };
        format!("{prefix}-{}", i + 1)
    }

    /// The id of the `i`th grant's close-up below the timeline, where it has one
    /// (the first [`CLOSE_UPS`] of each list do).
    pub fn close_up(self, i: usize) -> Option<String> {
        (i < CLOSE_UPS).then(|| format!("{}-zoom", self.anchor(i)))
    }

    /// The CSS class of its marks.
    pub fn class(self) -> &'static str {
        match self {
            GrantList::Definite => "double-grant",
            GrantList::Possible => "possible-double-grant",
            GrantList::Fenced => "fenced-double-grant",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            GrantList::Definite => "double grant",
            GrantList::Possible => "possible double grant",
            GrantList::Fenced => "fenced double grant",
        }
    }
}

/// How many grants of each list get a close-up below the run's timeline.
pub const CLOSE_UPS: usize = 5;

/// The checkers with a view of their own below; every other checker in the list of every
/// checker is shown by [`listed`].
const OWN_VIEWS: [&str; 7] = [
    "stats",
    "coverage",
    "lock-safety",
    "lost-writes",
    "fencing",
    "stuck-lock",
    "acquisition",
];

/// Every checker's section; `workers` (from test.json) names the worker of each process, as
/// the timeline's lanes do.
pub fn render(results: &Results, workers: Option<usize>) -> String {
    let mut out = String::new();
    let checkers = &results.checkers;
    // Nothing tested: the first thing a reader must see.
    if let Some(stats) = checkers.get::<Stats>() {
        if let Some(reason) = stats.unknown_because() {
            let _ = write!(
                out,
                "{}<p id=\"no-evidence\">{}</p>",
                heading(stats, "evidence"),
                esc(&reason)
            );
        }
    }
    if let Some(coverage) = checkers.get::<Coverage>().filter(|c| c.grants > 0) {
        let _ = write!(
            out,
            "<h3 id=\"check-coverage\">what the faults reached</h3><p>{}{}</p>",
            esc(&coverage.line()),
            if coverage.faults > 0 && !coverage.touched_a_holder() {
                ". No fault touched a held lock: this run could not have found the hazard."
            } else {
                ""
            }
        );
    }
    // A data workload takes no lock: its empty lock-safety result would only be noise.
    if let Some(safety) = checkers
        .get::<LockSafety>()
        .filter(|s| s.holds + s.unknown_acquires > 0 || s.valid != Valid::True)
    {
        out += &lock_safety(safety, workers);
    }
    if let Some(writes) = checkers.get::<LostWrites>().filter(|w| !w.keys.is_empty()) {
        out += &lost_writes(writes);
    }
    if let Some(fencing) = checkers
        .get::<Fencing>()
        .filter(|f| f.grants_checked > 0 || f.valid != Valid::True)
    {
        out += &fencing_section(fencing);
    }
    if let Some(stuck) = checkers
        .get::<StuckLock>()
        .filter(|s| s.held_refusals > 0 || s.valid != Valid::True)
    {
        out += &stuck_lock(stuck);
    }
    if let Some(result) = &results.linearizability {
        out += &linearizability(result, results.linearizability_counts);
    }
    if let Some(stats) = checkers
        .get::<AcquisitionStats>()
        .filter(|s| s.attempts > 0)
    {
        out += &acquisition(stats);
    }
    for (registration, checker) in checkers.iter() {
        if !OWN_VIEWS.contains(&registration.name) {
            out += &listed(registration, checker);
        }
    }
    for (name, section) in &results.unread {
        out += &generic(name, section);
    }
    if let Some(error) = &results.error {
        let _ = write!(
            out,
            "<h3>error</h3><pre id=\"run-error\">{}</pre>",
            esc(error)
        );
    }
    out
}

/// A checker with no view of its own: its summary lines and every finding, as `check` prints
/// them.
fn listed(registration: &Registration, checker: &dyn Section) -> String {
    let title = registration.name.replace('-', " ");
    let mut out = match registration.role {
        Role::Verdict => heading(checker, &title),
        Role::Beside => aside_heading(checker, &title),
        Role::Statistics => format!(
            "<h3 id=\"check-{}\">{}</h3>",
            registration.name,
            esc(&title)
        ),
    };
    let summary = checker.summary().into_iter().map(|(_, line)| line);
    let lines: Vec<String> = summary
        .chain(checker.findings(REPORTED_VIOLATIONS))
        .collect();
    if lines.is_empty() {
        out += "<p>Nothing found.</p>";
        return out;
    }
    out += "<ul>";
    for line in lines {
        let _ = write!(out, "<li>{}</li>", esc(&line));
    }
    out + "</ul>"
}

/// A checker's heading, `title` with its verdict, anchored by the checker's name.
fn heading(checker: &dyn Checked, title: &str) -> String {
    format!(
        "<h3 id=\"check-{}\">{} {}</h3>",
        checker.name(),
        esc(title),
        verdict_badge(Some(checker.valid()))
    )
}

/// The heading of a checker whose verdict is shown beside the run's, not in it.
fn aside_heading(checker: &dyn Checked, title: &str) -> String {
    format!(
        "<h3 id=\"check-{}\">{} {}</h3>",
        checker.name(),
        esc(title),
        aside_badge(Some(checker.valid()))
    )
}

fn lock_safety(safety: &LockSafety, workers: Option<usize>) -> String {
    let mut out = heading(safety, "lock safety");
    let _ = write!(
        out,
        "<p>{} grants checked, {} acquires with unknown outcome; {} double grants ({} stale), \
         {} possible from {} unknown acquires (each listed once, with its first overlap), {} \
         fenced off by the storage.</p>",
        safety.holds,
        safety.unknown_acquires,
        safety.double_grant_count,
        safety.stale_double_grant_count,
        safety.possible_double_grant_count,
        safety.possible_double_grant_acquires,
        safety.fenced_double_grant_count
    );
    for list in GrantList::ALL {
        let grants = list.grants(safety);
        if grants.is_empty() {
            continue;
        }
        let _ = write!(out, "<h4>{}s ({})</h4>", list.name(), list.count(safety));
        let rows: Vec<Vec<String>> = grants
            .iter()
            .enumerate()
            .map(|(i, grant)| grant_row(list, i, grant, workers))
            .collect();
        let ids: Vec<String> = (0..grants.len()).map(|i| list.anchor(i)).collect();
        out += &anchored_table(
            &[
                "#",
                "why",
                "key",
                "kind",
                "first hold",
                "second hold",
                "#overlap",
                "faults active",
                "timeline",
            ],
            &rows,
            &ids,
        );
        out += &more_note(list.count(safety), grants.len());
    }
    out
}

fn grant_row(
    list: GrantList,
    i: usize,
    grant: &DoubleGrant,
    workers: Option<usize>,
) -> Vec<String> {
    let faults: Vec<String> = grant
        .faults
        .iter()
        .map(|f| esc(&faults::describe(f)))
        .collect();
    let why = grant
        .explanation
        .as_ref()
        .map_or("&mdash;".to_string(), |explained| {
            format!(
                "<b class=\"cause\">{}</b><br>{}",
                esc(explained.cause.label()),
                esc(&explained.sentence)
            )
        });
    vec![
        format!("{}", i + 1),
        why,
        format!("<code>{}</code>", esc(&grant.key)),
        esc(&grant.kind),
        hold_cell(&grant.first, workers),
        hold_cell(&grant.second, workers),
        format!("{:.1} ms", grant.overlap_ms),
        if faults.is_empty() {
            "none".into()
        } else {
            faults.join("<br>")
        },
        match list.close_up(i) {
            Some(close_up) => format!(
                "<a href=\"#{}-mark\">show</a> · <a href=\"#{close_up}\">close-up</a>",
                list.anchor(i)
            ),
            None => format!("<a href=\"#{}-mark\">show</a>", list.anchor(i)),
        },
    ]
}

/// `process 71 (worker 1) from ...`: the worker, where known, is what a timeline with many
/// processes draws as a lane.
fn hold_cell(hold: &Hold, workers: Option<usize>) -> String {
    let nodes = hold
        .nodes
        .as_ref()
        .filter(|n| !n.is_empty())
        .map(|n| format!(" on {}", esc(&n.join(","))))
        .unwrap_or_default();
    let token = hold
        .token
        .as_ref()
        .map(|t| format!(", token <code>{}</code>", esc(t)))
        .unwrap_or_default();
    let worker = match (hold.process, workers) {
        (Process::Client(p), Some(workers)) if workers > 0 => {
            format!(" (worker {})", p % workers as u64)
        }
        _ => String::new(),
    };
    format!(
        "process {}{worker} from {} to {} ({}){nodes}<br><span class=\"note\">lease until {}, \
         acquire at index {}{token}</span>",
        hold.process,
        seconds(hold.start_ms),
        seconds(hold.end_ms),
        esc(&hold.ended_by),
        seconds(hold.lease_end_ms),
        hold.acquire_index
    )
}

fn more_note(count: usize, listed: usize) -> String {
    if count > listed {
        format!(
            "<p class=\"note\">The first {listed} of {count} are listed (the checker keeps {REPORTED_VIOLATIONS}).</p>"
        )
    } else {
        String::new()
    }
}

fn ids(ids: &[i64], count: usize) -> String {
    if count == 0 {
        return "none".into();
    }
    let listed: Vec<String> = ids.iter().map(i64::to_string).collect();
    let more = count.saturating_sub(ids.len());
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("<span class=\"mono\">{}</span>{more}", listed.join(", "))
}

fn lost_writes(writes: &LostWrites) -> String {
    let mut out = heading(writes, "lost writes");
    let _ = write!(
        out,
        "<p>{} adds attempted: {} acknowledged, {} failed, {} unknown ({} of those landed); \
         <strong>{} lost</strong>, {} acknowledged after the final read began.</p>",
        writes.attempted,
        writes.acknowledged,
        writes.rejected,
        writes.unknown,
        writes.recovered,
        writes.lost_count,
        writes.acknowledged_after_final_read
    );
    let rows: Vec<Vec<String>> = writes
        .keys
        .iter()
        .map(|key| {
            vec![
                format!("<code>{}</code>", esc(&key.key)),
                verdict_badge(Some(key.valid)),
                key.final_read_index
                    .map_or("none".into(), |i| format!("index {i}")),
                key.acknowledged.to_string(),
                ids(&key.lost, key.lost_count),
                ids(&key.failed_but_present, key.failed_but_present_count),
                ids(&key.unexpected, key.unexpected_count),
                ids(&key.duplicates, key.duplicate_count),
            ]
        })
        .collect();
    out += &table(
        &[
            "key",
            "verdict",
            "final read",
            "#acknowledged",
            "lost ids",
            "refused yet present",
            "unexpected",
            "duplicates",
        ],
        &rows,
    );
    out
}

fn fencing_section(fencing: &Fencing) -> String {
    let mut out = heading(fencing, "fencing");
    let _ = write!(
        out,
        "<p>{} fenced grants, {} fenced storage accesses accepted, {} refused as stale.</p>",
        fencing.grants_checked, fencing.storage_accesses_checked, fencing.rejected_storage_accesses
    );
    for (name, count, pairs) in [
        (
            "duplicate fencing tokens",
            fencing.duplicate_fence_count,
            &fencing.duplicate_fences,
        ),
        (
            "grants out of token order",
            fencing.out_of_order_grant_count,
            &fencing.out_of_order_grants,
        ),
        (
            "stale tokens the storage accepted",
            fencing.stale_storage_access_count,
            &fencing.stale_storage_accesses,
        ),
    ] {
        if pairs.is_empty() {
            continue;
        }
        let _ = write!(out, "<h4>{name} ({count})</h4>");
        let rows: Vec<Vec<String>> = pairs.iter().map(fence_row).collect();
        out += &table(&["key", "earlier", "later"], &rows);
        out += &more_note(count, pairs.len());
    }
    out
}

fn fence_row(pair: &FencePair) -> Vec<String> {
    let op = |op: &splitbrain_checker::fencing::FencedOp| {
        format!(
            "{} by process {} at {} (done {}), fence {}",
            esc(&op.f),
            op.process,
            seconds(op.invoke_ms),
            seconds(op.completed_ms),
            op.fence
        )
    };
    vec![
        format!("<code>{}</code>", esc(&pair.key)),
        op(&pair.earlier),
        op(&pair.later),
    ]
}

fn stuck_lock(stuck: &StuckLock) -> String {
    let mut out = heading(stuck, "stuck lock");
    let _ = write!(
        out,
        "<p>{} acquires refused as held; {} of them came more than {:.0} ms after every lease \
         that could explain the key ended.</p>",
        stuck.held_refusals, stuck.stuck_refusals, stuck.bound_ms
    );
    if !stuck.stuck_periods.is_empty() {
        let rows: Vec<Vec<String>> = stuck
            .stuck_periods
            .iter()
            .map(|p| {
                vec![
                    format!("<code>{}</code>", esc(&p.key)),
                    seconds(p.free_from_ms),
                    seconds(p.first_refused_ms),
                    seconds(p.until_ms),
                    format!("{:.1} s", p.stuck_ms / 1000.0),
                    p.refused_attempts.to_string(),
                    if p.recovered {
                        "yes"
                    } else {
                        "no: stuck at the end"
                    }
                    .into(),
                ]
            })
            .collect();
        out += &table(
            &[
                "key",
                "free from",
                "first refused",
                "until",
                "#stuck for",
                "#refused",
                "recovered",
            ],
            &rows,
        );
        out += &more_note(stuck.stuck_period_count, stuck.stuck_periods.len());
    }
    out
}

fn acquisition(stats: &AcquisitionStats) -> String {
    let mut out = String::from("<h3 id=\"check-acquisition\">acquisition <span class=\"note\">(statistics, no verdict)</span></h3>");
    let latency = |l: &splitbrain_checker::acquisition_stats::Latency| {
        format!(
            "mean {:.1} ms, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} measured)",
            l.mean_ms, l.p50_ms, l.p99_ms, l.max_ms, l.count
        )
    };
    let rows = vec![
        vec!["attempts".into(), stats.attempts.to_string()],
        vec![
            "granted".into(),
            format!("{} ({:.1}/s)", stats.grants, stats.grants_per_second),
        ],
        vec![
            "refused".into(),
            format!(
                "{} held, {} split vote ({:.1}% of attempts), {} unavailable",
                stats.refused_held,
                stats.refused_split_vote,
                stats.split_vote_share * 100.0,
                stats.refused_unavailable
            ),
        ],
        vec![
            "longest split-vote streak".into(),
            match &stats.longest_split_vote_streak {
                Some(streak) => streak.to_string(),
                None => "no vote was split".into(),
            },
        ],
        vec!["unknown outcome".into(), stats.unknown.to_string()],
        vec!["grant latency".into(), latency(&stats.grant_latency)],
        vec!["attempt latency".into(), latency(&stats.attempt_latency)],
    ];
    out += &table(&["", ""], &rows);
    out
}

/// How many of the last linearized operations a failure's table shows.
const LINEARIZED_SHOWN: usize = 10;

fn linearizability(result: &Linearizability, counts: bool) -> String {
    let title = format!("linearizability ({})", result.model);
    let mut out = if counts {
        heading(result, &title)
    } else {
        aside_heading(result, &title)
    };
    let aside = if counts {
        ""
    } else {
        " Shown beside the verdict, not in it: a mutex has no leases, so a lease that ran out \
         counts against it, and lock safety judges the leases."
    };
    let _ = write!(
        out,
        "<p>{} key{}, {} operations checked, {} configurations searched, {:.1} MiB at most.{}{}</p>",
        result.keys,
        if result.keys == 1 { "" } else { "s" },
        result.ops_checked,
        result.states_explored,
        result.peak_cache_bytes as f64 / f64::from(1 << 20),
        result
            .cause
            .as_ref()
            .map(|cause| format!(" Unknown: {}.", esc(cause)))
            .unwrap_or_default(),
        aside
    );
    let cells = |op: &OpSummary| {
        vec![
            op.index.to_string(),
            op.process.to_string(),
            esc(&op.f),
            op.value
                .as_ref()
                .map(|v| format!("<code>{}</code>", esc(&v.to_string())))
                .unwrap_or_default(),
            format!("{:?}", op.outcome).to_lowercase(),
            seconds(op.invoke_ns as f64 / 1e6),
        ]
    };
    for failure in &result.failures {
        let explanation = &failure.explanation;
        let key = failure.key.as_deref().unwrap_or("(no key)");
        let _ = write!(
            out,
            "<h4 id=\"lin-{}\">key <code>{}</code>: {} operations linearized, then none of these \
             could come next</h4>",
            esc(key),
            esc(key),
            explanation.linearized_count
        );
        let refused: Vec<Vec<String>> = explanation
            .refused
            .iter()
            .map(|r| {
                let mut row = cells(&r.op);
                row.push(format!("<code>{}</code>", esc(&r.state.to_string())));
                row.push(esc(&r.reason));
                row
            })
            .collect();
        out += &table(
            &[
                "op", "process", "f", "value", "outcome", "invoked", "state", "why not",
            ],
            &refused,
        );
        if explanation.refused_count > explanation.refused.len() {
            let _ = write!(
                out,
                "<p class=\"note\">The first {} of {} are listed.</p>",
                explanation.refused.len(),
                explanation.refused_count
            );
        }
        let skip = explanation
            .linearized
            .len()
            .saturating_sub(LINEARIZED_SHOWN);
        let linearized: Vec<Vec<String>> = explanation.linearized[skip..]
            .iter()
            .map(|l| {
                let mut row = cells(&l.op);
                row.push(format!("<code>{}</code>", esc(&l.state_after.to_string())));
                row
            })
            .collect();
        let _ = write!(
            out,
            "<p>The last {} operations linearized before them, in order:</p>",
            linearized.len()
        );
        out += &table(
            &[
                "op",
                "process",
                "f",
                "value",
                "outcome",
                "invoked",
                "state after",
            ],
            &linearized,
        );
    }
    out
}

/// A section the report has no view of, as indented JSON, under its verdict if it has one.
pub fn generic(name: &str, section: &Value) -> String {
    let valid = serde_json::from_value::<Valid>(section["valid"].clone()).ok();
    let badge = if section.get("valid").is_some() {
        verdict_badge(valid)
    } else {
        String::new()
    };
    let id: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut text = serde_json::to_string_pretty(section).unwrap_or_default();
    if text.len() > JSON_SHOWN {
        let cut = (0..=JSON_SHOWN)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        let rest = text.len() - cut;
        text.truncate(cut);
        text += &format!("\n… {rest} more characters in results.json");
    }
    format!(
        "<h3 id=\"check-{id}\">{} {badge}</h3><pre class=\"json\">{}</pre>",
        esc(name),
        esc(&text)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unknown_section_is_shown_escaped_under_its_verdict() {
        let html = generic(
            "linearizability",
            &json!({"valid": false, "model": "cas-register", "cause": "<read 3>"}),
        );
        assert!(html.contains("id=\"check-linearizability\""));
        assert!(html.contains("verdict-invalid"));
        assert!(html.contains("&lt;read 3&gt;"));
        assert!(!html.contains("<read 3>"));
    }

    #[test]
    fn a_run_that_tested_nothing_says_so_first_and_coverage_says_what_faults_reached() {
        let results = Results::read(json!({
            "valid": "unknown",
            "stats": {"valid": "unknown", "reason": "no acquire succeeded", "by_f": {}},
            "coverage": {"grants": 3, "grants_faulted": 0, "kills": 2, "kills_back_within_ttl": 2,
                         "restart_ms": null, "pauses_on_holder": 0,
                         "clock_faults_on_holder_node": 0, "faults": 2},
        }));
        let html = render(&results, None);
        assert!(html.starts_with("<h3 id=\"check-stats\">"), "{html}");
        assert!(html.contains("no acquire succeeded"), "{html}");
        assert!(
            html.contains("this run could not have found the hazard"),
            "{html}"
        );
        assert!(results.unread.is_empty(), "both read as typed sections");
    }

    #[test]
    fn id_lists_say_how_many_more() {
        assert_eq!(ids(&[], 0), "none");
        assert_eq!(
            ids(&[1, 2], 5),
            "<span class=\"mono\">1, 2</span> and 3 more"
        );
    }
}
