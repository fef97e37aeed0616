//! A library's report card, and the page of cards `library test` writes: a section per
//! library, a row per check, beside the claims page and in the same style.

use std::fmt::Write;

use serde::Serialize;

use super::known::OwnUnknowns;
use crate::claims::{self, ClaimOutcome};
use crate::report::html::{self, esc};

/// One library's card.
#[derive(Debug, Serialize)]
pub struct Card {
    /// As `--client` names it: `lib:redis-py`.
    pub client: String,
    pub package: String,
    pub version: String,
    pub summary: String,
    pub kind: String,
    pub renews: String,
    pub fencing: bool,
    pub lines: Vec<CardLine>,
    /// Why the card stopped before its last line (the installation or a line could not run):
    /// the lines run so far stand, and the card is not as designed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// One check of a card, over its seeds.
#[derive(Debug, Serialize)]
pub struct CardLine {
    /// What the library's design says it should show.
    pub expected: String,
    #[serde(flatten)]
    pub outcome: ClaimOutcome,
    /// Where the line expects `valid`: its seeds that the library's own findings alone left
    /// `unknown` ([`super::known`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own_unknowns: Option<OwnUnknowns>,
}

impl CardLine {
    /// Whether the line got what the library's design predicts: its claim held, or every
    /// seed that was not valid was left unknown by one of the library's own findings, which
    /// is that finding's to show, not this line's.
    pub fn as_designed(&self) -> bool {
        let outcome = &self.outcome;
        outcome.held
            || self
                .own_unknowns
                .as_ref()
                .is_some_and(|own| outcome.met + own.seeds == outcome.seeds)
    }

