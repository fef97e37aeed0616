//! Reports, the results index and the claims page, rendered in headless Chromium: no Docker
//! needed but for the claims page, which runs two small scenarios.
//!
//! The runs are a real one kept in `tests/fixtures/` (Redlock under kills, three double
//! grants) and synthetic ones written here with the checker's types. Chromium is required: a
//! missing one fails with how to install it, unless `SPLITBRAIN_SKIP_BROWSER=1` says to skip
//! the browser on purpose.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use splitbrain_checker::testing::{lock_history, HistoryBuilder, LockWorkload};
use splitbrain_checker::{
    acquisition_stats, fencing, lock_safety, lost_writes, stuck_lock, Op, OpType, Process, Valid,
};
use support::{docker_skipped, run_splitbrain, splitbrain};

const FIXTURE_TEST: &str = "redlock-redlock-lock-kill";
const FIXTURE_RUN: &str = "20261130T004506";

/// A results folder holding a copy of the stored Redlock run.
fn results_with_fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(FIXTURE_TEST);
    copy_dir(&fixture, &results.join(FIXTURE_TEST));
    (dir, results)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Writes a run folder from a history, with results.json from the checkers plus `extra`
/// sections (another checker's, say).
fn write_run(dir: &Path, test: Value, history: &[Op], extra: Value) {
    std::fs::create_dir_all(dir.join("nodes/n1")).unwrap();
    std::fs::write(
        dir.join("nodes/n1/redis.log"),
        "1:M * Ready to accept connections\n",
    )
    .unwrap();
    std::fs::write(dir.join("test.json"), test.to_string()).unwrap();
    let lines: String = history
        .iter()
        .map(|op| serde_json::to_string(op).unwrap() + "\n")
        .collect();
    std::fs::write(dir.join("history.jsonl"), lines).unwrap();
    let safety = lock_safety::check(history);
    let writes = lost_writes::check(history);
    let fences = fencing::check(history);
    let stuck = stuck_lock::check(history, Duration::from_secs(2), None);
    let extra_valid = extra
        .as_object()
        .into_iter()
        .flat_map(|sections| sections.values())
        .filter_map(|section| serde_json::from_value::<Valid>(section["valid"].clone()).ok());
    let valid = [safety.valid, writes.valid, fences.valid, stuck.valid]
        .into_iter()
        .chain(extra_valid)
        .fold(Valid::True, Valid::merge);
    let mut results = json!({
        "valid": valid,
        "interrupted": false,
        "lock-safety": safety,
        "lost-writes": writes,
        "fencing": fences,
        "stuck-lock": stuck,
        "acquisition": acquisition_stats::check(history),
    });
    if let (Value::Object(results), Value::Object(extra)) = (&mut results, extra) {
        results.extend(extra);
    }
    std::fs::write(dir.join("results.json"), results.to_string()).unwrap();
}

fn test_json(name: &str, workload: &str, concurrency: usize, seconds: u64) -> Value {
    json!({
        "name": name,
        "deployment": "sentinel",
        "client": "redlock",
        "workload": workload,
        "nemesis": ["kill-primary"],
        "seed": 3,
        "time_limit": seconds * 1000,
        "concurrency": concurrency,
        "started": "2026-11-30T01:00:00+00:00",
        "command": format!("splitbrain run --workload {workload} --seed 3"),
    })
}

/// A report test's histories: nemesis ops with their targets, and operations that take time.
trait ReportScript {
    fn nemesis_at(&mut self, ms: u64, f: &str, fault: &str, nodes: &[&str]) -> &mut Self;
    /// An operation by `process`: invoke at `ms`, completion `took` ms later.
    fn op(
        &mut self,
        ms: u64,
        took: u64,
        process: u64,
        f: &str,
        kind: OpType,
        key: &str,
    ) -> &mut Self;
}

impl ReportScript for HistoryBuilder {
    fn nemesis_at(&mut self, ms: u64, f: &str, fault: &str, nodes: &[&str]) -> &mut Self {
        let mut op = Op::new(Process::NEMESIS, OpType::Info, f)
            .nodes(nodes.iter().map(|n| n.to_string()).collect());
        if !fault.is_empty() {
            op.fault = Some(fault.into());
        }
        self.at(ms, op)
    }

