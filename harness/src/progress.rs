//! Progress lines on stderr (with the time since start), mirrored into the run's log.

use std::sync::OnceLock;
use std::time::Instant;

fn start() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// A step of the run, for the person watching.
pub fn step(message: &str) {
    eprintln!("[{:>6.1}s] {message}", start().elapsed().as_secs_f64());
    tracing::info!("{message}");
}

/// A line of output from a tool the harness runs (debootstrap, docker build).
pub fn detail(line: &str) {
    eprintln!("           {line}");
    tracing::debug!("{line}");
}
