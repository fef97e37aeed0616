//! Writing HTML by hand, safely: every string a report shows may come from a user (a lock key,
//! an error message, an `exec:` client's command line, a fault's parameters), so all of it goes
//! through [`esc`]. Also the page shell the run report and the index share: inline CSS, and a
//! few lines of script that record the page's own errors and load time in attributes of the
//! `<html>` element, where tests and measurements read them.

use std::fmt::Write;

use splitbrain_checker::Valid;

/// Escapes text for HTML content and for quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Escapes a relative path for an `href`: each segment percent-encoded where it is not a plain
/// file-name character, so that a name with `#`, `?` or spaces still links to itself.
pub fn href(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~/+".contains(&byte) {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// A verdict as a coloured badge: valid green, unknown amber, invalid red.
pub fn verdict_badge(valid: Option<Valid>) -> String {
    let (class, label) = match valid {
        Some(Valid::True) => ("valid", "valid"),
        Some(Valid::Unknown) => ("unknown", "unknown"),
        Some(Valid::False) => ("invalid", "INVALID"),
        None => ("unknown", "no verdict"),
    };
    format!("<span class=\"verdict verdict-{class}\">{label}</span>")
}

/// A checker's verdict that is shown beside the run's verdict, not in it (the owner-mutex
/// model on a lock history): grey whatever it says, so it never reads as the run's verdict.
pub fn aside_badge(valid: Option<Valid>) -> String {
    let label = match valid {
        Some(Valid::True) => "valid",
        Some(Valid::Unknown) | None => "unknown",
        Some(Valid::False) => "invalid",
    };
    format!(
        "<span class=\"verdict verdict-aside\" title=\"shown beside the verdict, not part of \
         it\">{label}, not in the verdict</span>"
    )
}

/// Milliseconds since the start of the run, as seconds to the millisecond.
pub fn seconds(ms: f64) -> String {
    format!("{:.3} s", ms / 1000.0)
}

/// A whole HTML page: `title` (escaped here) and `body` (already HTML).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<script>{HEALTH_SCRIPT}</script>\n<style>{CSS}</style>\n</head>\n\
         <body>\n{body}\n</body>\n</html>\n",
        esc(title)
    )
}

/// Records uncaught errors and `console.error` calls in `data-errors` on the `<html>`
/// element, in `data-load-ms` when the page had loaded and was laid out (the layout is
/// forced first, so the figure covers parsing, styles and layout), and in `data-overflow-px`
/// how far the page is wider than the window (0: no sideways scrolling), and, where the
/// address names an element (`#dg-1-zoom`), whether it is shown in `data-target-shown`. It
/// runs first, so it sees every later script.
const HEALTH_SCRIPT: &str = "(function(){var root=document.documentElement;\
function note(m){root.setAttribute('data-errors',(root.getAttribute('data-errors')||'')+m+'\\n');}\
window.addEventListener('error',function(e){note('Uncaught '+e.message);});\
var original=console.error;console.error=function(){note([].join.call(arguments,' '));\
original.apply(console,arguments);};\
window.addEventListener('load',function(){void root.offsetHeight;\
root.setAttribute('data-load-ms',String(Math.round(performance.now())));\
root.setAttribute('data-overflow-px',String(root.scrollWidth-root.clientWidth));\
var target=location.hash&&document.getElementById(location.hash.slice(1));\
if(target){root.setAttribute('data-target-shown',target.getClientRects().length?'1':'0');}});\
})();";