    fn op(
        &mut self,
        ms: u64,
        took: u64,
        process: u64,
        f: &str,
        kind: OpType,
        key: &str,
    ) -> &mut Self {
        let p = Process::Client(process);
        self.at(ms, Op::new(p, OpType::Invoke, f).key(key).value(ms as i64));
        let done = Op::new(p, kind, f).key(key).value(ms as i64);
        let done = if kind == OpType::Fail {
            done.error("register held <another> value")
        } else {
            done
        };
        self.at(ms + took, done)
    }
}

/// A register run: reads, writes and cas by three workers, a timeout that retires process 1,
/// a kill of the master with a failover in the middle, and a key whose name is markup.
fn register_history() -> Vec<Op> {
    let mut s = HistoryBuilder::default();
    s.nemesis_at(0, "master", "", &["n1"]);
    for round in 0..40 {
        let t = 10 + round * 50;
        s.op(t, 3, 0, "write", OpType::Ok, "r0")
            .op(t + 5, 2, 2, "read", OpType::Ok, "<script>x</script>")
            .op(t + 9, 4, 4, "cas", OpType::Fail, "r0");
    }
    s.op(900, 1_000, 1, "read", OpType::Info, "r1");
    s.op(1_950, 2, 4, "write", OpType::Ok, "r1");
    s.nemesis_at(500, "start", "kill-primary", &["n1"])
        .nemesis_at(900, "master", "", &["n1", "n2"])
        .nemesis_at(1_200, "master", "", &["n2"])
        .nemesis_at(1_500, "stop", "kill-primary", &["n1"]);
    s.build_in_time_order()
}

/// Only one Chromium at a time: they are heavy, and the machine may have two cores.
static BROWSER: Mutex<()> = Mutex::new(());

/// Chromium's path; `None` if the tests were told to skip the browser.
fn chromium() -> Option<PathBuf> {
    if std::env::var("SPLITBRAIN_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("SPLITBRAIN_SKIP_BROWSER=1: not rendering in Chromium");
        return None;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file());
    match found {
        Some(browser) => Some(browser),
        None => panic!(
            "these tests render reports in headless Chromium, which is not installed: run \
             `apt-get install -y chromium` (or set SPLITBRAIN_SKIP_BROWSER=1 to skip the browser)"
        ),
    }
}

/// What Chromium made of a page.
struct Rendered {
    /// The DOM after load, scripts run.
    dom: String,
    /// Chromium's log, console messages included.
    log: String,
    /// How long the screenshot took, browser start included.
    screenshot_time: Duration,
}

