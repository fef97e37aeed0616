//! Installing what an adapter needs, once, into splitbrain's own cache, never into the
//! system: for a Python adapter, a virtual environment made from its pinned requirements; for
//! a Rust adapter, its build; for a Java adapter, Debian's packages of the library (the one
//! thing installed into the system, through apt, as root only, and said so).
//! An environment is named after the pins' content, so that a changed pin makes a new one.
//! It counts as installed once a marker file is written at the end, so that an install cut
//! short is made again from scratch; a lock file keeps two runs (a matrix's cells side by
//! side) from making it at once. It is made where it stays: a virtual environment's scripts
//! name its path, so one moved after it was made is broken.

use std::fs::File;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

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
    #[error("installing {0} was interrupted; it will start again from scratch next time")]
    Interrupted(String),
}

/// Where an install says what its tools print, and whether it should stop (Ctrl-C): asked
/// while each tool runs, which is then killed with everything it started.
pub struct Watch<'a> {
    pub show: &'a mut dyn FnMut(&str),
    pub stop: &'a dyn Fn() -> bool,
}

/// How often a running tool is looked at for its end or a stop.
const POLL: Duration = Duration::from_millis(100);

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
        // FNV-1a: a hash that stays the same across Rust versions, as a cache's names must.
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        for pins in self.pins() {
            let text = std::fs::read(&pins)
                .map_err(|e| InstallError::Unreadable(pins.display().to_string(), e))?;
            hash = text.iter().fold(hash, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        }
        Ok(cache
            .join("adapters")
            .join(format!("{}-{:08x}", self.name, hash as u32)))
    }

    /// The command line that runs the adapter from its environment in `cache`, followed by
    /// its variant's arguments.
    pub fn command(&self, cache: &Path) -> Result<String, InstallError> {
        let environment = self.environment(cache)?;
        let adapter = std::path::absolute(self.adapter())
            .map_err(|e| InstallError::Unreadable(self.adapter().display().to_string(), e))?;
        let program = match &self.manifest.language {
            Language::Python => format!(
                "{} {}",
                quoted(&environment.join("bin").join("python3")),
                quoted(&adapter)
            ),
            Language::Rust => quoted(&rust_binary(&environment)),
            // Compiled at install: a JVM that compiles its source at every start takes seconds
            // of a busy machine's cores, five clients at once. C1 alone and the serial
            // collector halve what is left of a short-lived client's start.
            Language::Java => {
                let mut classpath = self
                    .java_setup()
                    .map_or(Vec::new(), |java| java.classpath.clone());
                classpath.push(java_classes(&environment).display().to_string());
                let class = self
                    .adapter()
                    .file_stem()
                    .map(|stem| stem.to_string_lossy().to_string())
                    .unwrap_or_default();
                format!(
                    "java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp {} {class}",
                    quoted(Path::new(&classpath.join(":")))
                )
            }
        };
        Ok(std::iter::once(program)
            .chain(self.variant_args().iter().map(|a| quoted(Path::new(a))))
            .collect::<Vec<_>>()
            .join(" "))
    }

    pub fn is_installed(&self, cache: &Path) -> bool {
        let jars_there = self
            .java_setup()
            .is_none_or(|java| java.classpath.iter().all(|jar| Path::new(jar).is_file()));
        jars_there
            && self
                .environment(cache)
                .is_ok_and(|dir| dir.join(INSTALLED).is_file())
    }

    /// Installs what the adapter needs into `cache`, unless it is there already; each line
    /// of the installers' output goes to `show`.
    pub fn install(&self, cache: &Path, show: &mut Watch) -> Result<(), InstallError> {
        let environment = self.environment(cache)?;
        let unwritable = |e| InstallError::Unreadable(cache.display().to_string(), e);
        std::fs::create_dir_all(environment.parent().unwrap_or(cache)).map_err(unwritable)?;
        // Held until this returns: another run installing the same waits, then finds it done.
        let lock = File::create(environment.with_extension("lock")).map_err(unwritable)?;
        lock.lock().map_err(unwritable)?;
        if self.is_installed(cache) {
            return Ok(());
        }
        // What an install cut short left.
        let _ = std::fs::remove_dir_all(&environment);
        let made = match self.manifest.language {
            Language::Python => self.python_environment(&environment, show),
            Language::Rust => self.rust_build(&environment, show),
            Language::Java => self.java_packages(&environment, show),
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

    fn python_environment(&self, dir: &Path, show: &mut Watch) -> Result<(), InstallError> {
        self.step(Command::new("python3").arg("-m").arg("venv").arg(dir), show)?;
        self.step(
            Command::new(dir.join("bin").join("pip"))
                .args(["install", "--disable-pip-version-check", "--no-input", "-r"])
                .arg(self.dir.join("requirements.txt")),
            show,
        )
    }

    /// `cargo build` of the adapter's own workspace, its lock file held to, into `dir`.
    fn rust_build(&self, dir: &Path, show: &mut Watch) -> Result<(), InstallError> {
        self.step(
            Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
                .args(["build", "--release", "--locked", "--manifest-path"])
                .arg(self.dir.join("Cargo.toml"))
                .arg("--target-dir")
                .arg(dir.join("target")),
            show,
        )?;
        let binary = rust_binary(dir);
        match binary.is_file() {
            true => Ok(()),
            false => Err(InstallError::Failed {
                library: self.name.clone(),
                command: "cargo build".into(),
                why: format!(
                    "made no {}: its Cargo.toml must name its binary `adapter`",
                    binary.display()
                ),
            }),
        }
    }

    /// The Debian packages the adapter's `[java]` table names, through apt where one is
    /// missing and this is root; otherwise the command that installs them, to run as root.
    fn java_packages(&self, dir: &Path, show: &mut Watch) -> Result<(), InstallError> {
        let failed = |command: String, why: String| InstallError::Failed {
            library: self.name.clone(),
            command,
            why,
        };
        let java = self.java_setup().ok_or_else(|| {
            failed(
                "reading library.toml".into(),
                "found no [java] table: name its debian-packages and classpath".into(),
            )
        })?;
        let missing: Vec<&String> = java
            .debian_packages
            .iter()
            .filter(|package| !debian_package_installed(package))
            .collect();
        if !missing.is_empty() {
            let words: Vec<&str> = missing.iter().map(|p| p.as_str()).collect();
            let install = format!(
                "apt-get install -y --no-install-recommends {}",
                words.join(" ")
            );
            if !is_root() {
                return Err(failed(
                    install,
                    "is needed, and only root can run it: run it as root (sudo), then again".into(),
                ));
            }
            // A fresh machine's package lists may be empty: refresh them once, then install.
            if self
                .step(Command::new("sh").arg("-c").arg(&install), show)
                .is_err()
            {
                self.step(Command::new("apt-get").arg("update"), show)?;
                self.step(Command::new("sh").arg("-c").arg(&install), show)?;
            }
        }
        if let Some(jar) = java.classpath.iter().find(|jar| !Path::new(jar).is_file()) {
            return Err(failed(
                "reading its classpath".into(),
                format!("found no {jar}, which library.toml's [java] classpath names"),
            ));
        }
        self.step(
            Command::new("javac")
                .arg("-d")
                .arg(java_classes(dir))
                .arg("-cp")
                .arg(java.classpath.join(":"))
                .arg(self.adapter()),
            show,
        )
    }

    fn java_setup(&self) -> Option<&crate::Java> {
        self.manifest.java.as_ref()
    }

    /// Runs one step of an install, its output shown line by line.
    /// Runs one tool in a process group of its own, showing its output once it ends; a stop
    /// asked meanwhile kills the group (pip's or cargo's own children too).
    fn step(&self, command: &mut Command, watch: &mut Watch) -> Result<(), InstallError> {
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
        if (watch.stop)() {
            return Err(InstallError::Interrupted(self.name.clone()));
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| failed(format!("could not start: {e}")))?;
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut text = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut text);
                }
                text
            })
        };
        let stdout = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let stderr = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if (watch.stop)() => {
                    // SAFETY: killpg only sends a signal; a group that is gone gives ESRCH.
                    unsafe {
                        libc::killpg(child.id() as libc::pid_t, libc::SIGKILL);
                    }
                    let _ = child.wait();
                    return Err(InstallError::Interrupted(self.name.clone()));
                }
                Ok(None) => std::thread::sleep(POLL),
                Err(e) => return Err(failed(format!("could not be waited for: {e}"))),
            }
        };
        let (stdout, stderr) = (stdout.join(), stderr.join());
        let text = String::from_utf8_lossy(&stdout.unwrap_or_default()).into_owned()
            + &String::from_utf8_lossy(&stderr.unwrap_or_default());
        for line in text.lines() {
            (watch.show)(line);
        }
        if status.success() {
            return Ok(());
        }
        let last: Vec<&str> = text.lines().rev().take(3).collect();
        Err(failed(format!(
            "failed ({status}): {}",
            last.into_iter().rev().collect::<Vec<_>>().join(" / ")
        )))
    }
}

