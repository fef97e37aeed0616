//! The matrix as JUnit XML, the dialect CI systems read (Ant's, as Jenkins, GitLab and GitHub
//! test reporters take it): one `<testcase>` per cell, a `<failure>` for a cell whose verdict
//! contradicted its `expect`, an `<error>` for a cell that did not complete.

use std::fmt::Write;

use super::{CellOutcome, Met};

/// The whole document, every cell in one suite.
pub fn render(suite: &str, timestamp: &str, cells: &[CellOutcome]) -> String {
    let failures = cells.iter().filter(|c| c.met == Met::No).count();
    let errors = cells.iter().filter(|c| c.met == Met::Error).count();
    let time: f64 = cells.iter().map(|c| c.seconds).sum();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time:.3}\">",
        escape(suite),
        cells.len()
    );
    let _ = writeln!(
        xml,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{time:.3}\" timestamp=\"{}\">",
        escape(suite),
        cells.len(),
        escape(timestamp)
    );
    for outcome in cells {
        let cell = &outcome.cell;
        let _ = write!(
            xml,
            "    <testcase classname=\"splitbrain.{}\" name=\"{}\" time=\"{:.3}\"",
            escape(&cell.deployment),
            escape(&cell.name),
            outcome.seconds
        );
        let detail = format!(
            "splitbrain {}\n{}\nrun folder: {}",
            cell.args.join(" "),
            outcome.verdict_line,
            outcome.run_dir.as_deref().unwrap_or("none")
        );
        let message = format!("expected {}, got {}", cell.expected(), outcome.verdict_line);
        match outcome.met {
            Met::Yes => xml.push_str("/>\n"),
            Met::No => {
                let _ = writeln!(
                    xml,
                    ">\n      <failure message=\"{}\" type=\"verdict\">{}</failure>\n    </testcase>",
                    escape(&message),
                    escape(&detail)
                );
            }
            Met::Error => {
                let _ = writeln!(
                    xml,
                    ">\n      <error message=\"{}\" type=\"run\">{}</error>\n    </testcase>",
                    escape(&message),
                    escape(&detail)
                );
            }
        }
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    xml
}

/// Text as XML character data or an attribute value. Characters XML 1.0 cannot carry at all
/// (most control characters) become U+FFFD.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_the_document_well_formed() {
        assert_eq!(
            escape("a<b & \"c\"\u{1}"),
            "a&lt;b &amp; &quot;c&quot;\u{FFFD}"
        );
    }
}
