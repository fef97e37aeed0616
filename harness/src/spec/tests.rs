//! The spec's unit tests: options checked, names read back, command lines made again.

use super::*;
use crate::cli::{Cli, Command};
use clap::Parser;
use splitbrain_checker::explain::Cause;

/// The spec `splitbrain run` makes of these options, or the sentence it refuses them with
/// (clap's, for a bad name or number).
fn spec(extra: &[&str]) -> Result<TestSpec, HarnessError> {
    let argv = ["splitbrain", "run"].iter().chain(extra).copied();
    let cli = Cli::try_parse_from(argv).map_err(|e| HarnessError::BadInput(e.to_string()))?;
    let Command::Run(args) = cli.command else {
        unreachable!()
    };
    args.spec.checked()
}

fn message(extra: &[&str]) -> String {
    spec(extra).unwrap_err().to_string()
}

#[test]
fn the_defaults_make_a_valid_test() {
    let s = spec(&["--seed", "7"]).unwrap();
    assert_eq!(s.name, "redlock-redlock-lock-kill");
    assert_eq!(s.seed(), 7);
}

#[test]
fn a_drawn_seed_survives_a_json_reader_that_reads_numbers_as_doubles() {
    for _ in 0..1000 {
        let seed = spec(&[]).unwrap().seed();
        assert!(seed < 1 << 53, "{seed}");
        assert_eq!(seed as f64 as u64, seed);
    }
}

#[test]
fn bad_names_say_what_would_be_right() {
    assert!(message(&["--deployment", "sentinal"]).contains("single, redlock, sentinel"));
    let quorum = message(&["--deployment", "sentinel", "--sentinel-quorum", "4"]);
    assert!(quorum.contains("quorum of 4"), "{quorum}");
    let client = message(&["--client", "zookeeper"]);
    for name in [
        "setnx-expire",
        "del-release",
        "fenced",
        "wait",
        "exec:<command>",
    ] {
        assert!(client.contains(name), "{client}");
    }
    assert!(message(&["--nemesis", "kill,meteor"]).contains("`meteor`"));
    assert!(message(&["--workload", "bank"]).contains("lock-set"));
}

#[test]
fn an_exec_client_keeps_its_command_and_reads_back_from_the_command_line() {
    let s = spec(&[
        "--deployment",
        "single",
        "--client",
        "exec:sh -c 'exit 0'",
        "--workload",
        "lock-set",
    ])
    .unwrap();
    assert_eq!(s.client().to_string(), "exec:sh -c 'exit 0'");
    assert_eq!(
        s.client_options().command.as_deref(),
        Some("sh -c 'exit 0'")
    );
    assert!(s.name.starts_with("single-exec-sh-lock-set"), "{}", s.name);
    let quoted = r#"--client 'exec:sh -c '\''exit 0'\''' "#;
    assert!(s.command_line().contains(quoted), "{}", s.command_line());
    let redlock = spec(&["--no-jitter", "--acquire", "sequential"]).unwrap();
    assert!(!redlock.client_options().jitter && redlock.client_options().sequential);
    assert!(redlock
        .command_line()
        .ends_with("--no-jitter --acquire sequential"));
    let wait_one = [
        "--deployment",
        "sentinel",
        "--client",
        "wait",
        "--wait-replicas",
        "1",
    ];
    let wait_one = spec(&wait_one).unwrap();
    assert_eq!(wait_one.client_options().wait_replicas, Some(1));
    assert!(wait_one.command_line().ends_with("--wait-replicas 1"));
    let too_many = message(&[
        "--deployment",
        "sentinel",
        "--client",
        "wait",
        "--wait-replicas",
        "3",
    ]);
    assert!(too_many.contains("more replicas than the 2"), "{too_many}");
    let not_wait = message(&[
        "--deployment",
        "sentinel",
        "--client",
        "set-nx-px",
        "--wait-replicas",
        "1",
    ]);
    assert!(
        not_wait.contains("--client is set-nx-px; use --client wait"),
        "{not_wait}"
    );
    let no_lock = message(&[
        "--deployment",
        "sentinel",
        "--workload",
        "set",
        "--wait-replicas",
        "1",
    ]);
    assert!(no_lock.contains("use --workload lock"), "{no_lock}");
}

