//! The matrix's `index.html`: one self-contained page, a row per cell with its verdict in
//! colour, linked to the cell's run folder and log.

use std::fmt::Write;

use splitbrain_checker::Valid;

use super::junit::escape;
use super::{MatrixRecord, Met};
use crate::report::html;

pub fn render(record: &MatrixRecord) -> String {
    let met = record.cells.iter().filter(|c| c.met == Met::Yes).count();
    let mut rows = String::new();
    for outcome in &record.cells {
        let cell = &outcome.cell;
        let verdict_class = match outcome.verdict {
            Some(Valid::True) => "valid",
            Some(Valid::False) => "invalid",
            Some(Valid::Unknown) => "unknown",
            None => "error",
        };
        let (met_class, met_label) = match outcome.met {
            Met::Yes => ("met", "as expected"),
            Met::No => ("unmet", "NOT as expected"),
            Met::Error => ("unmet", "no verdict"),
        };
        let run = match &outcome.run_dir {
            Some(dir) => format!(
                "<a href=\"{0}/report.html\">report</a> · <a href=\"{0}/\">run folder</a> · ",
                escape(dir)
            ),
            None => String::new(),
        };
        let _ = writeln!(
            rows,
            "<tr class=\"{met_class}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td class=\"{verdict_class}\">{}</td><td>{met_label}</td>\
             <td>{:.0} s</td><td>{run}<a href=\"{}\">log</a></td></tr>",
            cell.number,
            escape(&cell.deployment),
            escape(&cell.client),
            escape(&cell.workload),
            escape(if cell.faults.is_empty() {
                "none"
            } else {
                &cell.faults
            }),
            cell.seed,
            cell.expected(),
            escape(&outcome.verdict_line),
            outcome.seconds,
            escape(&outcome.log),
        );
    }
    let total = record.cells.len();
    let body = format!(
        r#"<h1>splitbrain matrix</h1>
<p>{file} · started {started}{shard} · <strong>{met} of {total}</strong> cells as expected</p>
<table>
<tr><th>#</th><th>deployment</th><th>client</th><th>workload</th><th>faults</th><th>seed</th><th>expect</th><th>verdict</th><th></th><th>time</th><th></th></tr>
{rows}</table>
"#,
        file = escape(&record.file),
        started = escape(&record.started),
        shard = record
            .shard
            .map(|s| format!(" · shard {} of {}", s.index, s.count))
            .unwrap_or_default(),
    );
    html::page(
        &format!("splitbrain matrix: {met} of {total} as expected"),
        &body,
    )
}
