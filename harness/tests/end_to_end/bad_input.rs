//! Bad input gets one clear line, exit code 254, and starts nothing.

use crate::support;

use support::{results_dir, run_splitbrain};

/// Runs `splitbrain` expecting a refusal; returns its one line of stderr.
fn refused(args: &[&str]) -> String {
    let (_keep, results) = results_dir();
    let mut argv: Vec<&str> = args.to_vec();
    let results_arg = results.to_str().unwrap().to_string();
    if args.first() == Some(&"run") {
        argv.extend(["--results", &results_arg]);
    }
    let out = run_splitbrain(&argv);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(254), "{args:?} gave {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "one line, not: {stderr}"
    );
    assert!(!results.exists(), "{args:?} started a run");
    stderr
}

#[test]
fn an_unknown_deployment_names_the_known_ones() {
    let line = refused(&["run", "--deployment", "sentinal"]);
    assert!(
        line.contains("sentinal") && line.contains("single, redlock"),
        "{line}"
    );
}

#[test]
fn a_negative_ttl_is_refused() {
    let line = refused(&["run", "--ttl", "-2s"]);
    assert!(line.contains("negative"), "{line}");
}

#[test]
fn a_malformed_duration_says_how_to_write_one() {
    let line = refused(&["run", "--time-limit", "ten seconds"]);
    assert!(line.contains("500ms, 2s or 1m"), "{line}");
}

#[test]
fn a_client_that_does_not_fit_the_deployment_is_refused() {
    let line = refused(&["run", "--deployment", "redlock", "--client", "set-nx-px"]);
    assert!(line.contains("--deployment single"), "{line}");
}

#[test]
fn an_unknown_fault_is_refused() {
    let line = refused(&["run", "--nemesis", "kill,meteor"]);
    assert!(line.contains("meteor"), "{line}");
}

#[test]
fn a_partition_shape_needs_enough_nodes() {
    let line = refused(&[
        "run",
        "--deployment",
        "redlock",
        "--nodes",
        "3",
        "--nemesis",
        "partition-ring",
    ]);
    assert!(
        line.contains("partition-ring needs at least 4 nodes"),
        "{line}"
    );
}

#[test]
fn a_drift_rate_must_be_above_zero() {
    for rate in ["0", "-2"] {
        let line = refused(&["run", "--nemesis", "clock-drift", "--clock-drift", rate]);
        assert!(line.contains("--clock-drift"), "{line}");
    }
}

#[test]
fn a_history_that_is_not_json_lines_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.jsonl");
    std::fs::write(
        &path,
        "{\"index\":0,\"time\":0,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\"}\n<html>\n{}\n",
    )
    .unwrap();
    let line = refused(&["check", path.to_str().unwrap()]);
    assert!(line.contains("line 2"), "{line}");
}

#[test]
fn a_missing_history_is_refused() {
    let line = refused(&["check", "/nonexistent/history.jsonl"]);
    assert!(line.contains("no such history"), "{line}");
    let line = refused(&["check"]);
    assert!(
        line.contains("not provided: <HISTORY>") && line.contains("splitbrain check --help"),
        "the missing argument is named, and the help that explains it: {line}"
    );
    let line = refused(&["check", "h.jsonl", "--limit", "0"]);
    assert!(line.contains("--limit"), "{line}");
}

#[test]
fn an_unreachable_docker_says_what_to_do() {
    let (_keep, results) = results_dir();
    let out = support::splitbrain()
        .args([
            "run",
            "--time-limit",
            "1s",
            "--results",
            results.to_str().unwrap(),
        ])
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cannot reach the Docker engine") && stderr.contains("DOCKER_HOST"),
        "{stderr}"
    );
    assert!(
        !results.exists(),
        "no results folder for a run that never started"
    );
}

#[test]
fn a_client_the_deployment_cannot_serve_is_refused() {
    let line = refused(&["run", "--deployment", "single", "--client", "wait"]);
    assert!(
        line.contains("--client wait") && line.contains("replicas"),
        "{line}"
    );
    let line = refused(&["run", "--client", "redlock", "--acquire", "diagonal"]);
    assert!(line.contains("parallel or sequential"), "{line}");
}

#[test]
fn fencing_needs_a_client_that_issues_tokens_and_a_storage_to_check_them() {
    let line = refused(&[
        "run",
        "--deployment",
        "single",
        "--client",
        "set-nx-px",
        "--workload",
        "lock-set",
        "--fencing",
    ]);
    assert!(line.contains("--client fenced"), "{line}");
    let line = refused(&[
        "run",
        "--deployment",
        "single",
        "--client",
        "fenced",
        "--fencing",
    ]);
    assert!(line.contains("lock-set"), "{line}");
}

