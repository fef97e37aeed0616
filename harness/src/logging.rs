//! Where tracing goes: the run's `splitbrain.log`, or stderr for warnings elsewhere.

use std::path::Path;
use std::sync::Mutex;

use anyhow::Context;
use tracing_subscriber::EnvFilter;

/// Sends everything at info and above (or as `RUST_LOG` says) to the run's log file.
pub fn to_file(path: &Path) -> anyhow::Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("debug,bollard=info,hyper=info,hyper_util=info"));
    // A second run in one process (tests) keeps the first subscriber; that is fine.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .try_init();
    Ok(())
}

/// Warnings and errors to stderr, for commands without a run folder.
pub fn to_stderr() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
