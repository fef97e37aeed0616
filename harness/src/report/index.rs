//! `results/index.html`: every run stored under a results folder, newest first, with its
//! verdict, what its checkers found, and a link to its report: a run's own (`<test>/<time>/`)
//! and those of matrices, scenarios and report cards (`<group>/.../runs/NNN/<test>/<time>/`),
//! whose summary pages are listed above them. The `latest` links are skipped.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use splitbrain_checker::every::Role;
use splitbrain_checker::fencing::Fencing;
use splitbrain_checker::lock_safety::LockSafety;
use splitbrain_checker::lost_writes::LostWrites;
use splitbrain_checker::stuck_lock::StuckLock;
use splitbrain_checker::Valid;

use super::html::{self, aside_badge, esc, href, verdict_badge};
use crate::error::HarnessError;
use crate::store::{Results, RunDir, StoredTest};

/// How deep under the results folder runs are looked for: a card's runs lie at
/// `libraries-<time>/<line>/runs/NNN/<test>/<time>/`.
const DEEPEST_RUN: usize = 6;

/// One run, as the index lists it.
struct Row {
    /// `<test>/<time>` (or deeper, in a group), relative to the results folder.
    path: String,
    /// The matrix, scenario or card the run was part of: the first folder of its path.
    group: Option<String>,
    /// The run folder's name: its start time, `YYYYMMDDTHHMMSS` (with `-N` if two started in
    /// one second).
    time: String,
    test: StoredTest,
    results: Option<Results>,
    has_report: bool,
}

/// Writes `index.html` into the results folder `root`; returns its path and how many runs
/// it lists.
pub fn write_index(root: &Path) -> Result<(PathBuf, usize), HarnessError> {
    let rows = runs(root)?;
    let path = root.join("index.html");
    std::fs::write(&path, render(&rows, &summaries(root)))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok((path, rows.len()))
}

/// The index of `root` as a page, for serving it fresh.
pub fn render_index(root: &Path) -> Result<String, HarnessError> {
    Ok(render(&runs(root)?, &summaries(root)))
}

/// The summary pages of the matrices, scenarios and cards under `root` (`<group>/index.html`,
/// and a card's lines one folder down), newest first.
fn summaries(root: &Path) -> Vec<String> {
    let mut pages: Vec<(std::time::SystemTime, String)> = Vec::new();
    for group in real_dirs(root) {
        let lines = std::iter::once(group.clone()).chain(real_dirs(&group));
        for dir in lines.filter(|d| !RunDir::at(d).is_run()) {
            let page = dir.join("index.html");
            let (Ok(meta), Ok(relative)) = (page.metadata(), page.strip_prefix(root)) else {
                continue;
            };
            let made = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            pages.push((made, relative.to_string_lossy().into_owned()));
        }
    }
    pages.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    pages.into_iter().map(|(_, page)| page).collect()
}

fn runs(root: &Path) -> Result<Vec<Row>, HarnessError> {
    if !root.is_dir() {
        return Err(HarnessError::BadInput(format!(
            "{} is not a results folder (no such folder)",
            root.display()
        )));
    }
    let mut rows = Vec::new();
    for run_dir in run_dirs(root, DEEPEST_RUN) {
        let (Ok(relative), Some(test_dir)) = (run_dir.strip_prefix(root), run_dir.parent()) else {
            continue;
        };
        let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
        // A run whose files do not read is still listed, with what could be read.
        let run = RunDir::at(&run_dir);
        let test = run.stored_test();
        let folders: Vec<_> = relative.components().collect();
        rows.push(Row {
            path: relative.to_string_lossy().into_owned(),
            group: (folders.len() > 2)
                .then(|| folders[0].as_os_str().to_string_lossy().into_owned()),
            time: name(&run_dir).unwrap_or_default(),
            test: StoredTest {
                name: if test.name.is_empty() {
                    name(test_dir).unwrap_or_default()
                } else {
                    test.name.clone()
                },
                ..test
            },
            results: run.results(),
            has_report: run_dir.join("report.html").is_file(),
        });
    }
    rows.sort_by(|a, b| {
        b.time
            .cmp(&a.time)
            .then_with(|| a.test.name.cmp(&b.test.name))
    });
    Ok(rows)
}

