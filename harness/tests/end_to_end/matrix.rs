//! `splitbrain matrix` against real containers: the smoke matrix passes, two cells at a time,
//! with a JUnit file CI systems accept, and the results folder's index lists it; a cell
//! whose verdict contradicts its `expect` fails the matrix, naming the cell, through shards
//! and their merge; a bad matrix file starts nothing.

use crate::support;

use std::path::Path;
use std::process::Command;

use support::{docker_skipped, printed, results_dir, splitbrain};

/// Validates `xml` against the JUnit schema CI systems read, with libxml2's xmllint.
fn assert_valid_junit(xml: &Path) {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/junit.xsd");
    let out = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&schema)
        .arg(xml)
        .output()
        .expect("xmllint (Debian's libxml2-utils; .ci/run installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn matrix_file() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../matrices/smoke.toml")
        .display()
        .to_string()
}

#[test]
fn the_smoke_matrix_passes_two_cells_at_a_time_with_a_junit_file_ci_accepts() {
    if docker_skipped() {
        return;
    }
    support::node_image();
    let (keep, results) = results_dir();
    let junit = keep.path().join("smoke.xml");
    let out = splitbrain()
        .args(["matrix", &matrix_file(), "--parallel", "2", "--results"])
        .arg(&results)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("4 of 4 cells met their expectation"),
        "{text}"
    );
    assert!(text.contains("4 cells, 2 at a time"), "{text}");
    assert_valid_junit(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 4, "{xml}");
    assert!(
        xml.contains(r#"tests="4" failures="0" errors="0""#),
        "{xml}"
    );
    let folder = std::fs::read_dir(&results)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|name| name.starts_with("matrix-"))
        .expect("a matrix folder");
    let html = std::fs::read_to_string(results.join(&folder).join("index.html")).unwrap();
    assert_eq!(html.matches("<tr class=\"met\">").count(), 4, "{html}");
    // The results folder's own index lists the matrix and its cells' runs, as after a run.
    let top = std::fs::read_to_string(results.join("index.html"))
        .expect("the results folder's index, written when the matrix ended");
    assert!(
        top.contains(&format!("href=\"{folder}/index.html\"")),
        "{top}"
    );
    assert!(top.contains("4 runs"), "{top}");
}

#[test]
fn a_cell_that_contradicts_its_expectation_fails_the_merged_shards() {
    if docker_skipped() {
        return;
    }
    support::node_image();
    let (keep, results) = results_dir();
    let file = keep.path().join("contradiction.toml");
    std::fs::write(
        &file,
        r#"
[defaults]
time-limit = "3s"

[[group]]
deployments = ["single"]
clients = ["set-nx-px"]
faults = ["none"]
seeds = [1]
expect = "invalid"

[[group]]
deployments = ["single"]
clients = ["set-nx-px"]
faults = ["none"]
seeds = [2]
expect = "valid"
"#,
    )
    .unwrap();
    let mut shards = Vec::new();
    for shard in ["1/2", "2/2"] {
        let out = splitbrain()
            .arg("matrix")
            .arg(&file)
            .args(["--shard", shard, "--quiet", "--results"])
            .arg(&results)
            .output()
            .unwrap();
        let text = printed(&out);
        let expected = if shard == "1/2" { 1 } else { 0 };
        assert_eq!(out.status.code(), Some(expected), "shard {shard}: {text}");
        assert!(
            text.contains("0 of 1 cells") || text.contains("1 of 1 cells"),
            "{text}"
        );
        shards.push(
            std::fs::read_dir(&results)
                .unwrap()
                .filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .ends_with(&format!("shard-{}-of-2", &shard[..1]))
                })
                .expect("the shard's folder"),
        );
    }
    let merged = keep.path().join("merged");
    let junit = keep.path().join("merged.xml");
    let out = splitbrain()
        .args(["report", "merge"])
        .args(&shards)
        .arg("--out")
        .arg(&merged)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "cell single/set-nx-px/lock/none/seed-1 expected invalid, got valid: no two processes"
        ),
        "{text}"
    );
    assert!(
        text.contains("1 of 2 cells met their expectation"),
        "{text}"
    );
    assert_valid_junit(&junit);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"tests="2" failures="1" errors="0""#),
        "{xml}"
    );
    assert!(
        xml.contains("<failure message=\"expected invalid, got valid"),
        "{xml}"
    );
    // The merged page links each cell's run folder inside its shard.
    let html = std::fs::read_to_string(merged.join("index.html")).unwrap();
    assert!(html.contains("href=\"../"), "{html}");
}

#[test]
fn a_bad_matrix_file_starts_nothing_and_names_the_line() {
    let (keep, results) = results_dir();
    let file = keep.path().join("typo.toml");
    std::fs::write(
        &file,
        "[[group]]\ndeployments = [\"single\", \"sentinal\"]\nexpect = \"valid\"\n",
    )
    .unwrap();
    let out = splitbrain()
        .arg("matrix")
        .arg(&file)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(254), "{stderr}");
    assert!(
        stderr.contains("typo.toml:2: ") && stderr.contains("sentinal"),
        "{stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(!results.exists(), "a bad matrix started something");
}
