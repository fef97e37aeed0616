//! Real lock libraries from the catalog (`adapters/<name>/`): listed with their versions,
//! installed into splitbrain's own cache on first use, refused where they do not fit, and
//! run as `--client lib:NAME`.

use crate::support;

use std::path::PathBuf;

use support::{docker_skipped, node_image, printed, results_dir, splitbrain};

fn adapters() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../adapters")
}

/// `splitbrain` with the repository's catalog and a cache of its own.
fn with_catalog(cache: &std::path::Path, args: &[&str]) -> std::process::Output {
    splitbrain()
        .args(args)
        .env("SPLITBRAIN_ADAPTERS", adapters())
        .env("SPLITBRAIN_CACHE", cache)
        .output()
        .expect("starting splitbrain")
}

#[test]
fn the_catalog_lists_every_library_with_its_version_and_whether_it_is_installed() {
    let cache = tempfile::tempdir().unwrap();
    let out = with_catalog(cache.path(), &["library", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let listed = String::from_utf8_lossy(&out.stdout);
    for row in [
        "lib:redis-py ",
        "lib:python-redis-lock ",
        "lib:redis-py-sentinel ",
        "redis 8.1.0",
        "python-redis-lock 4.0.1",
        "reported",
        "pottery 3.0.1",
        "redlock-py 1.0.8",
        "sherlock 0.4.1",
        "kazoo 2.11.0",
        "etcd3 0.12.0",
        "libcurator-recipes-java 5.4.0",
        "rslock 0.10.0",
    ] {
        assert!(listed.contains(row), "{row} missing from\n{listed}");
    }
    assert!(
        listed
            .lines()
            .filter(|row| row.starts_with("lib:"))
            .all(|row| row.ends_with(" no")),
        "nothing is installed in a new cache:\n{listed}"
    );
}

#[test]
fn a_library_is_refused_off_the_deployments_it_is_written_for_or_when_unknown() {
    let cache = tempfile::tempdir().unwrap();
    let (_keep, results) = results_dir();
    let results = results.to_str().unwrap();
    for (client, deployment, said) in [
        (
            "lib:redis-py",
            "redlock",
            "is written for --deployment single",
        ),
        ("lib:redis-pie", "single", "redis-py, redis-py-sentinel"),
    ] {
        let args = [
            "run",
            "--client",
            client,
            "--deployment",
            deployment,
            "--results",
            results,
        ];
        let out = with_catalog(cache.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(254), "{stderr}");
        assert!(stderr.contains(said), "{stderr}");
    }
    assert!(
        std::fs::read_dir(cache.path()).unwrap().next().is_none(),
        "a refused run installs nothing"
    );
}

/// A card line no card asked for has is refused before anything is installed or run, with
/// the lines there are.
#[test]
fn a_card_line_on_no_card_is_refused_naming_the_lines_there_are() {
    let cache = tempfile::tempdir().unwrap();
    let (_keep, results) = results_dir();
    let args = [
        "library",
        "test",
        "kazoo",
        "--check",
        "redis-zombie",
        "--results",
        results.to_str().unwrap(),
    ];
    let out = with_catalog(cache.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(254), "{stderr}");
    assert!(
        stderr.contains("--check redis-zombie") && stderr.contains("zookeeper-cut-off-holder"),
        "{stderr}"
    );
    assert!(
        std::fs::read_dir(cache.path()).unwrap().next().is_none(),
        "a refused card installs nothing"
    );
    assert!(
        !results.exists() || std::fs::read_dir(&results).unwrap().next().is_none(),
        "a refused card writes no results"
    );
}

/// From an empty cache: the first run installs redis-py into a virtual environment of its
/// own, says so, and is valid with no faults; the second finds it installed.
#[test]
fn a_library_installs_itself_on_first_use_and_is_valid_with_no_faults() {
    if docker_skipped() {
        return;
    }
    node_image();
    let cache = tempfile::tempdir().unwrap();
    let (_keep, results) = results_dir();
    let run = || {
        let args = [
            "run",
            "--client",
            "lib:redis-py",
            "--deployment",
            "single",
            "--nemesis",
            "none",
            "--time-limit",
            "6s",
            "--ttl",
            "1s",
            "--results",
            results.to_str().unwrap(),
        ];
        with_catalog(cache.path(), &args)
    };
    let first = run();
    assert_eq!(first.status.code(), Some(0), "{}", printed(&first));
    assert!(
        printed(&first).contains("installing redis 8.1.0 for lib:redis-py"),
        "{}",
        printed(&first)
    );
    let latest = results.join("latest");
    let test: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("test.json")).unwrap()).unwrap();
    assert_eq!(test["client"], "lib:redis-py");
    assert!(
        test["command"]
            .as_str()
            .unwrap()
            .contains("--client lib:redis-py"),
        "{test}"
    );
    assert!(
        test["name"]
            .as_str()
            .unwrap()
            .starts_with("single-lib-redis-py-lock-none"),
        "{test}"
    );
    let results_json = support::results_of(&latest);
    assert!(
        results_json["lock-safety"]["holds"].as_u64().unwrap() >= 3,
        "{results_json}"
    );
    let second = run();
    assert_eq!(second.status.code(), Some(0), "{}", printed(&second));
    assert!(
        !printed(&second).contains("installing"),
        "{}",
        printed(&second)
    );
}

