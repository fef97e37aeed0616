//! `splitbrain check` on histories from other tools: a Jepsen EDN history checked with a
//! linearizability model, and the same history with one read corrupted; and on a stored run's
//! history, what it writes and prints.

use crate::support;

use std::path::{Path, PathBuf};

use support::{printed, splitbrain};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/jepsen-cas-register.edn")
}

#[test]
fn a_jepsen_edn_history_is_checked_with_the_model_asked_for() {
    let out_dir = tempfile::tempdir().unwrap();
    let out = splitbrain()
        .arg("check")
        .arg(fixture())
        .args(["--model", "cas-register", "--out"])
        .arg(out_dir.path())
        .output()
        .unwrap();
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // The failed cas is left out, the info write may have happened (and did: the read saw 2),
    // and the nemesis ops are not the register's.
    assert!(
        text.contains("cas-register over 1 key: linearizable; 3 ops"),
        "{text}"
    );
    let results = read_json(&out_dir.path().join("results.json"));
    assert_eq!(results["verdict"], "valid: linearizable");
    assert_eq!(results["linearizability"]["model"], "cas-register");
}

/// A stored run of `tests/fixtures/`, and a copy of its `files` where `check` may write.
fn copied_run(run: &str, files: &[&str]) -> (PathBuf, tempfile::TempDir) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(run);
    let dir = tempfile::tempdir().unwrap();
    for file in files {
        std::fs::copy(fixture.join(file), dir.path().join(file)).unwrap();
    }
    (fixture, dir)
}

/// A stored Redlock run with three double grants (the report tests' fixture), copied where
/// `check` may write.
fn stored_run() -> (tempfile::TempDir, PathBuf) {
    let (_, dir) = copied_run(
        "redlock-redlock-lock-kill/20261130T004506",
        &["history.jsonl", "test.json"],
    );
    let run = dir.path().to_path_buf();
    (dir, run)
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// redlock-py's `MultipleRedlockException` in a real run (the card's
/// `redlock-restart-hazard-persisted`, seed 3, quiet): `lock()` raised it, two masters refusing
/// connections while they restarted, and redlock-py raises it only once a majority granted, so
/// the caller was told it failed while it may have held the lock. The acquire's outcome is
/// unknown, the holds in its TTL are possible double grants, and the verdict is unknown, never
/// valid. The run is kept whole (test.json, results.json) so that `shrink` can take it.
#[test]
fn a_library_that_raises_after_a_majority_granted_leaves_the_verdict_unknown() {
    let (fixture, dir) = copied_run(
        "redlock-lib-redlock-py-lock-kill-holder/20261204T222323",
        &["history.jsonl"],
    );
    let out = splitbrain().arg("check").arg(dir.path()).output().unwrap();
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("3 possible double grants from 1 acquire whose outcome is unknown"),
        "{text}"
    );
    let stored = read_json(&fixture.join("results.json"));
    let checked = read_json(&dir.path().join("results.json"));
    assert_eq!(checked["verdict"], stored["verdict"], "as the run said");
}

#[test]
fn check_writes_results_beside_the_history_and_prints_every_finding() {
    let (_keep, run) = stored_run();
    let out = splitbrain().arg("check").arg(&run).output().unwrap();
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for n in 1..=3 {
        // Each named by its mechanism: n3 (or n2, n3 and n4) killed and back empty.
        assert!(
            text.contains(&format!("    #{n} [restart hazard] ")),
            "{text}"
        );
    }
    let results = read_json(&run.join("results.json"));
    assert_eq!(results["verdict"], "INVALID: 3 double grants");
    assert_eq!(
        results["lock-safety"]["double_grants"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    let out = splitbrain()
        .arg("check")
        .arg(&run)
        .args(["--limit", "1"])
        .output()
        .unwrap();
    let text = printed(&out);
    assert!(
        text.contains("    #1 [") && text.contains("       key lock") && !text.contains("    #2"),
        "{text}"
    );
}

#[test]
fn check_json_prints_the_results_and_out_takes_results_and_report() {
    let (_keep, run) = stored_run();
    let out_dir = tempfile::tempdir().unwrap();
    let out = splitbrain()
        .arg("check")
        .arg(run.join("history.jsonl"))
        .args(["--json", "--report", "--out"])
        .arg(out_dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", printed(&out));
    let printed_results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let written = read_json(&out_dir.path().join("results.json"));
    assert_eq!(printed_results, written);
    assert_eq!(written["valid"], false);
    for grant in written["lock-safety"]["double_grants"].as_array().unwrap() {
        let explained = &grant["explanation"];
        assert_eq!(explained["cause"], "restart-hazard", "{grant}");
        assert!(!explained["ops"].as_array().unwrap().is_empty(), "{grant}");
        assert!(
            !explained["spells"].as_array().unwrap().is_empty(),
            "{grant}"
        );
    }
    let report = std::fs::read_to_string(out_dir.path().join("report.html")).unwrap();
    assert!(
        report.contains("double grant"),
        "the report shows the findings"
    );
    assert!(
        report.contains("<b class=\"cause\">restart hazard</b><br>n2, n3 and n4 granted both"),
        "each finding's row starts with its mechanism"
    );
    assert!(
        report.contains("id=\"node-lane-n3\"") && report.contains("class=\"spell spell-down\""),
        "the timeline has a lane per node, with its kills"
    );
    assert!(
        report.contains("<g class=\"why\"><rect class=\"why-lane\""),
        "a double grant's mark lights up the lanes its explanation names"
    );
    assert!(
        !run.join("results.json").exists(),
        "with --out, nothing is written beside the history"
    );
}

#[test]
fn a_corrupted_read_is_not_linearizable_and_the_refused_op_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let corrupted = dir.path().join("corrupted.edn");
    let text = std::fs::read_to_string(fixture()).unwrap();
    let bad = text.replace(":ok, :f :read, :value 2", ":ok, :f :read, :value 3");
    assert_ne!(text, bad);
    std::fs::write(&corrupted, bad).unwrap();
    let out = splitbrain()
        .arg("check")
        .arg(&corrupted)
        .args(["--model", "cas-register"])
        .output()
        .unwrap();
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("op 8 process 0 read 3") && text.contains("the register holds 2"),
        "{text}"
    );
}

/// `splitbrain check FILE` with `contents`: its exit code and what it printed.
fn check_file(name: &str, contents: &[u8], extra: &[&str]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, contents).unwrap();
    let out = splitbrain()
        .arg("check")
        .arg(&path)
        .args(extra)
        .output()
        .unwrap();
    (out.status.code(), printed(&out))
}

