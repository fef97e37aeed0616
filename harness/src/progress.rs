//! Progress on stderr (with the time since start), mirrored into the run's log.
//!
//! On a terminal, a status line (what is going on right now) is redrawn in place under the
//! step lines; when stderr is a file or a CI log, status lines are printed now and then as
//! plain lines instead, so the log stays readable. `--quiet` keeps only errors and the
//! summary.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

static QUIET: AtomicBool = AtomicBool::new(false);
static SUMMARIES: AtomicBool = AtomicBool::new(true);
static FINDINGS_SHOWN: AtomicUsize = AtomicUsize::new(crate::cli::SHOWN_AFTER_A_RUN);
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

/// How many violations of each kind a run's summary spells out (`run --limit`).
pub fn set_findings_shown(limit: usize) {
    FINDINGS_SHOWN.store(limit, Ordering::Relaxed);
}

pub fn findings_shown() -> usize {
    FINDINGS_SHOWN.load(Ordering::Relaxed)
}

fn shown() -> bool {
    !QUIET.load(Ordering::Relaxed)
}

fn clear_status() {
    if STATUS_SHOWN.swap(false, Ordering::Relaxed) {
        stderr!("\r\x1b[2K");
    }
}

/// A step of the run, for the person watching.
pub fn step(message: &str) {
    if shown() {
        clear_status();
        stderrln!("[{:>6.1}s] {message}", start().elapsed().as_secs_f64());
    }
    tracing::info!("{message}");
}

/// A line of output from a tool the harness runs (debootstrap, docker build), shown as is:
/// for `images build`, which is asked for that output.
pub fn detail(line: &str) {
    let line = plain(line);
    if shown() {
        clear_status();
        stderrln!("           {line}");
    }
    tracing::debug!("{line}");
}

/// A line of output from a tool a run needed (an image build): into the run's log, and on a
/// terminal as the status line, redrawn in place; never a line of its own, so that a run's
/// progress stays a page of steps.
pub fn tool_output(line: &str) {
    let line = plain(line);
    tracing::debug!("{line}");
    if terminal() {
        status(&line.chars().take(90).collect::<String>());
    }
}

/// A tool's line without its terminal escape codes (colours, cursor moves) and carriage
/// returns, which mean nothing in a log file.
fn plain(line: &str) -> String {
    let mut plain = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            // CSI: ESC [ parameters, then a final letter.
            '\x1b' => {
                if chars.next() == Some('[') {
                    for c in chars.by_ref() {
                        if c.is_ascii_alphabetic() {
                            break;
                        }
                    }
                }
            }
            '\r' => {}
            c => plain.push(c),
        }
    }
    plain
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
        stderr!("\r\x1b[2K[{elapsed:>6.1}s] {message}");
        STATUS_SHOWN.store(true, Ordering::Relaxed);
    } else {
        stderrln!("[{elapsed:>6.1}s] {message}");
    }
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn a_tools_colours_and_carriage_returns_are_left_out() {
        assert_eq!(
            plain("\x1b[91mdebconf: delaying package configuration\x1b[0m\r"),
            "debconf: delaying package configuration"
        );
        assert_eq!(plain("Step 2/7 : RUN apt-get"), "Step 2/7 : RUN apt-get");
    }
}