/// Where a Rust adapter's binary is built in its environment `dir`.
fn rust_binary(dir: &Path) -> PathBuf {
    dir.join("target").join("release").join("adapter")
}

/// Where a Java adapter's compiled classes are in its environment `dir`.
fn java_classes(dir: &Path) -> PathBuf {
    dir.join("classes")
}

fn debian_package_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .is_ok_and(|out| out.stdout == b"install ok installed")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
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

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::find;

    /// A Ctrl-C during an install's tool kills the tool and whatever it started, at once,
    /// and says the install was interrupted; a tool that ends by itself has its output shown.
    #[test]
    fn a_stop_asked_while_a_tool_runs_kills_its_whole_group() {
        let adapters = Path::new(env!("CARGO_MANIFEST_DIR")).join("../adapters");
        let library = find(&adapters, "redis-py").unwrap();
        let pid_file = tempfile::NamedTempFile::new().unwrap();
        let started = Instant::now();
        let stop = || started.elapsed() > Duration::from_millis(300);
        let mut shown = Vec::new();
        let mut show = |line: &str| shown.push(line.to_string());
        let mut watch = Watch {
            show: &mut show,
            stop: &stop,
        };
        // The tool's child, in the background, writes its pid and sleeps on.
        let script = format!("sleep 30 & echo $! > {}; wait", pid_file.path().display());
        let stopped = library.step(Command::new("sh").arg("-c").arg(script), &mut watch);
        assert!(
            matches!(stopped, Err(InstallError::Interrupted(ref name)) if name == "redis-py"),
            "{stopped:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        let child: u32 = std::fs::read_to_string(pid_file.path())
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        // Gone, or a zombie left for whoever reaps orphans here.
        let state = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        let running = state
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'));
        assert!(!running, "the tool's own child {child} was left running");

        let never = || false;
        let mut watch = Watch {
            show: &mut show,
            stop: &never,
        };
        library
            .step(Command::new("sh").arg("-c").arg("echo made"), &mut watch)
            .unwrap();
        assert_eq!(shown, vec!["made".to_string()]);
    }
}