#[test]
fn an_exec_client_whose_program_does_not_exist_is_refused() {
    let line = refused(&[
        "run",
        "--deployment",
        "single",
        "--client",
        "exec:/nonexistent/lock-adapter --fast",
    ]);
    assert!(line.contains("/nonexistent/lock-adapter"), "{line}");
}

/// An exec client that breaks the protocol mid-run: one line naming the client, exit 254,
/// the history kept, and nothing left running.
#[tokio::test(flavor = "multi_thread")]
async fn an_exec_client_that_breaks_the_protocol_stops_the_run_cleanly() {
    if support::docker_skipped() {
        return;
    }
    let (docker, _) = support::docker().await;
    // One that answers the hello and then exits; one that answers with something else.
    for (program, says) in [
        (
            r#"read x; echo '{"type":"ok"}'; exit 3"#,
            "exited (exit status: 3)",
        ),
        (
            r#"read x; echo '{"type":"ok"}'; read y; echo 'OK!'"#,
            "`OK!`",
        ),
        // A holder asked whether it still holds, answered without the answer.
        (
            r#"read x; echo '{"type":"ok","ask_held":true}'; read a; echo '{"type":"ok","token":"t"}'; read h; echo '{"type":"ok"}'; sleep 5"#,
            "replied ok to held without saying",
        ),
    ] {
        let (_keep, results) = results_dir();
        let client = format!("exec:{program}");
        let out = run_splitbrain(&[
            "run",
            "--deployment",
            "single",
            "--client",
            &client,
            "--nemesis",
            "none",
            "--time-limit",
            "10s",
            "--results",
            results.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(254), "{stderr}");
        let line = stderr.trim_end().lines().last().unwrap_or_default();
        assert!(
            line.contains(program) && line.contains(says) && line.contains("history.jsonl"),
            "{line}"
        );
        let run = results.join("latest");
        let history = std::fs::read_to_string(run.join("history.jsonl")).unwrap();
        assert!(history.contains("\"acquire\""), "{history}");
        let test: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("test.json")).unwrap()).unwrap();
        let run_id = test["run_id"].as_str().unwrap();
        assert_eq!(support::leftovers(&docker, run_id).await, 0);
    }
}

#[test]
fn a_lock_client_beside_a_workload_that_takes_none_is_refused() {
    for workload in ["set", "register"] {
        let line = refused(&[
            "run",
            "--deployment",
            "sentinel",
            "--workload",
            workload,
            "--client",
            "wait",
        ]);
        assert!(
            line.contains("takes no lock client") && line.contains("leave out --client"),
            "{line}"
        );
    }
}

#[test]
fn a_sentinel_quorum_larger_than_the_sentinels_is_refused() {
    let line = refused(&["run", "--deployment", "sentinel", "--sentinel-quorum", "4"]);
    assert!(
        line.contains("quorum of 4") && line.contains("3 Sentinels"),
        "{line}"
    );
    let line = refused(&["run", "--deployment", "sentinel", "--client", "redlock"]);
    assert!(line.contains("independent masters"), "{line}");
    let line = refused(&["run", "--deployment", "redlock", "--nemesis", "failover"]);
    assert!(line.contains("--deployment sentinel"), "{line}");
}

#[test]
fn a_cluster_of_fewer_than_three_masters_is_refused() {
    let line = refused(&["run", "--deployment", "cluster", "--nodes", "4"]);
    assert!(line.contains("at least three masters"), "{line}");
}

#[test]
fn faults_on_the_current_master_need_one() {
    for fault in ["kill-primary", "pause-primary", "partition-primary"] {
        let line = refused(&["run", "--deployment", "redlock", "--nemesis", fault]);
        assert!(
            line.contains(fault)
                && line.contains("--deployment sentinel, cluster, etcd or zookeeper"),
            "{line}"
        );
    }
}

#[test]
fn client_links_are_refused_on_cluster() {
    let line = refused(&[
        "run",
        "--deployment",
        "cluster",
        "--client",
        "set-nx-px",
        "--nemesis",
        "link-latency",
    ]);
    assert!(
        line.contains("follow redirects") && line.contains("link-latency"),
        "{line}"
    );
    let line = refused(&[
        "run",
        "--deployment",
        "cluster",
        "--client",
        "set-nx-px",
        "--link-jitter",
        "5ms",
    ]);
    assert!(line.contains("--link-jitter"), "{line}");
}

#[test]
fn a_register_workload_needs_one_master() {
    let line = refused(&["run", "--deployment", "redlock", "--workload", "register"]);
    assert!(line.contains("--workload register"), "{line}");
}

