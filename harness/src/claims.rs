//! "The article, checked": the page `splitbrain scenario run --all` writes. A row per claim:
//! whether it was reproduced and in how many seeds, how long it took, a run that shows it,
//! and the figure the claim rests on (the double grants and their overlap, the writes lost,
//! the time a lock stayed stuck, the zombies fenced).

use std::fmt::Write;
use std::path::PathBuf;

use serde::Serialize;
use splitbrain_checker::acquisition_stats::AcquisitionStats;
use splitbrain_checker::coverage::Coverage;
use splitbrain_checker::explain::Cause;
use splitbrain_checker::lock_safety::LockSafety;
use splitbrain_checker::lost_writes::LostWrites;
use splitbrain_checker::starvation::Starvation;
use splitbrain_checker::stuck_lock::StuckLock;
use splitbrain_checker::Valid;

use crate::matrix::{causes_named, CellOutcome, Claim, Expect, Judge};
use crate::report::html;
use crate::store::Results;

/// One scenario, run over its seeds.
#[derive(Debug, Serialize)]
pub struct ClaimOutcome {
    pub name: String,
    #[serde(flatten)]
    pub claim: Claim,
    pub expect: Expect,
    pub judge: Judge,
    /// Seeds that got the expected verdict, of `seeds`.
    pub met: usize,
    pub seeds: usize,
    /// How many of its seeds ran at once: one, unless `--parallel` asked for more.
    pub parallel: usize,
    /// Whether that is enough: nine in ten for a hazard, all for a cure.
    pub held: bool,
    pub seconds: f64,
    /// The page of its seeds, relative to the claims page.
    pub seeds_page: String,
    /// The report of the first seed that met the expectation, relative to the claims page.
    pub shown_by: Option<String>,
    /// The figure the claim rests on, over the seeds that met it.
    pub figure: String,
    /// The verdicts its seeds got: `9 invalid, 1 unknown`.
    pub verdicts: String,
    /// The causes explanations gave the violations of every seed, with how many each:
    /// `restart hazard 27, clock jump 2`; empty where nothing was violated.
    pub causes: String,
    /// The run folders of the seeds whose verdict was `unknown`, for a card to read why.
    #[serde(skip)]
    pub unknown_runs: Vec<PathBuf>,
}

/// The verdicts a claim's seeds got, most first: `9 invalid, 1 unknown`; a seed without
/// one is `error`.
pub fn verdicts(cells: &[CellOutcome]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for cell in cells {
        let word = cell.verdict.map_or("error", Valid::label);
        match counts.iter_mut().find(|(w, _)| *w == word) {
            Some((_, n)) => *n += 1,
            None => counts.push((word, 1)),
        }
    }
    counts.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let words: Vec<String> = counts.iter().map(|(w, n)| format!("{n} {w}")).collect();
    words.join(", ")
}

/// The causes explanations gave the violations of `runs`, summed: `restart hazard 27`.
pub fn causes(runs: &[Results]) -> String {
    let mut counts: Vec<(Cause, usize)> = Vec::new();
    for (cause, n) in runs.iter().flat_map(|run| causes_named(Some(run))) {
        match counts.iter_mut().find(|(c, _)| *c == cause) {
            Some((_, total)) => *total += n,
            None => counts.push((cause, n)),
        }
    }
    let words: Vec<String> = counts
        .iter()
        .map(|(cause, n)| format!("{} {n}", cause.label()))
        .collect();
    words.join(", ")
}

/// What the runs that met a claim's expectation measured, in one line.
pub fn figure(runs: &[Results], expect: Expect, judge: Judge) -> String {
    let mut parts = grant_figures(runs, judge);
    parts.extend(judged_figure(runs, judge));
    let stuck: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.checkers.get::<StuckLock>())
        .flat_map(|s| s.stuck_periods.iter().map(|p| p.stuck_ms))
        .collect();
    if let Some(longest) = stuck.iter().copied().reduce(f64::max) {
        parts.push(format!("a lock stuck for up to {:.1} s", longest / 1000.0));
    }
    if expect == Expect::Valid {
        parts.extend(range(
            runs.iter()
                .filter_map(|r| r.checkers.get::<Coverage>())
                .map(|c| c.grants_faulted)
                .collect(),
            "grants a fault reached a run",
        ));
    }
    if parts.is_empty() {
        "no violation and no fault on a holder".to_string()
    } else {
        parts.join("; ")
    }
}

/// `low-high what` over runs (`high what` where all agree), or `None` where none counted any.
fn range(values: Vec<usize>, what: &str) -> Option<String> {
    let (low, high) = (values.iter().min()?, values.iter().max()?);
    (*high > 0).then(|| match low == high {
        true => format!("{high} {what}"),
        false => format!("{low}-{high} {what}"),
    })
}