#[test]
fn limits_are_refused_before_anything_starts_with_the_limit_and_why() {
    let many = message(&["--concurrency", "5000000000"]);
    assert!(
        many.contains("more than this machine can run: at most"),
        "{many}"
    );
    let fast = message(&["--nemesis-interval", "1ns"]);
    assert!(fast.contains("shorter than 100ms"), "{fast}");
    let long = message(&["--time-limit", "2days"]);
    assert!(long.contains("longer than 1day"), "{long}");
    let wrapped = Cli::try_parse_from(["splitbrain", "run", "--clock-bump", "99999999999h"])
        .unwrap_err()
        .to_string();
    assert!(wrapped.contains("longer than a year"), "{wrapped}");
    let start = message(&["--exec-start-timeout", "0s"]);
    assert!(start.contains("more than zero"), "{start}");
    assert!(spec(&["--concurrency", "500", "--nemesis-interval", "100ms"]).is_ok());
}

#[test]
fn lease_faults_outlast_the_lease_unless_told() {
    let faults = ["--nemesis", "client-pause,clock-bump"];
    let at = |extra: &[&str]| {
        let s = spec(&[&faults[..], extra].concat()).unwrap();
        let options = s.nemesis_options();
        (options.client_pause, options.clock_bump)
    };
    let secs = Duration::from_secs_f64;
    assert_eq!(
        at(&[]),
        (secs(3.0), secs(10.0)),
        "the TTL of 2s asks no more"
    );
    assert_eq!(at(&["--ttl", "5s"]), (secs(7.5), secs(10.0)));
    assert_eq!(at(&["--ttl", "8s"]), (secs(12.0), secs(16.0)));
    let told = ["--ttl", "8s", "--client-pause", "1s", "--clock-bump", "2s"];
    assert_eq!(at(&told), (secs(1.0), secs(2.0)));
    let line = spec(&[&faults[..], &told[..]].concat())
        .unwrap()
        .command_line();
    assert!(line.contains("--client-pause 1s"), "{line}");
    // Beside faults that use neither, neither is written down: `run` would refuse them.
    let line = spec(&["--ttl", "8s"]).unwrap().command_line();
    assert!(
        !line.contains("--client-pause") && !line.contains("--clock-bump"),
        "{line}"
    );
}

#[test]
fn replicated_deployments_pace_faults_by_their_failure_detector_unless_told() {
    let sentinel = spec(&["--deployment", "sentinel", "--client", "set-nx-px"]).unwrap();
    let pace = sentinel
        .pace
        .as_ref()
        .expect("sentinel has a failure detector");
    assert_eq!(pace.detector_ms, 3_000);
    assert!(pace.line().contains("down-after (2s)"), "{}", pace.line());
    assert_eq!(
        sentinel.nemesis_options().detector,
        Some(Duration::from_secs(3))
    );
    let cluster = spec(&[
        "--deployment",
        "cluster",
        "--client",
        "set-nx-px",
        "--cluster-node-timeout",
        "5s",
    ])
    .unwrap();
    assert_eq!(cluster.pace.map(|p| p.detector_ms), Some(6_000));
    let told = spec(&[
        "--deployment",
        "sentinel",
        "--client",
        "set-nx-px",
        "--nemesis-interval",
        "8s",
    ])
    .unwrap();
    assert_eq!(told.pace, None);
    assert!(told.command_line().contains("--nemesis-interval 8s"));
    assert_eq!(
        spec(&[]).unwrap().pace,
        None,
        "redlock has no failure detector"
    );
}

#[test]
fn a_run_folder_name_stays_short_whatever_the_options() {
    let s = spec(&[
        "--deployment",
        "sentinel",
        "--nemesis",
        "all",
        "--client",
        "exec:sh -c 'exit 0' a-very-long-argument-list-that-goes-on-and-on",
    ])
    .unwrap();
    assert!(s.name.len() <= LONGEST_NAME, "{}", s.name);
    assert!(s.name.starts_with("sentinel-exec-sh-lock-"), "{}", s.name);
    let other = spec(&[
        "--deployment",
        "sentinel",
        "--nemesis",
        "all",
        "--client",
        "wait",
    ])
    .unwrap();
    assert_ne!(s.name, other.name);
}

#[test]
fn a_client_must_suit_its_deployment() {
    let cluster = message(&["--deployment", "cluster"]);
    assert!(
        cluster.contains("--client redlock does not fit"),
        "{cluster}"
    );
    assert!(message(&["--deployment", "single", "--nodes", "3"]).contains("exactly 1 node"));
    let s = spec(&[
        "--deployment",
        "single",
        "--client",
        "set-nx-px",
        "--nemesis",
        "none",
    ])
    .unwrap();
    assert_eq!(s.name, "single-set-nx-px-lock-none");
    assert!(s.faults().is_empty());
}