    /// The result in words: `as designed in 10 of 10 seeds`, and where the library's own
    /// findings left seeds unknown, how many and which findings.
    pub fn result(&self) -> String {
        let outcome = &self.outcome;
        let word = match self.as_designed() {
            true => "as designed",
            false => "NOT as designed",
        };
        let mut result = format!("{word} in {} of {} seeds", outcome.met, outcome.seeds);
        if let Some(own) = &self.own_unknowns {
            let _ = write!(
                result,
                ", {} unknown by its own finding {}",
                own.seeds,
                own.findings.join(" and ")
            );
        }
        result
    }
}

impl Card {
    /// Whether every check got what the library's design predicts.
    pub fn as_designed(&self) -> bool {
        self.stopped.is_none() && self.lines.iter().all(CardLine::as_designed)
    }
}

/// The page over `cards`, run over `seeds` seeds (`parallel` at once) from `started`.
pub fn render(cards: &[Card], started: &str, seeds: u64, parallel: usize) -> String {
    let at_once = claims::at_once(parallel);
    let designed = cards.iter().filter(|c| c.as_designed()).count();
    let mut sections = String::new();
    let mut index = String::new();
    for card in cards {
        let anchor = card.client.replace(':', "-");
        let class = if card.as_designed() { "held" } else { "unheld" };
        let _ = write!(
            index,
            "<li><a href=\"#{anchor}\">{client}</a> <span class=\"{class}\">{word}</span></li>",
            client = esc(&card.client),
            word = if card.as_designed() {
                "as designed"
            } else {
                "NOT as designed"
            },
        );
        let mut rows = String::new();
        for line in &card.lines {
            let outcome = &line.outcome;
            let class = if line.as_designed() { "held" } else { "unheld" };
            let shown = match &outcome.shown_by {
                Some(report) => format!("<a href=\"{}\">a run that shows it</a> · ", esc(report)),
                None => String::new(),
            };
            // The scenario's own claim, under what this library should show in it.
            let claim = match outcome.claim.claim == line.expected {
                true => String::new(),
                false => format!("<div class=\"source\">{}</div>", esc(&outcome.claim.claim)),
            };
            let _ = writeln!(
                rows,
                "<tr class=\"{class}\"><td><strong>{name}</strong><br>{expected}\
                 {claim}</td><td>{expect}</td>\
                 <td class=\"{class}\">{result}</td>\
                 <td>{verdicts}</td><td>{causes}</td><td>{figure}</td>\
                 <td>{shown}<a href=\"{seeds_page}\">every seed</a></td></tr>",
                name = esc(&outcome.name),
                expected = esc(&line.expected),
                expect = outcome.expect.judged_label(outcome.judge),
                result = esc(&line.result()),
                verdicts = esc(&outcome.verdicts),
                causes = esc(&outcome.causes),
                figure = esc(&outcome.figure),
                seeds_page = esc(&outcome.seeds_page),
            );
        }
        let _ = writeln!(
            sections,
            "<section id=\"{anchor}\"><h2>{client} <span class=\"{class}\">{word}</span></h2>\
             <p>{package} {version}: {summary}<br>{kind} · renews: {renews} · fencing tokens: \
             {fencing}</p>\n<table>\n<tr><th>check</th><th>expect</th><th>result</th>\
             <th>verdicts</th><th>causes</th><th>what it rests on</th><th></th></tr>\n\
             {rows}</table>{stopped}</section>",
            client = esc(&card.client),
            stopped = card.stopped.as_ref().map_or(String::new(), |why| format!(
                "<p class=\"unheld\">The card stopped here: {}</p>",
                esc(why)
            )),
            word = if card.as_designed() {
                "as designed"
            } else {
                "NOT as designed"
            },
            package = esc(&card.package),
            version = esc(&card.version),
            summary = esc(&card.summary),
            kind = esc(&card.kind),
            renews = esc(&card.renews),
            fencing = if card.fencing { "yes" } else { "no" },
        );
    }
    let total = cards.len();
    let body = format!(
        r#"<h1>Lock libraries, judged</h1>
<p>Each real lock library of splitbrain's catalog, run as its documentation says to use it,
through the scenarios of the catalog whose hazard applies to its kind of lock and a no-fault
control, over {seeds} seed{plural} ({at_once}) against real servers in containers, started {started}. A hazard is
as designed when at least nine seeds in ten show it; a cure and the control only when every
seed is valid. <strong>{designed} of {total}</strong> libraries as their design predicts.</p>
<ul>{index}</ul>
{sections}"#,
        started = esc(started),
        plural = if seeds == 1 { "" } else { "s" },
    );
    html::page(
        &format!("Lock libraries, judged: {designed} of {total} as designed"),
        &body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{Claim, Expect, Judge};

    fn line(name: &str, expect: Expect, held: bool) -> CardLine {
        CardLine {
            expected: format!("{name} <as designed>"),
            outcome: ClaimOutcome {
                name: name.into(),
                claim: Claim {
                    claim: "the claim".into(),
                    source: "the article".into(),
                    cures: None,
                    shown_by: None,
                    fewest: None,
                },
                expect,
                judge: Judge::Verdict,
                met: if held { 2 } else { 1 },
                seeds: 2,
                parallel: 3,
                held,
                seconds: 40.0,
                seeds_page: format!("lib-{name}/index.html"),
                shown_by: held.then(|| format!("lib-{name}/run/report.html")),
                figure: "27 double grants a run".into(),
                verdicts: "2 INVALID".into(),
                causes: "restart hazard 54".into(),
                unknown_runs: Vec::new(),
            },
            own_unknowns: None,
        }
    }

    #[test]
    fn the_page_has_a_section_per_library_and_a_row_per_check() {
        let card = |client: &str, lines| Card {
            client: client.into(),
            package: "pottery".into(),
            version: "3.0.1".into(),
            summary: "Redlock".into(),
            kind: "redlock".into(),
            renews: "no".into(),
            fencing: false,
            lines,
            stopped: None,
        };
        let page = render(
            &[
                card(
                    "lib:pottery-redlock",
                    vec![
                        line("control", Expect::Valid, true),
                        line("redlock-restart-hazard", Expect::Invalid, true),
                    ],
                ),
                card(
                    "lib:redlock-py",
                    vec![line("redlock-restart-hazard-delayed", Expect::Valid, false)],
                ),
            ],
            "2026-12-04 12:00 UTC",
            2,
            3,
        );
        assert!(page.contains("<title>Lock libraries, judged: 1 of 2 as designed</title>"));
        assert!(page.contains("<section id=\"lib-pottery-redlock\">"));
        assert!(page.contains("<a href=\"#lib-redlock-py\">lib:redlock-py</a>"));
        assert!(page.contains("control &lt;as designed&gt;"), "escaped");
        assert!(page.contains("NOT as designed in 1 of 2 seeds"));
        assert!(page.contains("over 2 seeds (3 at once)"));
        assert!(page.contains("restart hazard 54"));
        assert!(page.contains("<a href=\"lib-control/run/report.html\">a run that shows it</a>"));
        assert_eq!(page.matches("<tr class=").count(), 3);
    }

    #[test]
    fn seeds_left_unknown_by_the_librarys_own_finding_are_laid_to_it_and_no_others() {
        let mut cure = line("redlock-restart-hazard-delayed", Expect::Valid, false);
        assert!(
            !cure.as_designed(),
            "1 of 2 seeds valid, nothing laid to a finding"
        );
        cure.own_unknowns = Some(OwnUnknowns {
            seeds: 1,
            findings: vec!["redlock-py-one-master-down".into()],
        });
        assert!(cure.as_designed());
        assert_eq!(
            cure.result(),
            "as designed in 1 of 2 seeds, 1 unknown by its own finding redlock-py-one-master-down"
        );
        cure.outcome.met = 0;
        assert!(
            !cure.as_designed(),
            "a seed neither valid nor laid to the finding fails the line"
        );
    }

    #[test]
    fn a_card_that_stopped_keeps_its_lines_and_says_why() {
        let card = Card {
            client: "lib:redis-py".into(),
            package: "redis".into(),
            version: "8.1.0".into(),
            summary: "Lock".into(),
            kind: "single".into(),
            renews: "no".into(),
            fencing: false,
            lines: vec![line("control", Expect::Valid, true)],
            stopped: Some("redis-zombie could not run: the Docker engine went away".into()),
        };
        assert!(card.lines[0].as_designed());
        assert!(
            !card.as_designed(),
            "a card that stopped is not as designed"
        );
        let page = render(&[card], "2026-12-06 22:00 UTC", 10, 2);
        assert!(page.contains("0 of 1 as designed"));
        assert!(page.contains(
            "The card stopped here: redis-zombie could not run: the Docker engine went away"
        ));
        assert_eq!(
            page.matches("<tr class=").count(),
            1,
            "the line that ran stays"
        );
    }
}