impl Rendered {
    /// Fails the test on any script error the page recorded or Chromium logged.
    fn assert_no_errors(&self) {
        // The attribute, not the script that sets it.
        assert!(
            !self.dom.contains("data-errors=\""),
            "the page recorded errors: {}",
            self.dom
                .split("data-errors=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_default()
        );
        for line in self.log.lines() {
            assert!(
                !line.contains("Uncaught") && !line.contains("CONSOLE"),
                "the browser logged: {line}"
            );
        }
    }

    /// When the page had loaded and was laid out, as its own script measured it.
    fn load_ms(&self) -> Option<u64> {
        let rest = self.dom.split("data-load-ms=\"").nth(1)?;
        rest.split('"').next()?.parse().ok()
    }
}

/// Renders `page` to `png` and dumps its DOM.
fn render(browser: &Path, page: &Path, png: &Path) -> Rendered {
    render_at(browser, page, "", png)
}

/// [`render`] with the page's address ending in `fragment` (`#dg-1-zoom`).
fn render_at(browser: &Path, page: &Path, fragment: &str, png: &Path) -> Rendered {
    let _one_at_a_time = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let url = format!("file://{}{fragment}", page.display());
    let started = Instant::now();
    let (_, shot_log) = run_browser(browser, &[&format!("--screenshot={}", png.display()), &url]);
    let screenshot_time = started.elapsed();
    assert!(
        std::fs::metadata(png).is_ok_and(|m| m.len() > 1_000),
        "no screenshot of {url}: {shot_log}"
    );
    // SPLITBRAIN_REPORT_KEEP=DIR keeps each page and its screenshot, to look at or time.
    if let Some(keep) = std::env::var_os("SPLITBRAIN_REPORT_KEEP") {
        let keep = Path::new(&keep);
        for (from, to) in [(png, png.to_path_buf()), (page, png.with_extension("html"))] {
            let kept = keep.join(to.file_name().unwrap());
            std::fs::copy(from, &kept)
                .unwrap_or_else(|e| panic!("keeping {}: {e}", kept.display()));
        }
    }
    let (dom, log) = run_browser(browser, &["--dump-dom", &url]);
    Rendered {
        dom,
        log: shot_log + &log,
        screenshot_time,
    }
}

/// Runs headless Chromium with a fresh profile; returns its stdout and its log.
fn run_browser(browser: &Path, args: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1440,2200",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting Chromium");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("Chromium took over 90 s on {args:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = err.join().unwrap();
    // Chromium without a desktop session complains about D-Bus; that is not the page's doing.
    let log = log
        .lines()
        .filter(|line| !line.contains("dbus") && !line.contains("D-Bus"))
        .map(|line| format!("{line}\n"))
        .collect();
    (out.join().unwrap(), log)
}

fn report(dir: &Path) -> String {
    let out = run_splitbrain(&["report", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "splitbrain report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(dir.join("report.html")).expect("report.html")
}

/// A report fetches nothing: no scripts, styles or images from elsewhere.
fn assert_self_contained(html: &str) {
    for (i, _) in html.match_indices("http") {
        let rest = &html[i..];
        assert!(
            rest.starts_with("http://www.w3.org/2000/svg"),
            "the report refers to {}",
            &rest[..rest.len().min(60)]
        );
    }
    assert!(!html.contains("<link") && !html.contains(" src="));
}

#[test]
fn a_stored_run_gets_a_report_with_its_timeline_faults_and_double_grants() {
    let (dir, results) = results_with_fixture();
    let run = results.join(FIXTURE_TEST).join(FIXTURE_RUN);
    let html = report(&run);
    assert_self_contained(&html);
    assert!(html.contains("verdict-invalid"));
    assert!(
        html.contains("--nemesis kill --time-limit 30s"),
        "the command line is shown"
    );
    assert!(
        html.contains("(worker "),
        "a double grant's holders name their workers, as the timeline's lanes may"
    );
    for link in [
        "test.json",
        "history.jsonl",
        "results.json",
        "nodes/n3/redis.log",
    ] {
        assert!(
            html.contains(&format!("href=\"{link}\"")),
            "no link to {link}"
        );
    }
    let Some(browser) = chromium() else { return };
    let png = dir.path().join("report-redlock-kill.png");
    let page = render(&browser, &run.join("report.html"), &png);
    page.assert_no_errors();
    let dom = &page.dom;
    assert!(dom.contains("id=\"timeline\""), "no timeline");
    assert!(
        dom.contains("class=\"fault-band\" data-fault=\"kill\""),
        "no fault band"
    );
    assert!(dom.contains("id=\"fault-legend\""));
    for node in ["n1", "n2", "n3", "n4", "n5"] {
        assert!(
            dom.contains(&format!("<g class=\"node-lane\" id=\"node-lane-{node}\">")),
            "no lane for {node}"
        );
    }
    for grant in 1..=3 {
        assert!(
            dom.contains(&format!(
                "<a href=\"#dg-{grant}-zoom\" id=\"dg-{grant}-mark\" class=\"double-grant\""
            )),
            "double grant {grant} is not highlighted on the timeline, leading to its close-up"
        );
        assert!(
            dom.contains(&format!("<tr id=\"dg-{grant}\">")),
            "no details of {grant}"
        );
        assert!(
            dom.contains(&format!(
                "<a href=\"#dg-{grant}\" id=\"dg-{grant}-zoom-dg-{grant}-mark\" class=\"double-grant\""
            )),
            "double grant {grant}'s close-up marks it, leading to its details"
        );
    }
    assert!(!dom.contains("id=\"dg-4-mark\""));
    assert_eq!(
        page.dom.matches("<figure class=\"close-up\"").count(),
        3,
        "a close-up per double grant"
    );
    assert!(
        !dom.contains("data-target-shown=\""),
        "an address naming no element shows no close-up"
    );
    let close_up = render_at(
        &browser,
        &run.join("report.html"),
        "#dg-1-zoom",
        &dir.path().join("report-redlock-kill-close-up.png"),
    );
    close_up.assert_no_errors();
    assert!(
        close_up.dom.contains("data-target-shown=\"1\""),
        "following a double grant's mark does not show its close-up"
    );
    assert!(dom.contains("id=\"latency-0\"") && dom.contains("id=\"throughput\""));
    assert!(dom.contains("id=\"check-lock-safety\""));
}

#[test]
fn a_data_workload_draws_every_op_and_shows_another_checkers_result() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("results/sentinel-register/20261130T010000");
    let op = |index: u64, f: &str, value: serde_json::Value| {
        json!({"index": index, "process": 1, "f": f, "value": value, "outcome": "ok",
               "invoke_ns": index * 1_000_000, "complete_ns": index * 1_000_000 + 500})
    };
    let linearizability = json!({"linearizability": {
        "valid": false,
        "model": "cas-register",
        "keys": 1, "keys_checked": 1, "ops_checked": 3, "ops_ignored": 0, "ignored_fs": [],
        "states_explored": 4, "peak_cache_bytes": 65536,
        "failures": [{"key": "<r0>", "explanation": {
            "linearized_count": 2,
            "state_before": null,
            "linearized": [
                {"op": op(1, "write", json!(1)), "state_after": 1},
                {"op": op(3, "write", json!(2)), "state_after": 2},
            ],
            "refused_count": 1,
            "refused": [{"op": op(5, "read", json!(3)), "state": 2,
                         "reason": "read 3, but the register holds 2"}],
        }}],
    }, "linearizability-in-verdict": true});
    write_run(
        &run,
        test_json("sentinel-register", "register", 5, 2),
        &register_history(),
        linearizability,
    );
    let html = report(&run);
    assert_self_contained(&html);
    assert!(html.contains("id=\"check-linearizability\""));
    assert!(html.contains("linearizability (cas-register)"), "{html}");
    assert!(html.contains("key <code>&lt;r0&gt;</code>: 2 operations linearized"));
    assert!(html.contains("read 3, but the register holds 2"));
    assert!(
        html.contains("register held &lt;another&gt; value"),
        "errors are escaped"
    );
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the page's own script"
    );
    assert!(
        html.contains("class=\"master-split\""),
        "two masters at once are marked"
    );
    let Some(browser) = chromium() else { return };
    let page = render(
        &browser,
        &run.join("report.html"),
        &dir.path().join("report-register.png"),
    );
    page.assert_no_errors();
    for class in ["op-ok", "op-fail", "op-info"] {
        assert!(
            page.dom.contains(&format!("class=\"{class}\"")),
            "no {class} marks"
        );
    }
    assert!(page.dom.contains("id=\"masters\""));
    assert!(page.dom.contains("cas latency") && page.dom.contains("write latency"));
}

#[test]
fn the_index_lists_every_run_newest_first_and_links_their_reports() {
    let (dir, results) = results_with_fixture();
    let newer = results.join("sentinel-register/20261130T010000");
    write_run(
        &newer,
        test_json("sentinel-register", "register", 5, 2),
        &register_history(),
        json!({}),
    );
    report(&newer);
    std::os::unix::fs::symlink("sentinel-register/20261130T010000", results.join("latest"))
        .unwrap();
    // A scenario's run lies deeper, under the scenario's own page.
    let scenario = "scenario-sentinel-register-with-a-long-name-20261130T020000";
    let nested = results.join(format!(
        "{scenario}/runs/001/sentinel-register-lock-set-partition-primary-client-pause/20261130T020001"
    ));
    write_run(
        &nested,
        test_json(
            "sentinel-lib-redis-py-sentinel-lock-set-partition-primary-client-pause",
            "register",
            5,
            2,
        ),
        &register_history(),
        json!({}),
    );
    std::fs::write(results.join(scenario).join("index.html"), "<html></html>").unwrap();
    let out = run_splitbrain(&["report", "--index", results.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("(3 runs)"));
    let html = std::fs::read_to_string(results.join("index.html")).unwrap();
    assert_self_contained(&html);
    let newest = html
        .find("sentinel-register/20261130T010000/report.html")
        .expect("newer run");
    let older = html
        .find(&format!("{FIXTURE_TEST}/{FIXTURE_RUN}/"))
        .expect("the stored run, whose report is not written yet, links its folder");
    assert!(newest < older, "newest first");
    assert!(html.contains("2026-11-30 00:45:06"));
    assert!(
        html.contains(&format!("href=\"{scenario}/index.html\"")),
        "the scenario's page is listed"
    );
    assert!(
        html.contains(&format!("{scenario}/runs/001/")) && html.contains("in <a href="),
        "its run is listed, and in what"
    );
    let Some(browser) = chromium() else { return };
    let page = render(
        &browser,
        &results.join("index.html"),
        &dir.path().join("index.png"),
    );
    page.assert_no_errors();
    assert!(page.dom.contains("id=\"runs\""));
    assert_eq!(
        page.dom.matches("class=\"run\"").count(),
        3,
        "latest is not a run"
    );
    // At 1,400 px the long names wrap at their words and nothing scrolls sideways.
    let url = format!("file://{}", results.join("index.html").display());
    let (dom, _) = run_browser(&browser, &["--window-size=1400,1200", "--dump-dom", &url]);
    assert!(dom.contains("data-overflow-px=\"0\""), "{dom}");
}

#[test]
fn a_folder_that_is_not_a_run_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["report", dir.path().to_str().unwrap()],
        vec!["report"],
        vec!["report", "--index", "/nonexistent/results"],
    ] {
        let out = run_splitbrain(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(254), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "one line, not: {stderr}"
        );
    }
    assert!(!dir.path().join("report.html").exists());
}