#[test]
fn faults_must_fit_the_deployment() {
    let ring_on_one = message(&[
        "--deployment",
        "single",
        "--client",
        "set-nx-px",
        "--nemesis",
        "partition-ring",
    ]);
    assert!(ring_on_one.contains("at least 4 nodes"), "{ring_on_one}");
    assert!(message(&["--clock-drift", "0"]).contains("--clock-drift"));
    assert!(message(&["--clock-drift", "-1.5"]).contains("--clock-drift"));
    let refused = Cli::try_parse_from(["splitbrain", "run", "--persistence", "rdb"]);
    assert!(refused.unwrap_err().to_string().contains("everysec"));
    let all = spec(&["--nemesis", "all"]).unwrap();
    assert!(all.faults().len() >= 6, "{:?}", all.faults());
}

#[test]
fn the_catalog_names_everything_registered() {
    let catalog = catalog();
    for name in [
        "redlock",
        "set-nx-px",
        "watchdog",
        "etcd-lease",
        "valkey-8.1",
        "lock",
        "clock-strobe",
        "link-reset",
    ] {
        assert!(catalog.contains(name), "{name} missing from\n{catalog}");
    }
}

#[test]
fn zero_durations_are_refused() {
    assert!(message(&["--ttl", "0s"]).contains("--ttl"));
    assert!(message(&["--ttl", "10ms"]).contains("too short"));
}

#[test]
fn stop_at_first_takes_causes_as_results_json_names_them() {
    let s = spec(&["--stop-at-first", "renewal-stopped,zombie,zombie"]).unwrap();
    let causes = s.limits.stop_at_first.clone().unwrap();
    assert_eq!(
        causes.0,
        [Cause::RenewalStopped, Cause::Zombie],
        "once each"
    );
    assert!(s
        .command_line()
        .contains("--stop-at-first renewal-stopped,zombie"));
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(
        json["stop_at_first"],
        serde_json::json!(["renewal-stopped", "zombie"])
    );
    let wrong = message(&["--stop-at-first", "renewal stopped"]);
    assert!(
        wrong.contains("unknown cause `renewal stopped`")
            && wrong.contains("renewal-stopped, no-exclusion, no-expiry"),
        "{wrong}"
    );
    let unasked = spec(&[]).unwrap();
    assert!(unasked.limits.stop_at_first.is_none());
    assert!(!serde_json::to_value(&unasked)
        .unwrap()
        .to_string()
        .contains("stop_at_first"));
}

#[test]
fn the_command_line_reproduces_the_spec() {
    let s = spec(&[
        "--nemesis",
        "pause,kill,clock-drift",
        "--seed",
        "9",
        "--hold",
        "0s",
        "--persistence",
        "always",
        "--clock-drift",
        "1.5",
    ])
    .unwrap();
    let line = s.command_line();
    let argv: Vec<&str> = line.split_whitespace().collect();
    let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
        unreachable!()
    };
    let again = args.spec.checked().unwrap();
    assert_eq!(
        serde_json::to_value(&again).unwrap(),
        serde_json::to_value(&s).unwrap()
    );
}

/// Option sets that reach every part and the options that only act in some combinations.
const COMBINATIONS: &[&[&str]] = &[
    &[],
    &[
        "--deployment",
        "sentinel",
        "--client",
        "wait",
        "--wait-replicas",
        "1",
        "--sentinel-quorum",
        "3",
        "--down-after",
        "5s",
        "--min-replicas-to-write",
        "1",
    ],
    &[
        "--deployment",
        "cluster",
        "--client",
        "set-nx-px",
        "--cluster-replicas",
        "2",
        "--nodes",
        "9",
        "--cluster-node-timeout",
        "3s",
        "--hash-tag",
        "t",
    ],
    &[
        "--deployment",
        "single",
        "--client",
        "exec:python3 adapters/redis_py.py",
        "--exec-start-timeout",
        "9s",
        "--workload",
        "lock-set",
    ],
    &[
        "--nemesis",
        "link-latency,clock-bump,client-pause",
        "--link-latency",
        "2s",
        "--clock-bump",
        "4s",
        "--client-groups",
        "3",
        "--ttl",
        "3s",
    ],
    &[
        "--deployment",
        "etcd",
        "--nemesis",
        "none",
        "--workload",
        "register",
        "--resources",
        "3",
    ],
    &[
        "--deployment",
        "postgres",
        "--client",
        "pg-advisory",
        "--workload",
        "lock-set",
        "--fencing",
        "--nemesis",
        "all",
    ],
    &[
        "--no-jitter",
        "--acquire",
        "sequential",
        "--nemesis",
        "kill",
        "--restart-delay",
        "3s",
        "--nemesis-interval",
        "2s",
        "--persistence",
        "always",
        "--link-jitter",
        "20ms",
        "--toxiproxy-port",
        "18474",
    ],
];