#[test]
fn histories_the_checker_cannot_take_name_where() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let malformed = write(
        "malformed.edn",
        "[{:type :invoke, :f :read\n :process 0}\n {:type :ok :f :read :process 0 :value }]",
    );
    let line = refused(&["check", &malformed, "--model", "register"]);
    assert!(line.contains("line 3, column 2"), "{line}");
    let line = refused(&["check", &malformed]);
    assert!(line.contains("add --model"), "{line}");
    let orphan = write(
        "orphan.jsonl",
        "{\"index\":0,\"time\":0,\"process\":3,\"type\":\"ok\",\"f\":\"write\",\"value\":1}\n",
    );
    let line = refused(&["check", &orphan]);
    assert!(
        line.contains("op 0: process 3 completes an operation it never invoked"),
        "{line}"
    );
    let line = refused(&["check", &orphan, "--model", "knossos"]);
    assert!(
        line.contains("unknown model `knossos`") && line.contains("cas-register"),
        "{line}"
    );
}

/// Each command line (split at spaces) is refused with a line holding every fragment.
fn refused_with(cases: &[(&str, &[&str])]) {
    for (command, fragments) in cases {
        let args: Vec<&str> = command.split_whitespace().collect();
        let line = refused(&args);
        assert!(
            fragments.iter().all(|fragment| line.contains(fragment)),
            "`{command}` should say {fragments:?}: {line}"
        );
    }
}

#[test]
fn redis_and_the_lock_services_clients_refuse_each_others_deployments() {
    refused_with(&[
        (
            "run --deployment etcd --client set-nx-px",
            &["runs etcd", "etcd-lease"],
        ),
        (
            "run --deployment single --client etcd-lease",
            &["etcd-lease speaks etcd", "runs redis"],
        ),
        (
            "run --deployment zookeeper --client redlock",
            &["runs zookeeper", "zk-recipe"],
        ),
        (
            "run --deployment single --client zk-recipe",
            &["zk-recipe speaks zookeeper", "runs redis"],
        ),
        (
            "run --deployment postgres --client set-nx-px",
            &["runs postgres", "pg-advisory"],
        ),
        (
            "run --deployment single --client pg-advisory",
            &["--deployment postgres"],
        ),
    ]);
}

#[test]
fn each_lock_service_refuses_what_it_cannot_honour() {
    refused_with(&[
        // etcd's leases are whole seconds, of at least 2 s.
        (
            "run --deployment etcd --client etcd-lease --ttl 1500ms",
            &["--ttl 2s or more"],
        ),
        // The clock shim cannot reach a Go server.
        (
            "run --deployment etcd --client etcd-lease --nemesis clock-bump",
            &["vDSO"],
        ),
        // ZooKeeper's lease is the session timeout, which the servers keep between 2 and 20
        // ticks.
        (
            "run --deployment zookeeper --ttl 30s",
            &["--ttl between 1s and 10s"],
        ),
        // The clock shim is not in the ZooKeeper image, and its sessions run on nanoTime.
        (
            "run --deployment zookeeper --nemesis clock-drift",
            &[
                "a JVM runs without the shim",
                "use --deployment single, redlock",
            ],
        ),
        // A consensus group elects its own leader.
        (
            "run --deployment zookeeper --nemesis failover",
            &[
                "elects its master itself",
                "(or --deployment sentinel or cluster)",
            ],
        ),
        ("run --deployment postgres --nodes 2", &["exactly 1 server"]),
        // PostgreSQL's lease is the server's TCP keepalive, in whole seconds.
        (
            "run --deployment postgres --client pg-advisory --ttl 1500ms",
            &["--ttl 2s or more"],
        ),
        // A lock that cannot outlive its write has no token to fence with.
        (
            "run --deployment postgres --client pg-advisory-xact --workload lock-set --fencing",
            &["pg-advisory-xact"],
        ),
    ]);
}

#[test]
fn a_server_must_exist_and_fit_the_deployment() {
    let line = refused(&["run", "--server", "redis-9"]);
    assert!(line.contains("valkey-8.1"), "{line}");
    let line = refused(&["run", "--deployment", "etcd", "--server", "valkey-8.1"]);
    assert!(line.contains("etcd-3.4"), "{line}");
}

#[test]
fn an_unknown_scenario_names_the_known_ones() {
    let scenarios = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
    let line = refused(&["scenario", "run", "redis-zombi", "--dir", scenarios]);
    assert!(
        line.contains("no scenario `redis-zombi`") && line.contains("redis-zombie-fenced"),
        "{line}"
    );
    let line = refused(&["scenario", "list", "--dir", "/nonexistent"]);
    assert!(line.contains("pass --dir"), "{line}");
}

/// Seeds run one at a time or several at once, never none at once.
#[test]
fn no_seeds_at_once_is_refused() {
    let scenarios = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios");
    let cases: [&[&str]; 2] = [
        &["scenario", "run", "redis-zombie", "--dir", scenarios],
        &["library", "test", "redis-py"],
    ];
    for command in cases {
        let line = refused(&[command, &["--parallel", "0"]].concat());
        assert!(
            line.contains("--parallel") && line.contains("`0` is not a positive whole number"),
            "{line}"
        );
    }
}