/// The double grants of each kind and the writes lost, a run.
fn grant_figures(runs: &[Results], judge: Judge) -> Vec<String> {
    let mut parts = Vec::new();
    let safety: Vec<_> = runs
        .iter()
        .filter_map(|r| r.checkers.get::<LockSafety>())
        .collect();
    // A claim judged on leases rests on the double grants with both leases live; the stale
    // ones beside them are said apart.
    let leases_only = judge == Judge::Leases;
    if let Some(grants) = range(
        safety
            .iter()
            .map(|s| match leases_only {
                true => s.lease_double_grant_count(),
                false => s.double_grant_count,
            })
            .collect(),
        match leases_only {
            true => "double grants with both leases live a run",
            false => "double grants a run",
        },
    ) {
        let longest = safety
            .iter()
            .flat_map(|s| &s.double_grants)
            .filter(|g| !leases_only || g.kind == "lease")
            .map(|g| g.overlap_ms)
            .fold(0.0, f64::max);
        parts.push(format!("{grants}, the longest overlapping {longest:.0} ms"));
    }
    parts.extend(range(
        safety
            .iter()
            .map(|s| s.possible_double_grant_count)
            .collect(),
        "possible double grants a run (an acquire of unknown outcome overlapped a grant)",
    ));
    if leases_only {
        parts.extend(range(
            safety.iter().map(|s| s.stale_double_grant_count).collect(),
            "stale a run (a holder past its lease: another claim)",
        ));
    }
    parts.extend(range(
        safety.iter().map(|s| s.fenced_double_grant_count).collect(),
        "zombies fenced a run",
    ));
    parts.extend(range(
        runs.iter()
            .filter_map(|r| r.checkers.get::<LostWrites>())
            .map(|l| l.lost_count)
            .collect(),
        "acknowledged writes lost a run",
    ));
    parts
}

/// What a claim judged on starvation, a livelock or an outage rests on.
fn judged_figure(runs: &[Results], judge: Judge) -> Option<String> {
    let stats = || {
        runs.iter()
            .filter_map(|r| r.checkers.get::<AcquisitionStats>())
    };
    match judge {
        Judge::Starvation => {
            let starved: Vec<&Starvation> = runs.iter().filter_map(|r| r.checkers.get()).collect();
            let waits = range(
                starved.iter().map(|s| s.starved_count).collect(),
                "starved waits a run",
            )?;
            let longest = starved
                .iter()
                .flat_map(|s| &s.starved)
                .map(|w| (w.passed_over_until_ms - w.from_ms) / w.ttl_ms as f64)
                .fold(0.0, f64::max);
            Some(format!(
                "{waits}, the longest passed over for {longest:.1} TTLs"
            ))
        }
        Judge::Livelock => {
            let streaks: Vec<_> = stats()
                .filter_map(|s| s.longest_split_vote_streak.as_ref())
                .collect();
            let rounds = range(streaks.iter().map(|s| s.rounds).collect(), "rounds")?;
            let longest = streaks
                .iter()
                .map(|s| s.to_ms - s.from_ms)
                .fold(0.0, f64::max);
            Some(format!(
                "split votes {rounds} in a row, the longest streak lasting {:.1} s",
                longest / 1000.0
            ))
        }
        Judge::Outage => {
            let outages: Vec<f64> = stats()
                .filter_map(|s| s.longest_outage.as_ref())
                .map(|o| o.ttls)
                .collect();
            let shortest = outages.iter().copied().reduce(f64::min)?;
            let longest = outages.iter().copied().reduce(f64::max)?;
            Some(format!(
                "the lock free and granted to nobody for {shortest:.1} to {longest:.1} TTLs at \
                 the longest"
            ))
        }
        _ => None,
    }
}

