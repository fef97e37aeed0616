//! Installing what an adapter needs, once, into splitbrain's own cache, never into the
//! system: for a Python adapter, a virtual environment made from its pinned requirements.
//! An environment is named after the pins' content, so that a changed pin makes a new one.
//! It counts as installed once a marker file is written at the end, so that an install cut
//! short is made again from scratch; a lock file keeps two runs (a matrix's cells side by
//! side) from making it at once. It is made where it stays: a virtual environment's scripts
//! name its path, so one moved after it was made is broken.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Language, Library};

/// The file an environment holds once it is whole.
const INSTALLED: &str = ".splitbrain-installed";

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("reading {0}: {1}")]
    Unreadable(String, std::io::Error),
    #[error("installing {library}: `{command}` {why}")]
    Failed {
        library: String,
        command: String,
        why: String,
    },
}

/// splitbrain's cache: `SPLITBRAIN_CACHE`, or `splitbrain` in `XDG_CACHE_HOME` or in
/// `~/.cache`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SPLITBRAIN_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("splitbrain")
}

impl Library {
    /// Where its environment lives in `cache`.
    pub fn environment(&self, cache: &Path) -> Result<PathBuf, InstallError> {
        let pins = self.pins();
        let text = std::fs::read(&pins)
            .map_err(|e| InstallError::Unreadable(pins.display().to_string(), e))?;
        // FNV-1a: a hash that stays the same across Rust versions, as a cache's names must.
        let hash = text.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        Ok(cache
            .join("adapters")
            .join(format!("{}-{:08x}", self.name, hash as u32)))
    }

    /// The command line that runs the adapter from its environment in `cache`.
    pub fn command(&self, cache: &Path) -> Result<String, InstallError> {
        let environment = self.environment(cache)?;
        let adapter = std::path::absolute(self.adapter())
            .map_err(|e| InstallError::Unreadable(self.adapter().display().to_string(), e))?;
        Ok(match self.manifest.language {
            Language::Python => format!(
                "{} {}",
                quoted(&environment.join("bin").join("python3")),
                quoted(&adapter)
            ),
        })
    }

    pub fn is_installed(&self, cache: &Path) -> bool {
        self.environment(cache)
            .is_ok_and(|dir| dir.join(INSTALLED).is_file())
    }

    /// Installs what the adapter needs into `cache`, unless it is there already; each line
    /// of the installers' output goes to `show`.
    pub fn install(&self, cache: &Path, show: &mut dyn FnMut(&str)) -> Result<(), InstallError> {
        let environment = self.environment(cache)?;
        let unwritable = |e| InstallError::Unreadable(cache.display().to_string(), e);
        std::fs::create_dir_all(environment.parent().unwrap_or(cache)).map_err(unwritable)?;
        // Held until this returns: another run installing the same waits, then finds it done.
        let lock = File::create(environment.with_extension("lock")).map_err(unwritable)?;
        lock.lock().map_err(unwritable)?;
        if environment.join(INSTALLED).is_file() {
            return Ok(());
        }
        // What an install cut short left.
        let _ = std::fs::remove_dir_all(&environment);
        let made = match self.manifest.language {
            Language::Python => self.python_environment(&environment, show),
        }
        .and_then(|()| {
            File::create(environment.join(INSTALLED))
                .map(drop)
                .map_err(unwritable)
        });
        if made.is_err() {
            let _ = std::fs::remove_dir_all(&environment);
        }
        made
    }

    fn python_environment(
        &self,
        dir: &Path,
        show: &mut dyn FnMut(&str),
    ) -> Result<(), InstallError> {
        let pins = self.pins();
        self.step(Command::new("python3").arg("-m").arg("venv").arg(dir), show)?;
        self.step(
            Command::new(dir.join("bin").join("pip"))
                .args(["install", "--disable-pip-version-check", "--no-input", "-r"])
                .arg(&pins),
            show,
        )
    }

    /// Runs one step of an install, its output shown line by line.
    fn step(&self, command: &mut Command, show: &mut dyn FnMut(&str)) -> Result<(), InstallError> {
        let described = format!(
            "{} {}",
            command.get_program().to_string_lossy(),
            command
                .get_args()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        );
        let failed = |why: String| InstallError::Failed {
            library: self.name.clone(),
            command: described.clone(),
            why,
        };
        let output = command
            .output()
            .map_err(|e| failed(format!("could not start: {e}")))?;
        let text =
            String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
        for line in text.lines() {
            show(line);
        }
        if output.status.success() {
            return Ok(());
        }
        let last: Vec<&str> = text.lines().rev().take(3).collect();
        Err(failed(format!(
            "failed ({}): {}",
            output.status,
            last.into_iter().rev().collect::<Vec<_>>().join(" / ")
        )))
    }
}

/// A path as `sh -c` reads it back.
fn quoted(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./".contains(c);
    if text.chars().all(plain) {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
