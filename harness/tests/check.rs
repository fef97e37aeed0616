//! `splitbrain check` on histories from other tools: a Jepsen EDN history checked with a
//! linearizability model, and the same history with one read corrupted.

mod support;

use std::path::{Path, PathBuf};

use support::{printed, splitbrain};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/jepsen-cas-register.edn")
}

#[test]
fn a_jepsen_edn_history_is_checked_with_the_model_asked_for() {
    let out = splitbrain()
        .arg("check")
        .arg(fixture())
        .args(["--model", "cas-register"])
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