/// Every library of the catalog, on each deployment it is written for, installed (into the
/// cache the tests share) and run with no faults: valid, with grants, and no adapter error.
#[test]
fn every_library_of_the_catalog_is_valid_with_no_faults() {
    if docker_skipped() {
        return;
    }
    node_image();
    let cache = support::library_cache();
    let listed = with_catalog(cache, &["library", "list"]);
    let clients: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|row| row.starts_with("lib:"))
        .map(|row| row.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert!(clients.len() >= 10, "{clients:?}");
    for row in clients {
        let words: Vec<&str> = row.split(' ').collect();
        let (client, deployments) = (words[0], words[4]);
        for deployment in deployments.split(',') {
            let (_keep, results) = results_dir();
            let out = with_no_faults(cache, client, deployment, &results);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{client} on {deployment}: {}",
                printed(&out)
            );
            let ran = support::results_of(&results.join("latest"));
            assert!(ran["error"].is_null(), "{client}: {ran}");
            assert!(
                ran["lock-safety"]["holds"].as_u64().unwrap() >= 2,
                "{client} on {deployment} granted too little to say anything: {ran}"
            );
        }
    }
}

/// `--stop-at-first`: sherlock with `expire=None` grants everyone at once (the finding
/// `sherlock-expire-none`), and a run asked to stop at the first violation explained as no
/// exclusion stops there, long before its time limit, with the verdict of what it recorded.
#[test]
fn a_run_stops_at_the_first_violation_explained_as_a_cause_it_names() {
    if docker_skipped() {
        return;
    }
    let (_keep, results) = results_dir();
    let args = [
        "--client",
        "lib:sherlock:expire-none",
        "--deployment",
        "single",
        "--nemesis",
        "none",
        "--time-limit",
        "60s",
    ];
    stopped_at_first(&args, "no-exclusion", &results);
    let latest = results.join("latest");
    let history = std::fs::read_to_string(latest.join("history.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(history.lines().last().unwrap()).unwrap();
    let ran_s = last["time"].as_u64().unwrap() as f64 / 1e9;
    assert!(ran_s < 30.0, "stopped at {ran_s} s of 60 s");
    let ran = support::results_of(&latest);
    assert!(
        ran["verdict"].as_str().unwrap().contains("double grant"),
        "{ran}"
    );
    let test: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("test.json")).unwrap()).unwrap();
    assert_eq!(test["stop_at_first"], serde_json::json!(["no-exclusion"]));
}

