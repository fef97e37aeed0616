//! Progress on stderr (with the time since start), mirrored into the run's log.
//!
//! On a terminal, a status line (what is going on right now) is redrawn in place under the
//! step lines; when stderr is a file or a CI log, status lines are printed now and then as
//! plain lines instead, so the log stays readable. `--quiet` keeps only errors and the
//! summary.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

static QUIET: AtomicBool = AtomicBool::new(false);
static SUMMARIES: AtomicBool = AtomicBool::new(true);
/// Whether a status line is on screen, to be cleared before the next line.
static STATUS_SHOWN: AtomicBool = AtomicBool::new(false);

fn start() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

fn terminal() -> bool {
    static TERMINAL: OnceLock<bool> = OnceLock::new();
    *TERMINAL.get_or_init(|| std::io::stderr().is_terminal())
}

/// Prints nothing but errors and the summary from now on.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether each run prints its summary: `shrink` runs many, and says what they got itself.
pub fn set_summaries(shown: bool) {
    SUMMARIES.store(shown, Ordering::Relaxed);
}

pub fn summaries() -> bool {
    SUMMARIES.load(Ordering::Relaxed)
}

fn shown() -> bool {
    !QUIET.load(Ordering::Relaxed)
}

fn clear_status() {
    if STATUS_SHOWN.swap(false, Ordering::Relaxed) {
        eprint!("\r\x1b[2K");
    }
}

/// A step of the run, for the person watching.
pub fn step(message: &str) {
    if shown() {
        clear_status();
        eprintln!("[{:>6.1}s] {message}", start().elapsed().as_secs_f64());
    }
    tracing::info!("{message}");
}

/// A line of output from a tool the harness runs (debootstrap, docker build).
pub fn detail(line: &str) {
    if shown() {
        clear_status();
        eprintln!("           {line}");
    }
    tracing::debug!("{line}");
}

/// How often a long step should call [`status`].
pub fn status_interval() -> Duration {
    if terminal() {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(10)
    }
}

/// What a long step is doing right now: redrawn in place on a terminal, a plain line
/// otherwise. Not mirrored into the log, which has the steps.
pub fn status(message: &str) {
    if !shown() {
        return;
    }
    let elapsed = start().elapsed().as_secs_f64();
    if terminal() {
        eprint!("\r\x1b[2K[{elapsed:>6.1}s] {message}");
        STATUS_SHOWN.store(true, Ordering::Relaxed);
    } else {
        eprintln!("[{elapsed:>6.1}s] {message}");
    }
}