#[test]
fn a_100000_op_report_stays_small_and_renders() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("results/big/20261130T020000");
    let mut history = lock_history(&LockWorkload {
        ops: 100_000,
        processes: 10,
        keys: 2,
        seed: 11,
    });
    // One double grant, so that the big report has a violation to draw exactly.
    let granted = history
        .iter()
        .find(|op| op.kind == OpType::Ok && op.f == "acquire" && op.time > 60_000_000_000)
        .cloned()
        .unwrap();
    let Process::Client(holder) = granted.process else {
        unreachable!()
    };
    let intruder = Process::Client(100_000 + (holder + 1) % 10);
    let key = granted.key.clone().unwrap();
    let next = history.len() as u64;
    for (i, (kind, f)) in [
        (OpType::Invoke, "acquire"),
        (OpType::Ok, "acquire"),
        (OpType::Invoke, "release"),
        (OpType::Ok, "release"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut op = Op::new(intruder, kind, f)
            .key(key.as_str())
            .at(next + i as u64, granted.time + 100_000 * (i as u64 + 1));
        op.ttl_ms = Some(500);
        history.push(op);
    }
    write_run(&run, test_json("big", "lock", 10, 80), &history, json!({}));
    let started = Instant::now();
    let html = report(&run);
    let write_time = started.elapsed();
    let size = html.len();
    assert!(size < 5_000_000, "report.html is {size} bytes");
    assert!(
        html.contains("id=\"dg-1-mark\""),
        "the injected double grant is drawn"
    );
    assert!(html.contains("density"), "busy lanes are aggregated");
    eprintln!("100,000 ops: report.html {size} bytes, written in {write_time:?}");
    let Some(browser) = chromium() else { return };
    let page = render(
        &browser,
        &run.join("report.html"),
        &dir.path().join("report-100k-ops.png"),
    );
    page.assert_no_errors();
    // The browser's own start-up, to tell apart from the report's rendering.
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><title>blank</title>").unwrap();
    let baseline = render(&browser, &blank, &dir.path().join("blank.png"));
    eprintln!(
        "100,000 ops: headless screenshot in {:.2} s (an empty page: {:.2} s); loaded and laid \
         out in {:?} ms",
        page.screenshot_time.as_secs_f64(),
        baseline.screenshot_time.as_secs_f64(),
        page.load_ms()
    );
}