/// The finding `kazoo-orphaned-attempt`: kazoo's non-blocking acquire, refused while its
/// connection is reset, leaves its node in the lock's queue (kazoo #732). Once the holder
/// releases, nobody holds the lock and everyone is refused: a stuck lock, explained as an
/// orphaned attempt, with no double grant. The run stops at that first violation.
#[test]
fn kazoo_under_link_resets_leaves_a_refused_attempt_queued_and_the_lock_stuck() {
    if docker_skipped() {
        return;
    }
    let (_keep, results) = results_dir();
    let args = [
        "--client",
        "lib:kazoo",
        "--deployment",
        "zookeeper",
        "--nemesis",
        "link-reset",
        "--nemesis-interval",
        "1s",
        "--concurrency",
        "20",
        "--ttl",
        "6s",
        "--time-limit",
        "60s",
        "--seed",
        "1",
    ];
    stopped_at_first(&args, "orphaned-attempt", &results);
    let ran = support::results_of(&results.join("latest"));
    assert_eq!(ran["lock-safety"]["valid"], true, "{ran}");
    let period = &ran["stuck-lock"]["stuck_periods"][0];
    assert_eq!(period["explanation"]["cause"], "orphaned-attempt", "{ran}");
    // How many attempts 20 Python clients make before the run stops depends on the machine:
    // 99 in a CI run with both cores busy, several hundred on a quiet one.
    assert!(
        period["refused_attempts"].as_u64().unwrap() >= 20,
        "refused by nobody's lock: {period}"
    );
}

/// The finding `kazoo-is-acquired-after-loss`: a holder that checks kazoo's `is_acquired`
/// before each step of its work is told yes after its session was lost and its connection
/// came back, while another client holds the lock (kazoo #282): a double grant explained as
/// stale ownership. The run stops at that first violation.
#[test]
fn kazoo_still_says_is_acquired_after_its_session_is_lost() {
    if docker_skipped() {
        return;
    }
    let (_keep, results) = results_dir();
    let args = [
        "--client",
        "lib:kazoo:checks-is-acquired",
        "--deployment",
        "zookeeper",
        "--nemesis",
        "link-drop-holder",
        "--nemesis-interval",
        "3s",
        "--client-groups",
        "5",
        "--ttl",
        "2s",
        "--hold",
        "12s",
        "--time-limit",
        "60s",
        "--seed",
        "1",
    ];
    stopped_at_first(&args, "stale-ownership", &results);
    let latest = results.join("latest");
    let ran = support::results_of(&latest);
    let grant = &ran["lock-safety"]["double_grants"][0];
    assert_eq!(grant["explanation"]["cause"], "stale-ownership", "{ran}");
    let history = std::fs::read_to_string(latest.join("history.jsonl")).unwrap();
    assert!(
        history.contains(r#""type":"ok","f":"held","key":"lock","#),
        "no held op recorded"
    );
}

/// A holder that asks its library whether it still holds the lock, through either kazoo
/// variant, is valid with no faults: every answer yes, and every hold ends in its release.
#[test]
fn kazoo_holders_that_ask_whether_they_hold_are_valid_with_no_faults() {
    if docker_skipped() {
        return;
    }
    node_image();
    let cache = support::library_cache();
    for client in ["lib:kazoo:checks-is-acquired", "lib:kazoo:listens-for-loss"] {
        let (_keep, results) = results_dir();
        let out = with_no_faults(cache, client, "zookeeper", &results);
        assert_eq!(out.status.code(), Some(0), "{client}: {}", printed(&out));
        let latest = results.join("latest");
        let history = std::fs::read_to_string(latest.join("history.jsonl")).unwrap();
        let answers: Vec<serde_json::Value> = history
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .filter(|op| op["f"] == "held" && op["type"] != "invoke")
            .collect();
        assert!(
            answers.len() >= 5,
            "{client} was asked {} times",
            answers.len()
        );
        assert!(
            answers.iter().all(|op| op["value"] == true),
            "{client} said no with no fault: {answers:?}"
        );
    }
}

/// The finding `redis-py-release-lost`: redis-py 8.1.0's `Lock.release()` drops its token
/// before it asks Redis, so a holder whose release is cut off, asking again, is refused by its
/// own library (PR #4258). With the default `timeout=None` the key never expires: a stuck
/// lock, explained as a release lost, with no double grant. The run stops at that first
/// violation. With no fault, the same variant is valid: every release takes its key away.
#[test]
fn redis_py_without_a_timeout_forgets_a_release_cut_off_and_the_lock_sticks() {
    if docker_skipped() {
        return;
    }
    let (keep, results) = results_dir();
    let script = keep.path().join("cut-off-release.toml");
    std::fs::write(
        &script,
        "[[fault]]\nat = \"2s\"\nfault = \"link-drop-holder\"\nfor = \"24s\"\n",
    )
    .unwrap();
    let args = [
        "--client",
        "lib:redis-py:timeout-none",
        "--deployment",
        "single",
        "--script",
        script.to_str().unwrap(),
        "--ttl",
        "2s",
        "--hold",
        "1s",
        "--client-groups",
        "5",
        "--time-limit",
        "60s",
        "--seed",
        "1",
    ];
    stopped_at_first(&args, "release-lost", &results);
    let ran = support::results_of(&results.join("latest"));
    assert_eq!(ran["lock-safety"]["valid"], true, "{ran}");
    let period = &ran["stuck-lock"]["stuck_periods"][0];
    assert_eq!(period["explanation"]["cause"], "release-lost", "{ran}");
    let history = std::fs::read_to_string(results.join("latest/history.jsonl")).unwrap();
    let refused_release = history
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|op| op["f"] == "release" && op["type"] == "fail")
        .expect("a release refused");
    let error = refused_release["error"].as_str().unwrap();
    assert!(error.contains("asked again: LockError"), "{error}");

    let (_keep, quiet) = results_dir();
    let cache = support::library_cache();
    let out = with_no_faults(cache, "lib:redis-py:timeout-none", "single", &quiet);
    assert_eq!(out.status.code(), Some(0), "{}", printed(&out));
    let ran = support::results_of(&quiet.join("latest"));
    assert!(ran["lock-safety"]["holds"].as_u64().unwrap() >= 2, "{ran}");
    assert_eq!(ran["stuck-lock"]["valid"], true, "{ran}");
}