/// The page.
pub fn render(outcomes: &[ClaimOutcome], started: &str, seeds: usize, parallel: usize) -> String {
    let held = outcomes.iter().filter(|o| o.held).count();
    let mut rows = String::new();
    for outcome in outcomes {
        let role = match &outcome.claim.cures {
            Some(cured) => format!("cure of <a href=\"#{0}\">{0}</a>", esc(cured)),
            None => "hazard".to_string(),
        };
        let shown = match &outcome.shown_by {
            Some(report) => format!("<a href=\"{}\">a run that shows it</a> · ", esc(report)),
            None => String::new(),
        };
        let _ = writeln!(
            rows,
            "<tr id=\"{name}\" class=\"{class}\"><td><strong>{name}</strong><br>{claim}\
             <div class=\"source\">{source} · {role}</div></td><td>{expect}</td>\
             <td class=\"{class}\">{verdict}</td><td>{figure}</td><td>{seconds:.0} s</td>\
             <td>{shown}<a href=\"{seeds_page}\">every seed</a></td></tr>",
            name = esc(&outcome.name),
            class = if outcome.held { "held" } else { "unheld" },
            claim = esc(&outcome.claim.claim),
            source = esc(&outcome.claim.source),
            expect = outcome.expect.judged_label(outcome.judge),
            verdict = format_args!(
                "{} in {} of {} seeds",
                if outcome.held {
                    "reproduced"
                } else {
                    "NOT reproduced"
                },
                outcome.met,
                outcome.seeds
            ),
            figure = esc(&outcome.figure),
            seconds = outcome.seconds,
            seeds_page = esc(&outcome.seeds_page),
        );
    }
    let total = outcomes.len();
    let body = format!(
        r#"<h1>The article, checked</h1>
<p>Each claim of <em>Distributed locking with Redis</em> and the literature around it, run as a
scenario of splitbrain over {seeds} seeds ({at_once}) against real servers in containers, started {started}.
A hazard is reproduced when at least nine seeds in ten get the verdict it predicts (invalid); a
cure only when every seed is valid with a fault on a lock's holder.
<strong>{held} of {total}</strong> claims reproduced.</p>
<table>
<tr><th>claim</th><th>expect</th><th>result</th><th>what it rests on</th><th>time</th><th></th></tr>
{rows}</table>
"#,
        started = esc(started),
        at_once = at_once(parallel),
    );
    html::page(
        &format!("The article, checked: {held} of {total} claims reproduced"),
        &body,
    )
}

/// How seeds ran, in words: `one at a time`, `3 at once`.
pub fn at_once(parallel: usize) -> String {
    match parallel {
        1 => "one at a time".to_string(),
        n => format!("{n} at once"),
    }
}

fn esc(text: &str) -> String {
    crate::report::html::esc(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored Redlock run under kills: 3 double grants, the longest overlapping 242 ms.
    fn stored_run() -> Results {
        let text = include_str!(
            "../tests/fixtures/redlock-redlock-lock-kill/20261130T004506/results.json"
        );
        Results::read(serde_json::from_str(text).unwrap())
    }

    #[test]
    fn a_claims_figure_is_what_its_runs_measured() {
        let figure = figure(
            &[stored_run(), stored_run()],
            Expect::Invalid,
            Judge::Verdict,
        );
        assert_eq!(
            figure,
            "3 double grants a run, the longest overlapping 242 ms"
        );
        let mut run = stored_run();
        let safety = run.checkers.get_mut::<LockSafety>().unwrap();
        safety.double_grants[1].kind = "stale".into();
        safety.stale_double_grant_count = 1;
        assert_eq!(
            super::figure(&[run], Expect::Invalid, Judge::Leases),
            "2 double grants with both leases live a run, the longest overlapping 225 ms; \
             1 stale a run (a holder past its lease: another claim)",
            "the stale one (242 ms) said apart"
        );
        assert_eq!(
            super::figure(&[], Expect::Valid, Judge::Verdict),
            "no violation and no fault on a holder"
        );
    }

    #[test]
    fn the_page_has_a_row_per_claim_linking_its_run_and_seeds() {
        let outcome = |name: &str, cures: Option<&str>, held: bool| ClaimOutcome {
            name: name.into(),
            claim: Claim {
                claim: format!("{name} <claimed>"),
                source: "the article".into(),
                cures: cures.map(str::to_string),
                shown_by: None,
                fewest: None,
            },
            expect: if cures.is_some() {
                Expect::Valid
            } else {
                Expect::Invalid
            },
            judge: if cures.is_some() {
                Judge::Leases
            } else {
                Judge::Verdict
            },
            met: if held { 10 } else { 7 },
            seeds: 10,
            parallel: 2,
            held,
            seconds: 312.0,
            seeds_page: format!("scenario-{name}/index.html"),
            shown_by: Some(format!("scenario-{name}/run/report.html")),
            figure: "3 double grants a run".into(),
            verdicts: "10 invalid".into(),
            causes: "restart hazard 30".into(),
            unknown_runs: Vec::new(),
        };
        let page = render(
            &[
                outcome("hazard", None, true),
                outcome("cure", Some("hazard"), false),
            ],
            "2026-12-01T20:00:00Z",
            10,
            2,
        );
        assert!(page.contains("over 10 seeds (2 at once)"));
        assert!(page.contains("<title>The article, checked: 1 of 2 claims reproduced</title>"));
        assert!(page.contains("hazard &lt;claimed&gt;"), "escaped");
        assert!(page.contains("reproduced in 10 of 10 seeds"));
        assert!(page.contains("NOT reproduced in 7 of 10 seeds"));
        assert!(page.contains("cure of <a href=\"#hazard\">hazard</a>"));
        assert!(page.contains("<a href=\"scenario-cure/run/report.html\">a run that shows it</a>"));
        assert!(page.contains("<tr id=\"cure\" class=\"unheld\">"));
        assert!(
            page.contains("<td>valid (leases)</td>"),
            "what the cure is held to"
        );
    }
}