#[test]
fn serve_answers_inside_the_results_folder_and_nothing_outside() {
    let (_dir, results) = results_with_fixture();
    std::fs::write(results.parent().unwrap().join("secret"), "not for the web").unwrap();
    let mut server = splitbrain()
        .args([
            "serve",
            "--port",
            "0",
            "--results",
            results.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let get = |path: &str| -> String {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    let index = get("/");
    let log = get(&format!("/{FIXTURE_TEST}/{FIXTURE_RUN}/nodes/n1/redis.log"));
    let outside = [
        get("/../secret"),
        get("/%2e%2e/secret"),
        get(&format!("/{FIXTURE_TEST}/..%2F..%2Fsecret")),
    ];
    let folder = get(&format!("/{FIXTURE_TEST}"));
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        index.starts_with("HTTP/1.0 200") && index.contains("splitbrain results"),
        "{index}"
    );
    assert!(
        index.contains(FIXTURE_TEST),
        "the index is made fresh: {index}"
    );
    assert!(
        log.starts_with("HTTP/1.0 200") && log.contains("text/plain"),
        "{log}"
    );
    for response in outside {
        assert!(response.starts_with("HTTP/1.0 404"), "{response}");
        assert!(!response.contains("not for the web"));
    }
    assert!(
        folder.starts_with("HTTP/1.0 308"),
        "a folder gets its slash: {folder}"
    );
}

/// Every relative link of `html` (a file beside or below `page`, or an anchor in it) resolves.
fn assert_links_resolve(page: &Path, html: &str) {
    let links: Vec<&str> = html
        .split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert!(!links.is_empty(), "no links in {}", page.display());
    for link in links {
        match link.split_once('#') {
            Some(("", anchor)) => assert!(
                html.contains(&format!("id=\"{anchor}\"")),
                "#{anchor} names nothing on the page"
            ),
            _ => {
                let file = link.split('#').next().unwrap_or(link);
                let target = page.parent().unwrap().join(file);
                assert!(
                    target.exists(),
                    "{link} does not resolve: no {}",
                    target.display()
                );
            }
        }
    }
}

#[test]
fn the_claims_page_renders_and_its_links_resolve() {
    if docker_skipped() {
        return;
    }
    support::node_image();
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir(&scenarios).unwrap();
    let scenario = |name: &str, table: &str, faults: &str, expect: &str| {
        let text = format!(
            "[scenario]\n{table}\n[[group]]\ndeployments = [\"single\"]\nclients = [\"set-nx-px\"]\n\
             faults = [\"{faults}\"]\nexpect = \"{expect}\"\noptions = {{ ttl = \"1s\", time-limit = \"6s\" }}\n"
        );
        std::fs::write(scenarios.join(format!("{name}.toml")), text).unwrap();
    };
    scenario(
        "emptied",
        "claim = \"A kill empties a server without persistence.\"\nsource = \"the article\"",
        "kill",
        "invalid",
    );
    scenario(
        "emptied-cured",
        "claim = \"No faults, no double grant.\"\nsource = \"the article\"\ncures = \"emptied\"",
        "none",
        "valid",
    );
    let results = dir.path().join("results");
    let out = run_splitbrain(&[
        "scenario",
        "run",
        "--all",
        "--seeds",
        "1",
        "--quiet",
        "--dir",
        scenarios.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("the article, checked:"), "{stdout}");
    let page_dir = std::fs::read_dir(&results)
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path()))
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("claims-")
        })
        .expect("a claims folder");
    let page = page_dir.join("index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    assert_eq!(html.matches("<tr id=").count(), 2, "{html}");
    assert!(html.contains("cure of <a href=\"#emptied\">emptied</a>"));
    assert_links_resolve(&page, &html);
    let claims: Value =
        serde_json::from_str(&std::fs::read_to_string(page_dir.join("claims.json")).unwrap())
            .unwrap();
    assert_eq!(claims[1]["name"], "emptied-cured");
    assert_eq!(claims[1]["seeds"], 1);
    let Some(browser) = chromium() else { return };
    let rendered = render(&browser, &page, &dir.path().join("claims.png"));
    rendered.assert_no_errors();
    assert!(rendered.dom.contains("The article, checked"));
}