/// The finding `redlock-py-one-master-down`: with one master of five killed, every redlock-py
/// attempt that takes a majority raises `MultipleRedlockException` and keeps its keys, so
/// nobody is granted the lock while the master is down: the acquisition statistics' longest
/// outage lasts as long as the kill, the first unknown attempt's error naming the exception.
#[test]
fn redlock_py_grants_nobody_while_one_master_of_five_is_down() {
    if docker_skipped() {
        return;
    }
    node_image();
    let (keep, results) = results_dir();
    let script = keep.path().join("one-down.toml");
    std::fs::write(
        &script,
        "[[fault]]\nat = \"3s\"\nfault = \"kill\"\ntargets = [\"n5\"]\nfor = \"20s\"\n",
    )
    .unwrap();
    let cache = support::library_cache();
    let args = [
        "run",
        "--client",
        "lib:redlock-py",
        "--deployment",
        "redlock",
        "--script",
        script.to_str().unwrap(),
        "--time-limit",
        "30s",
        "--seed",
        "1",
        "--results",
        results.to_str().unwrap(),
    ];
    let out = with_catalog(cache, &args);
    let text = printed(&out);
    assert_ne!(out.status.code(), Some(254), "{text}");
    assert!(
        text.contains("outage   nobody was granted the lock"),
        "{text}"
    );
    let ran = support::results_of(&results.join("latest"));
    let outage = &ran["acquisition"]["longest_outage"];
    assert!(outage["ttls"].as_f64().unwrap() >= 8.0, "{outage}");
    let error = outage["first_unknown_error"].as_str().unwrap();
    assert!(error.starts_with("MultipleRedlockException"), "{error}");
}

/// Runs `splitbrain run` of `client` on `deployment` with no faults for 12 s into `results`.
fn with_no_faults(
    cache: &std::path::Path,
    client: &str,
    deployment: &str,
    results: &std::path::Path,
) -> std::process::Output {
    let results = results.to_str().unwrap();
    let args = [
        "run",
        "--client",
        client,
        "--deployment",
        deployment,
        "--nemesis",
        "none",
        "--time-limit",
        "12s",
        "--results",
        results,
    ];
    with_catalog(cache, &args)
}

/// Runs `splitbrain run ARGS --stop-at-first CAUSE` into `results`, with the library cache the
/// tests share, and asserts it stopped there, invalid.
fn stopped_at_first(args: &[&str], cause: &str, results: &std::path::Path) {
    node_image();
    let cache = support::library_cache();
    let mut all = vec!["run", "--stop-at-first", cause, "--results"];
    all.push(results.to_str().unwrap());
    all.extend(args);
    let out = with_catalog(cache, &all);
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let stopped = format!(
        "the first violation explained as {} at",
        cause.replace('-', " ")
    );
    assert!(text.contains(&stopped), "{text}");
}