const CSS: &str = r#"
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d232b; margin: 0 auto; padding: 16px 24px 48px; max-width: 1420px; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #d8dee6; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: #f4f6f8; border: 1px solid #e1e5ea; padding: 8px 10px; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border-bottom: 1px solid #e4e8ed; padding: 3px 10px 3px 0; text-align: left; vertical-align: top; }
th { font-weight: 600; color: #4a5563; }
td.num, th.num { text-align: right; padding-right: 14px; white-space: nowrap; }
td code { white-space: nowrap; }
tr:target { background: #ffe8e6; outline: 2px solid #d7263d; }
a { color: #1f5fbf; }
.verdict { display: inline-block; padding: 1px 9px; border-radius: 10px; font-weight: 700; color: #fff; }
.verdict-valid { background: #2e8540; }
.verdict-unknown { background: #d98e04; }
.verdict-invalid { background: #d7263d; }
.verdict-aside { background: #e3e6ea; color: #4a5563; font-weight: 400; }
.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; margin: 8px 0; }
.facts dt { color: #4a5563; }
.facts dd { margin: 0; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 4px 0; font-size: 12.5px; }
.legend span { display: inline-flex; align-items: center; gap: 5px; }
.swatch { display: inline-block; width: 14px; height: 10px; border: 1px solid rgba(0,0,0,.25); }
.note { color: #5b6673; font-size: 12.5px; }
.source { color: #5b6673; font-size: 90%; margin-top: .2em; }
.valid, .held { color: #17752b; font-weight: 600; }
.invalid, .unheld { color: #b3261e; font-weight: 600; }
.unknown, .error { color: #9a6700; font-weight: 600; }
tr.unmet, tr.unheld { background: #fdecea; }
tr.held, tr.unheld { color: inherit; font-weight: normal; }
svg text { font: 11px system-ui, sans-serif; fill: #38424f; }
svg .axis line { stroke: #c5ccd5; }
svg .lane-bg { fill: #f7f9fb; }
svg .hold { fill: #3b73c4; }
svg .hold-stale { fill: #8e44ad; }
svg .hold-possible { fill: none; stroke: #d98e04; stroke-dasharray: 3 2; }
svg .op-ok { fill: #2e8540; }
svg .op-fail { fill: #b8a48e; }
svg .op-info { fill: #e07b00; }
svg .double-grant rect { fill: rgba(215,38,61,.35); stroke: #d7263d; stroke-width: 1.5; }
svg .possible-double-grant rect { fill: none; stroke: #d98e04; stroke-width: 1; stroke-dasharray: 2 2; }
svg .fenced-double-grant rect { fill: none; stroke: #777; stroke-width: 1; }
svg a:hover rect { stroke-width: 3; }
svg .spell-down { fill: #3d3d3d; }
svg .spell-paused, svg .spell-client-paused { fill: #7f8fa6; }
svg .spell-client-crashed { fill: #3d3d3d; }
svg .spell-cut-off { fill: #e4a11b; }
svg .spell-clock { fill: #2a9d8f; }
svg .spell-clock + text { fill: #fff; }
svg .spell-links, svg .spell-packets { fill: #c98bb9; }
svg .spell-failover { fill: #d7263d; }
svg .spell-master { fill: #cfd8e3; }
svg .why { display: none; pointer-events: none; }
svg a:hover + .why, svg a:focus + .why, svg a:target + .why { display: inline; }
svg .why-lane { fill: rgba(215,38,61,.10); }
.close-up:not(:target) { display: none; }
.close-up { margin: 1em 0; padding: .5em 0; border-top: 2px solid #d7263d; }
svg .why-spell { fill: none; stroke: #d7263d; stroke-width: 2; }
svg .master-one { fill: #cfd8e3; stroke: #fff; }
svg .master-split { fill: #d7263d; stroke: #fff; }
svg .master-split + text { fill: #fff; }
svg .lat-ok { fill: #2e8540; }
svg .lat-fail { fill: none; stroke: #9c7b57; stroke-width: 1.2; }
svg .lat-info { fill: #e07b00; }
svg .tp-ok { fill: #5c9e6e; }
svg .tp-fail { fill: #c9b8a3; }
svg .tp-info { fill: #e07b00; }
.index table { font-size: 13px; }
.index .found { color: #d7263d; }
.index td { white-space: nowrap; }
/* Long names wrap at their words (<wbr> after each -), never inside one. */
.index td:first-child, .index td:nth-child(6), .index td:nth-child(9) { white-space: normal; min-width: 12em; max-width: 22em; }
.summaries { columns: 2; }
"#;

/// An HTML table from a header row and body rows whose cells are already HTML; cells whose
/// header starts with `#` are right-aligned numbers (the `#` is dropped).
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    anchored_table(headers, rows, &[])
}

/// A [`table`] whose `i`th body row has the id `ids[i]` (where there is one), to link to.
pub fn anchored_table(headers: &[&str], rows: &[Vec<String>], ids: &[String]) -> String {
    let mut out = String::from("<table><thead><tr>");
    for header in headers {
        match header.strip_prefix('#') {
            Some(number) => {
                let _ = write!(out, "<th class=\"num\">{}</th>", esc(number));
            }
            None => {
                let _ = write!(out, "<th>{}</th>", esc(header));
            }
        }
    }
    out.push_str("</tr></thead><tbody>");
    for (i, row) in rows.iter().enumerate() {
        match ids.get(i) {
            Some(id) => {
                let _ = write!(out, "<tr id=\"{}\">", esc(id));
            }
            None => out.push_str("<tr>"),
        }
        for (cell, header) in row.iter().zip(headers.iter().chain(std::iter::repeat(&""))) {
            let class = if header.starts_with('#') {
                " class=\"num\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_that_could_open_markup() {
        assert_eq!(
            esc(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        assert_eq!(esc("{app}lock-0 · ok"), "{app}lock-0 · ok");
    }

    #[test]
    fn links_keep_their_path_and_encode_the_rest() {
        assert_eq!(href("nodes/n1/redis.log"), "nodes/n1/redis.log");
        assert_eq!(
            href("a+b/20261130T002335/report.html"),
            "a+b/20261130T002335/report.html"
        );
        assert_eq!(href("x y#\"<"), "x%20y%23%22%3C");
    }

    #[test]
    fn a_page_escapes_its_title_and_carries_the_health_script() {
        let page = page("<b>", "<p>body</p>");
        assert!(page.contains("<title>&lt;b&gt;</title>"));
        assert!(page.contains("data-errors") && page.contains("<p>body</p>"));
    }

    #[test]
    fn tables_right_align_numbers() {
        let html = table(&["key", "#count"], &[vec!["a".into(), "3".into()]]);
        assert!(html.contains("<th class=\"num\">count</th>"));
        assert!(html.contains("<td class=\"num\">3</td>"));
    }

    #[test]
    fn anchored_rows_carry_their_ids() {
        let rows = [vec!["x".to_string()], vec!["y".to_string()]];
        let html = anchored_table(&["a"], &rows, &["dg-1".into(), "dg-2".into()]);
        assert!(html.contains("<tr id=\"dg-1\"><td>x"));
        assert!(html.contains("<tr id=\"dg-2\"><td>y"));
        assert_eq!(html.matches("<tr").count(), 3, "the header row has no id");
    }
}
