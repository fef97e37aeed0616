//! Who owns a run's containers: the splitbrain process that made them. Every container and
//! network carries its owner as the label `splitbrain.owner=<host>/<pid>/<start>`, and every
//! program the harness starts carries it as `SPLITBRAIN_OWNER` in its environment, so that
//! the reaper can remove what a dead harness left, and `splitbrain clean` can tell a live
//! run (left alone) from an orphan (removed).

use std::sync::OnceLock;

/// The label naming the process that owns a container or network.
pub const OWNER_LABEL: &str = "splitbrain.owner";

/// The environment variable that marks a program started by a harness process.
pub const OWNER_ENV: &str = "SPLITBRAIN_OWNER";

/// A process, named so that a reused pid is not taken for it: the host, the pid, and the
/// time the process started (in clock ticks since boot, from `/proc/<pid>/stat`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    host: String,
    pid: u32,
    start: u64,
}

/// Whether an owner still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    Gone,
    /// On another machine sharing this Docker engine: this one cannot tell.
    Elsewhere,
}

impl Owner {
    /// This process.
    pub fn this_process() -> &'static Owner {
        static THIS: OnceLock<Owner> = OnceLock::new();
        THIS.get_or_init(|| {
            let pid = std::process::id();
            Owner {
                host: host_name(),
                pid,
                start: start_ticks(pid).unwrap_or_default(),
            }
        })
    }

    /// The label's value: `<host>/<pid>/<start>`.
    pub fn label(&self) -> String {
        format!("{}/{}/{}", self.host, self.pid, self.start)
    }

    pub fn parse(label: &str) -> Option<Owner> {
        let mut parts = label.rsplitn(3, '/');
        let start = parts.next()?.parse().ok()?;
        let pid = parts.next()?.parse().ok()?;
        let host = parts.next()?.to_string();
        Some(Owner { host, pid, start })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn liveness(&self) -> Liveness {
        if self.host != host_name() {
            Liveness::Elsewhere
        } else if start_ticks(self.pid) == Some(self.start) {
            Liveness::Alive
        } else {
            Liveness::Gone
        }
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// Field 22 of `/proc/<pid>/stat`: when the process started. The command name (field 2) is
/// in parentheses and may hold spaces, so fields are counted after its closing one.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// Every owner named in the environment of a running program, with its programs.
pub fn program_owners() -> Vec<(String, Vec<u32>)> {
    let prefix = format!("{OWNER_ENV}=");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut owners: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
    for pid in entries.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let owner = environ
            .split(|b| *b == 0)
            .find_map(|var| var.strip_prefix(prefix.as_bytes()));
        if let Some(owner) = owner.and_then(|o| std::str::from_utf8(o).ok()) {
            owners.entry(owner.to_string()).or_default().push(pid);
        }
    }
    owners.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_its_label_reads_back() {
        let me = Owner::this_process();
        assert!(me.start > 0, "{me:?}");
        assert_eq!(Owner::parse(&me.label()).as_ref(), Some(me));
        assert_eq!(me.liveness(), Liveness::Alive);
    }

    #[test]
    fn a_reused_pid_or_a_dead_one_is_gone_and_another_host_is_unknown() {
        let me = Owner::this_process();
        let reused = Owner {
            start: me.start + 1,
            ..me.clone()
        };
        assert_eq!(reused.liveness(), Liveness::Gone);
        let elsewhere = Owner {
            host: format!("{}-other", me.host),
            ..me.clone()
        };
        assert_eq!(elsewhere.liveness(), Liveness::Elsewhere);
        assert_eq!(Owner::parse("a/b/c"), None);
        assert_eq!(
            Owner::parse("my/host/12/34").map(|o| o.host),
            Some("my/host".into())
        );
    }
}
