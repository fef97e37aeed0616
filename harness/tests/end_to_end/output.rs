//! A run never dies of its own output. With stdout closed early (a pipe into `head`), stderr on
//! a full disk (`2>/dev/full`), or its terminal gone (SIGHUP), it goes on to its end, writes its
//! history, results.json and report.html, exits with its verdict's code, and leaves no
//! container behind.

use crate::support;

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use support::{docker_skipped, leftovers, results_dir, splitbrain};

/// A control run (a correct lock, no faults) short enough to repeat: valid, exit 0.
fn control(results: &Path) -> Vec<String> {
    [
        "run",
        "--deployment",
        "single",
        "--client",
        "set-nx-px",
        "--nemesis",
        "none",
        "--time-limit",
        "5s",
        "--results",
        results.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

/// The run ended with its verdict's code (valid: 0), its folder is whole, and nothing of it
/// is left running.
fn assert_finished(results: &Path, status: ExitStatus, output: &str) {
    assert_eq!(status.code(), Some(0), "{output}");
    let run = results.join("latest");
    let checked = support::results_of(&run);
    assert_eq!(checked["valid"], serde_json::json!(true), "{checked}");
    assert!(run.join("history.jsonl").is_file());
    assert!(run.join("report.html").is_file(), "{output}");
    let test: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("test.json")).unwrap()).unwrap();
    let run_id = test["run_id"].as_str().unwrap().to_string();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let left = runtime.block_on(async {
        let (docker, _) = support::docker().await;
        leftovers(&docker, &run_id).await
    });
    assert_eq!(left, 0, "run {run_id} left containers or networks");
}

#[test]
fn a_run_piped_into_head_goes_on_to_its_verdict() {
    if docker_skipped() {
        return;
    }
    support::node_image();
    let (_keep, results) = results_dir();
    // As a user types it: `splitbrain run ... 2>&1 | head -2`, and the run's own exit code.
    let command = format!(
        "'{}' {} 2>&1 | head -2; exit ${{PIPESTATUS[0]}}",
        env!("CARGO_BIN_EXE_splitbrain"),
        control(&results).join(" ")
    );
    let out = Command::new("bash")
        .args(["-c", &command])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(shown.lines().count(), 2, "{shown}");
    assert_finished(&results, out.status, &shown);
}

#[test]
fn a_run_whose_stderr_is_a_full_disk_goes_on_to_its_verdict() {
    if docker_skipped() {
        return;
    }
    support::node_image();
    let (_keep, results) = results_dir();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = splitbrain()
        .args(control(&results))
        .stderr(full)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(stdout.contains("verdict  valid"), "{stdout}");
    assert_finished(&results, out.status, &stdout);
}

#[test]
fn a_run_whose_terminal_closes_goes_on_to_its_verdict() {
    if docker_skipped() {
        return;
    }
    support::node_image();
    let (_keep, results) = results_dir();
    let (mut terminal, child_side) = pseudo_terminal();
    let mut command = splitbrain();
    command.args(control(&results));
    for stream in 0..3 {
        let fd = child_side.try_clone().unwrap();
        match stream {
            0 => command.stdin(Stdio::from(fd)),
            1 => command.stdout(Stdio::from(fd)),
            _ => command.stderr(Stdio::from(fd)),
        };
    }
    // SAFETY: setsid and ioctl are async-signal-safe, as a pre_exec hook must be.
    unsafe {
        command.pre_exec(|| {
            // A session of its own, with the terminal as its controlling terminal, as a
            // shell gives the program it starts: the terminal's hangup goes to it.
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    drop(child_side);
    // Once the clients are running, the terminal goes away: its last descriptor closes.
    let mut seen = String::new();
    let mut buffer = [0u8; 4096];
    while !seen.contains("running") {
        match terminal.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buffer[..n])),
        }
    }
    assert!(seen.contains("running"), "{seen}");
    drop(terminal);
    let status = child.wait().unwrap();
    assert_finished(&results, status, &seen);
    let log = std::fs::read_to_string(results.join("latest/splitbrain.log")).unwrap();
    assert!(
        log.contains("SIGHUP"),
        "the run was told its terminal went away"
    );
}

/// A pseudo-terminal: the terminal's side (what a terminal emulator holds) and the program's.
fn pseudo_terminal() -> (std::fs::File, OwnedFd) {
    let (mut terminal, mut program) = (0, 0);
    // SAFETY: openpty writes two descriptors, which become owned here.
    let opened = unsafe {
        libc::openpty(
            &mut terminal,
            &mut program,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    // Neither may leak into the program: a terminal side it held open itself would never
    // hang up.
    for fd in [terminal, program] {
        // SAFETY: fcntl on a descriptor just opened.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: both descriptors were just opened and nothing else owns them.
    unsafe {
        (
            std::fs::File::from_raw_fd(terminal),
            OwnedFd::from_raw_fd(program),
        )
    }
}