/// A script's mistakes are found before anything starts, named by the fault's place in it.
#[test]
fn a_script_that_cannot_run_here_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("faults.toml");
    std::fs::write(
        &script,
        "[[fault]]\nat = \"1s\"\nfault = \"kill\"\ntargets = [\"n9\"]\nfor = \"1s\"\n",
    )
    .unwrap();
    let path = script.to_str().unwrap();
    let line = refused(&["run", "--script", path]);
    assert!(
        line.contains("scripted fault 1 (kill n9 at 1.00 s for 1.00 s)")
            && line.contains("no target `n9`"),
        "{line}"
    );
    let line = refused(&["run", "--script", path, "--nemesis", "kill"]);
    assert!(line.contains("--nemesis"), "{line}");
}

/// A replay takes every option from the run it replays; one given beside it is refused.
#[test]
fn a_replay_takes_no_other_run_options() {
    let line = refused(&["run", "--replay", "results/latest", "--ttl", "3s"]);
    assert!(line.contains("leave out --ttl"), "{line}");
    let line = refused(&["run", "--replay", "/nonexistent/run"]);
    assert!(line.contains("is not a run folder"), "{line}");
    let line = refused(&["shrink", "/nonexistent/run"]);
    assert!(line.contains("is not a run folder"), "{line}");
}

/// An option that would do nothing in the combination given is refused, naming itself and
/// what would make it count, never silently taken.
#[test]
fn an_option_that_would_do_nothing_here_is_refused_with_what_to_do_instead() {
    let cases: [(&[&str], &str); 14] = [
        (&["--client-pause", "5s"], "add it to --nemesis"),
        (
            &["--nemesis", "kill", "--clock-bump", "3s"],
            "clock-bump, clock-strobe or clock-holder",
        ),
        (
            &["--restart-delay", "3s", "--nemesis", "pause"],
            "add kill, kill-holder",
        ),
        (
            &["--nemesis", "none", "--nemesis-interval", "2s"],
            "add a fault",
        ),
        (&["--sentinel-quorum", "3"], "use --deployment sentinel"),
        (
            &["--deployment", "single", "--cluster-node-timeout", "5s"],
            "use --deployment cluster",
        ),
        (
            &["--deployment", "etcd", "--persistence", "always"],
            "use --deployment single, redlock, sentinel or cluster",
        ),
        (
            &[
                "--deployment",
                "single",
                "--client",
                "set-nx-px",
                "--no-jitter",
            ],
            "use --client redlock",
        ),
        (&["--exec-start-timeout", "90s"], "use --client exec:"),
        (
            &[
                "--deployment",
                "sentinel",
                "--workload",
                "set",
                "--hold",
                "1s",
            ],
            "--workload lock or lock-set",
        ),
        (&["--hash-tag", "app"], "use --deployment cluster"),
        (
            &["--nemesis", "kill", "--client-groups", "3"],
            "add a link- fault",
        ),
        (
            &["--deployment", "zookeeper", "--no-lease-check"],
            "--client zk-recipe's library keeps the lock alive unseen",
        ),
        (
            &[
                "--deployment",
                "etcd",
                "--workload",
                "register",
                "--no-lease-check",
            ],
            "--workload lock or lock-set",
        ),
    ];
    for (args, fix) in cases {
        let mut argv = vec!["run"];
        argv.extend_from_slice(args);
        let line = refused(&argv);
        let flag = args
            .iter()
            .rev()
            .find(|a| a.starts_with("--") && **a != "--nemesis")
            .unwrap();
        assert!(
            line.contains(&format!("{flag} would do nothing here")) && line.contains(fix),
            "{args:?}: {line}"
        );
    }
}

#[test]
fn a_seed_that_is_not_a_whole_number_says_what_a_seed_is() {
    for seed in ["abc", "-1", "1.5"] {
        let line = refused(&["run", "--seed", seed]);
        assert!(
            line.contains(&format!("`{seed}` is not a seed: write a whole number")),
            "{line}"
        );
    }
}

#[test]
fn a_mistyped_option_is_told_the_one_it_resembles() {
    let line = refused(&["run", "--nemsis", "kill"]);
    assert!(
        line.contains(
            "unexpected argument '--nemsis' found; a similar argument exists: '--nemesis'"
        ),
        "{line}"
    );
}

#[test]
fn a_waiter_cut_with_one_client_group_is_refused() {
    let line = refused(&[
        "run",
        "--deployment",
        "zookeeper",
        "--nemesis",
        "link-drop-waiter",
        "--client-groups",
        "1",
    ]);
    assert!(
        line.contains("cuts a client group other than the holder's: use --client-groups 2 or more"),
        "{line}"
    );
}