#[test]
fn every_combination_reads_back_from_its_command_line_and_its_test_json() {
    for options in COMBINATIONS {
        let s = spec(options).unwrap_or_else(|e| panic!("{options:?}: {e}"));
        let line = s.command_line();
        let words = shell_words(&line);
        let Command::Run(args) = Cli::try_parse_from(&words).unwrap().command else {
            unreachable!()
        };
        let again = args
            .spec
            .checked()
            .unwrap_or_else(|e| panic!("{line}: {e}"));
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(serde_json::to_value(&again).unwrap(), json, "{line}");
        let stored: TestSpec = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&stored).unwrap(), json);
        assert_eq!(stored.command_line(), line);
        for option in options.iter().filter(|o| o.starts_with("--")) {
            assert!(line.contains(option), "{option} missing from {line}");
        }
    }
}

#[test]
fn a_test_json_from_before_the_parts_reads_back_and_runs_the_same() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/redlock-redlock-lock-kill/20261130T004506/test.json"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let old: TestSpec = serde_json::from_value(json).unwrap();
    let line = old.command_line();
    assert_eq!(
        line,
        "splitbrain run --deployment redlock --client redlock --workload lock --ttl 2s \
         --nemesis kill --seed 1 --time-limit 30s --concurrency 5 --restart-delay 0s \
         --nemesis-interval 500ms"
    );
    let again = spec(&shell_words(&line)[2..]).unwrap();
    assert_eq!(again.nemesis_options(), old.nemesis_options());
    assert_eq!(again.client_groups(), old.client_groups());
    assert_eq!(again.name, old.name);
}

/// A command line's words, as a POSIX shell splits them (single quotes only, as
/// `command_line` writes them).
fn shell_words(line: &str) -> Vec<&'static str> {
    let mut words = Vec::new();
    let (mut word, mut quoted, mut any) = (String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => (quoted, any) = (!quoted, true),
            ' ' if !quoted => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => word.push(c),
        }
    }
    words.push(word);
    words
        .into_iter()
        .map(|w| &*Box::leak(w.into_boxed_str()))
        .collect()
}

#[test]
fn test_json_names_each_kind_and_reads_back_as_the_same_spec() {
    let s = spec(&[
        "--deployment",
        "sentinel",
        "--client",
        "set-nx-px",
        "--nemesis",
        "partition,kill",
    ])
    .unwrap();
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["deployment"], "sentinel");
    assert_eq!(json["workload"], "lock");
    assert_eq!(json["nemesis"], serde_json::json!(["partition", "kill"]));
    let again: TestSpec = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(again.deployment().name(), s.deployment().name());
    assert_eq!(serde_json::to_value(&again).unwrap(), json);

    let mut unknown = json;
    unknown["nemesis"] = serde_json::json!(["kill", "meteor"]);
    let e = serde_json::from_value::<TestSpec>(unknown).unwrap_err();
    assert!(e.to_string().contains("unknown fault `meteor`"), "{e}");
}

/// The options a user types numbers and names into, for the fuzzing below.
const FLAGS: &[&str] = &[
    "--deployment",
    "--nodes",
    "--workload",
    "--nemesis",
    "--persistence",
    "--time-limit",
    "--concurrency",
    "--ttl",
    "--hold",
    "--resources",
    "--restart-delay",
    "--nemesis-interval",
    "--clock-bump",
    "--clock-drift",
    "--client-pause",
    "--client-groups",
    "--link-latency",
    "--link-jitter",
    "--exec-start-timeout",
    "--sentinel-quorum",
    "--down-after",
    "--cluster-node-timeout",
    "--cluster-replicas",
    "--seed",
];

proptest::proptest! {
    /// Any value of any option is taken or refused with a message; never a panic, and a
    /// duration taken is within the longest one.
    #[test]
    fn any_option_value_is_taken_or_refused_never_a_panic(
        flag in proptest::sample::select(FLAGS),
        value in proptest::prop_oneof![
            "\\PC{0,24}",
            "-?[0-9]{1,22}(\\.[0-9]{1,3})?(ns|us|ms|s|m|h|d|days|y|years|)",
            "[a-z-]{1,12}(,[a-z-]{1,12}){0,3}",
        ],
    ) {
        let argv = ["splitbrain", "run", flag, value.as_str()];
        if let Ok(Cli { command: Command::Run(args) }) = Cli::try_parse_from(argv) {
            match args.spec.checked() {
                Ok(spec) => {
                    let clock_bump = spec.nemesis_options().clock_bump;
                    for d in [spec.time_limit(), spec.workload.ttl, clock_bump] {
                        proptest::prop_assert!(d <= crate::limits::LONGEST);
                    }
                }
                Err(e) => proptest::prop_assert!(!e.to_string().is_empty()),
            }
        }
    }
}