/// The run folders under `dir`, down to `depth` folders below it; a run's own folder holds
/// none.
fn run_dirs(dir: &Path, depth: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for sub in real_dirs(dir) {
        if RunDir::at(&sub).is_run() {
            found.push(sub);
        } else if depth > 1 {
            found.extend(run_dirs(&sub, depth - 1));
        }
    }
    found
}

/// Sub-folders of `dir` that are folders themselves, not links to one, in name order.
fn real_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

fn render(rows: &[Row], summaries: &[String]) -> String {
    let mut body = format!(
        "<h1>splitbrain results</h1><p class=\"note\">{} run{}, newest first.</p>",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    );
    if !summaries.is_empty() {
        body += "<h2>Matrices, scenarios and report cards</h2><ul class=\"summaries\">";
        for page in summaries {
            let shown = page.strip_suffix("/index.html").unwrap_or(page);
            let _ = write!(
                body,
                "<li><a href=\"{}\">{}</a></li>",
                href(page),
                breakable(shown)
            );
        }
        body += "</ul><h2>Runs</h2>";
    }
    if rows.is_empty() {
        body += "<p>No runs stored yet: <code>splitbrain run</code> makes one.</p>";
    }
    let cells: Vec<Vec<String>> = rows.iter().map(row).collect();
    let table = html::table(
        &[
            "test (its report)",
            "time",
            "deployment",
            "client",
            "workload",
            "faults",
            "verdict",
            "found",
            "other checkers",
        ],
        &cells,
    );
    let _ = write!(body, "<div class=\"index\" id=\"runs\">{table}</div>");
    html::page("splitbrain results", &body)
}

/// `name` escaped, with a place to break the line after each `-`, `/` or `:`, and nowhere
/// else: a long test name wraps at its words, not every few letters.
fn breakable(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + name.len() / 4);
    for c in name.chars() {
        out += &esc(&c.to_string());
        if matches!(c, '-' | '/' | ':') {
            out += "<wbr>";
        }
    }
    out
}

fn row(run: &Row) -> Vec<String> {
    let results = run.results.as_ref();
    let safety = results.and_then(|r| r.checkers.get::<LockSafety>());
    let fencing = results.and_then(|r| r.checkers.get::<Fencing>()).map(|f| {
        f.duplicate_fence_count + f.out_of_order_grant_count + f.stale_storage_access_count
    });
    // What each checker found, where it found something; a count the run's results do not
    // have is left out, not shown as 0.
    let found: Vec<String> = [
        (safety.map(|s| s.double_grant_count), "double grant"),
        (
            safety.map(|s| s.possible_double_grant_count),
            "possible double grant",
        ),
        (
            results
                .and_then(|r| r.checkers.get::<LostWrites>())
                .map(|l| l.lost_count),
            "lost write",
        ),
        (fencing, "fencing violation"),
        (
            results
                .and_then(|r| r.checkers.get::<StuckLock>())
                .map(|s| s.stuck_period_count),
            "stuck lock",
        ),
    ]
    .into_iter()
    .filter_map(|(n, what)| Some((n.filter(|&n| n > 0)?, what)))
    .map(|(n, what)| format!("<strong class=\"found\">{}</strong>", esc(&count(n, what))))
    .collect();
    let found = match (found.is_empty(), results.is_some()) {
        (false, _) => found.join("<br>"),
        (true, true) => "nothing".to_string(),
        (true, false) => String::new(),
    };
    // A run stopped before its report was written still has its folder to browse.
    let link = if run.has_report {
        format!("{}/report.html", href(&run.path))
    } else {
        format!("{}/", href(&run.path))
    };
    let group = run.group.as_ref().map_or(String::new(), |group| {
        format!(
            "<br><span class=\"note\">in <a href=\"{}/\">{}</a></span>",
            href(group),
            breakable(group)
        )
    });
    vec![
        format!(
            "<a class=\"run\" href=\"{link}\">{}</a>{group}",
            breakable(&run.test.name)
        ),
        esc(&time_label(&run.time)),
        esc(&run.test.deployment),
        esc(&run.test.client),
        esc(&run.test.workload),
        breakable(&run.test.faults_label()),
        verdict_badge(results.map(|r| r.valid)),
        found,
        results.map(other_checkers).unwrap_or_default(),
    ]
}