#[test]
fn what_is_not_a_history_is_refused_and_an_empty_one_is_unknown_never_valid() {
    let (code, text) = check_file("junk.txt", b"hello world\n", &[]);
    assert_eq!(code, Some(254), "{text}");
    assert!(text.contains("line 1, column 1"), "{text}");
    let (code, text) = check_file("binary", &[0x7f, b'E', b'L', b'F', 0xff, 0xfe, b'\n'], &[]);
    assert_eq!(code, Some(254), "{text}");
    assert!(text.contains("line 1 is not UTF-8 text"), "{text}");
    let (code, text) = check_file("empty.jsonl", b"", &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("unknown: no client operation in the history"),
        "{text}"
    );
}

#[test]
fn a_lock_history_with_no_grant_is_unknown_and_a_cut_off_line_is_a_warning() {
    let history = concat!(
        r#"{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire","key":"lock","ttl_ms":1000}"#,
        "\n",
        r#"{"index":1,"time":5,"process":0,"type":"fail","f":"acquire","key":"lock","error":"held"}"#,
        "\n",
        r#"{"index":2,"time":9,"process":0,"type":"inv"#,
    );
    let (code, text) = check_file("history.jsonl", history.as_bytes(), &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("the last line was cut short"), "{text}");
    assert!(text.contains("unknown: no acquire succeeded"), "{text}");
}

/// Jepsen writes a timed-out operation as an `:info` completion carrying `:timed-out`; the
/// invocation's value is what may have happened, as knossos reads it: the read of 2 is
/// explained by the timed-out cas, a read of 3 by nothing.
#[test]
fn jepsen_timeouts_keep_the_invocations_value() {
    let history = "[{:process 3, :type :invoke, :f :write, :value 0, :index 0, :time 0}\n\
                    {:process 3, :type :ok, :f :write, :value 0, :index 0, :time 0}\n\
                    {:process 0, :type :invoke, :f :write, :value 1, :index 0, :time 0}\n\
                    {:process 0, :type :info, :f :write, :value :timed-out, :index 1, :time 10}\n\
                    {:process 1, :type :invoke, :f :cas, :value [1 2], :index 2, :time 20}\n\
                    {:process 1, :type :info, :f :cas, :value :timed-out, :error :timeout, :index 3, :time 30}\n\
                    {:process :nemesis, :type :info, :f :start, :value nil, :index 4, :time 35}\n\
                    {:process 2, :type :invoke, :f :read, :value nil, :index 5, :time 40}\n\
                    {:process 2, :type :ok, :f :read, :value 2, :index 6, :time 50}]\n";
    let (code, text) = check_file(
        "timeouts.edn",
        history.as_bytes(),
        &["--model", "cas-register"],
    );
    assert_eq!(code, Some(0), "{text}");
    let corrupted = history.replace(":ok, :f :read, :value 2", ":ok, :f :read, :value 3");
    let (code, text) = check_file(
        "timeouts.edn",
        corrupted.as_bytes(),
        &["--model", "cas-register"],
    );
    assert_eq!(code, Some(1), "{text}");
}
