//! What a terminal user expects of the command: shell completion and man pages made from the
//! parser's own definitions, and a seed that survives the JSON tools people pipe it through.

use crate::support;

use splitbrain_checker::Op;
use splitbrain_nemesis::script::{from_history, ScriptedFault};
use support::{docker_skipped, printed, read_ops, run_splitbrain, StoredRun};

#[test]
fn completion_scripts_know_every_command_and_option() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run_splitbrain(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        for word in ["scenario", "matrix", "deployment", "nemesis", "limit"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    // The bash script is valid bash, and completes `splitbrain sc` to `scenario`.
    let script = run_splitbrain(&["completions", "bash"]).stdout;
    let script = String::from_utf8(script).unwrap();
    let completed = std::process::Command::new("bash")
        .args([
            "-c",
            &format!(
                "{script}\nCOMP_WORDS=(splitbrain sc); COMP_CWORD=1; \
                 _splitbrain splitbrain sc splitbrain; echo \"${{COMPREPLY[@]}}\""
            ),
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&completed.stdout).trim(),
        "scenario",
        "{}",
        printed(&completed)
    );
    let refused = run_splitbrain(&["completions", "tcsh"]);
    assert_eq!(refused.status.code(), Some(254), "{}", printed(&refused));
}

#[test]
fn man_pages_are_written_for_every_command_and_read_by_man() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("man1");
    let out = run_splitbrain(&["man", "--out", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    for page in [
        "splitbrain.1",
        "splitbrain-run.1",
        "splitbrain-check.1",
        "splitbrain-matrix.1",
    ] {
        assert!(out_dir.join(page).is_file(), "{page}");
    }
    let run_page = std::fs::read_to_string(out_dir.join("splitbrain-run.1")).unwrap();
    assert!(run_page.contains("deployment") && run_page.contains("seed"));
    // The summary counts what it wrote; the NAME line names every deployment's system.
    let pages = std::fs::read_dir(&out_dir).unwrap().count();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with(&format!("wrote {pages} man pages into ")),
        "{said}"
    );
    let top = std::fs::read_to_string(out_dir.join("splitbrain.1")).unwrap();
    for system in ["Redis", "etcd", "ZooKeeper", "PostgreSQL", "MariaDB"] {
        assert!(top.contains(system), "the NAME line leaves out {system}");
    }
    // man renders it, where man is installed (groff reads the same roff).
    let rendered = std::process::Command::new("man")
        .args(["-l", "-P", "cat"])
        .arg(out_dir.join("splitbrain.1"))
        .env("MANWIDTH", "100")
        .output();
    match rendered {
        Ok(rendered) => {
            let text = String::from_utf8_lossy(&rendered.stdout);
            assert!(text.contains("splitbrain"), "{}", printed(&rendered));
        }
        Err(e) => panic!("this test reads the page with man: {e} (apt-get install man-db)"),
    }
}

fn script_of(ops: &[Op]) -> Vec<ScriptedFault> {
    from_history(ops).expect("a history of known faults").0
}

#[test]
fn a_seed_read_back_with_jq_reruns_the_same_schedule() {
    if docker_skipped() {
        return;
    }
    // Faults whose targets come from the seed alone, not from who holds the lock.
    let options = [
        "--nemesis",
        "kill,pause,partition",
        "--time-limit",
        "6s",
        "--nemesis-interval",
        "300ms",
    ];
    let first = StoredRun::new(&options);
    first.assert_verdict();
    let jq = std::process::Command::new("jq")
        .args([".seed"])
        .arg(first.dir.join("test.json"))
        .output()
        .unwrap_or_else(|e| panic!("this test reads the seed with jq: {e} (.ci/run installs it)"));
    let seed = String::from_utf8(jq.stdout).unwrap().trim().to_string();
    let stored = std::fs::read_to_string(first.dir.join("test.json")).unwrap();
    assert!(
        stored.contains(&format!("\"seed\": {seed}")),
        "jq read the seed as {seed}: {stored}"
    );
    let again: Vec<&str> = options.iter().copied().chain(["--seed", &seed]).collect();
    let second = StoredRun::new(&again);
    second.assert_verdict();
    let (was, now) = (script_of(&first.ops()), script_of(&read_ops(&second.dir)));
    assert!(was.len() >= 4, "a busy schedule: {was:?}");
    // The last fault may be cut by the time limit in one run and not the other.
    let compared = was.len().min(now.len()) - 1;
    for (was, now) in was.iter().zip(&now).take(compared) {
        assert_eq!(
            (&was.fault, &was.targets, &was.params),
            (&now.fault, &now.targets, &now.params)
        );
    }
}