/// A library's report card, from the catalog's real adapter and a folder of short scenarios
/// under the names its card runs, two seeds of each at once: a row per check, the control
/// valid in both, every link resolving, and the page rendered in Chromium without a script
/// error.
#[test]
fn a_librarys_report_card_renders_and_its_links_resolve() {
    if docker_skipped() {
        return;
    }
    support::node_image();
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir(&scenarios).unwrap();
    // redis-py's card: the control, then these three, each cut short.
    for (name, workload, faults, expect) in [
        ("redis-zombie", "lock-set", "client-pause", "invalid"),
        (
            "redis-del-release-hijack-compare-and-delete",
            "lock",
            "client-pause",
            "valid",
        ),
        (
            "redis-setnx-expire-stuck-atomic",
            "lock",
            "client-crash",
            "valid",
        ),
    ] {
        let text = format!(
            "[scenario]\nclaim = \"{name}, short.\"\nsource = \"this test\"\n\n[[group]]\n\
             deployments = [\"single\"]\nclients = [\"set-nx-px\"]\nworkloads = [\"{workload}\"]\n\
             faults = [\"{faults}\"]\nexpect = \"{expect}\"\n\
             options = {{ ttl = \"1s\", time-limit = \"8s\" }}\n"
        );
        std::fs::write(scenarios.join(format!("{name}.toml")), text).unwrap();
    }
    let results = dir.path().join("results");
    let out = splitbrain()
        .args(["library", "test", "lib:redis-py", "--quiet"])
        .args(["--seeds", "2", "--parallel", "2"])
        .arg("--scenarios")
        .arg(&scenarios)
        .arg("--results")
        .arg(&results)
        .env(
            "SPLITBRAIN_ADAPTERS",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../adapters"),
        )
        .env("SPLITBRAIN_CACHE", support::library_cache())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("lib:redis-py: redis 8.1.0, single-redis"),
        "{stdout}"
    );
    assert!(
        stdout.contains("libraries as their design predicts"),
        "{stdout}"
    );
    let page_dir = std::fs::read_dir(&results)
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path()))
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("library-redis-py-")
        })
        .expect("a card's folder");
    let cards: Value =
        serde_json::from_str(&std::fs::read_to_string(page_dir.join("cards.json")).unwrap())
            .unwrap();
    let lines = cards[0]["lines"].as_array().unwrap();
    let names: Vec<&str> = lines.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "control",
            "redis-zombie",
            "redis-del-release-hijack-compare-and-delete",
            "redis-setnx-expire-stuck-atomic"
        ]
    );
    assert_eq!(lines[0]["held"], true, "the control is valid: {}", lines[0]);
    assert_eq!(lines[0]["verdicts"], "2 valid");
    let page = page_dir.join("index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    assert_eq!(html.matches("<tr class=").count(), 4, "{html}");
    assert!(html.contains("over 2 seeds (2 at once)"), "{html}");
    assert_links_resolve(&page, &html);
    let Some(browser) = chromium() else { return };
    let rendered = render(&browser, &page, &dir.path().join("cards.png"));
    rendered.assert_no_errors();
    assert!(rendered.dom.contains("Lock libraries, judged"));
}