/// `3 double grants`.
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// A page linking to each of `names` (folders end in `/`), for a folder with no index.html.
pub fn listing_page(title: &str, names: &[String]) -> String {
    let mut body = format!("<h1>{}</h1><ul>", esc(title));
    for name in names {
        let _ = write!(
            body,
            "<li><a href=\"{}\">{}</a></li>",
            href(name),
            esc(name)
        );
    }
    body.push_str("</ul>");
    html::page(title, &body)
}

/// The verdicts of checkers the index has no column for (linearizability, starvation, say);
/// one shown beside the run's verdict, not in it, is grey; statistics pass none.
fn other_checkers(results: &Results) -> String {
    const COLUMNS: [&str; 4] = ["lock-safety", "lost-writes", "fencing", "stuck-lock"];
    let registered = results
        .checkers
        .iter()
        .filter(|(r, _)| !COLUMNS.contains(&r.name) && r.role != Role::Statistics)
        .map(|(r, checker)| (r.name, Some(checker.valid()), r.role == Role::Beside));
    let searched = results.linearizability.as_ref().map(|l| {
        let aside = !results.linearizability_counts;
        ("linearizability", Some(l.valid), aside)
    });
    // A newer splitbrain's checker, unread, still shows the verdict its section records.
    let unread = results.unread.iter().filter_map(|(name, section)| {
        let valid = serde_json::from_value::<Valid>(section.get("valid")?.clone()).ok();
        Some((name.as_str(), valid, false))
    });
    registered
        .chain(searched)
        .chain(unread)
        .map(|(name, valid, aside)| {
            let badge = if aside {
                aside_badge(valid)
            } else {
                verdict_badge(valid)
            };
            format!("{} {badge}", esc(name))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `20261130T002335` as `2026-11-30 00:23:35`; anything else as it is.
fn time_label(folder: &str) -> String {
    let digits = |range: std::ops::Range<usize>| {
        folder
            .get(range)
            .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
    };
    match (
        digits(0..4),
        digits(4..6),
        digits(6..8),
        folder.get(8..9),
        digits(9..11),
        digits(11..13),
        digits(13..15),
    ) {
        (Some(y), Some(mo), Some(d), Some("T"), Some(h), Some(mi), Some(s)) => {
            format!("{y}-{mo}-{d} {h}:{mi}:{s}{}", &folder[15..])
        }
        _ => folder.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_folder_names_read_as_times() {
        assert_eq!(time_label("20261130T002335"), "2026-11-30 00:23:35");
        assert_eq!(time_label("20261130T002335-1"), "2026-11-30 00:23:35-1");
        assert_eq!(time_label("latest"), "latest");
        assert_eq!(time_label("2026113OT002335"), "2026113OT002335");
    }

    fn read(json: serde_json::Value) -> Results {
        Results::read(json)
    }

    #[test]
    fn other_checkers_show_their_verdicts() {
        let results = read(serde_json::json!({
            "valid": false,
            "linearizability": {"valid": false, "model": "register", "keys": 1,
                "keys_checked": 1, "ops_checked": 2, "ops_ignored": 0, "states_explored": 3,
                "peak_cache_bytes": 0, "failures": []},
            "linearizability-in-verdict": true,
            "a-newer-checker": {"valid": true},
        }));
        let shown = other_checkers(&results);
        assert!(
            shown.starts_with("linearizability <span class=\"verdict verdict-invalid\">"),
            "{shown}"
        );
        assert!(shown.contains("a-newer-checker <span class=\"verdict verdict-valid\">"));
    }

    #[test]
    fn checkers_beside_the_verdict_are_never_coloured_as_one() {
        let results = read(serde_json::json!({
            "valid": true,
            "starvation": {"valid": false, "after_ttls": 5, "waits": 3, "longest_wait_ms": 9.0,
                "starved_count": 1, "starved": []},
        }));
        let shown = other_checkers(&results);
        assert!(
            shown.starts_with("starvation <span class=\"verdict verdict-aside\""),
            "{shown}"
        );
        assert!(!shown.contains("verdict-invalid"), "{shown}");
    }
}
