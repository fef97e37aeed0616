//! What this machine and this harness can take, checked before anything starts. Each limit
//! is computed from the machine or from what the harness is made of, and its error says the
//! limit and why.

use std::time::Duration;

/// The longest duration any option takes: tokio's timers end at about two years, and a clock
/// jump must stay within what a node's clock shows (signed 64-bit nanoseconds since 1970).
pub const LONGEST: Duration = Duration::from_secs(365 * 24 * 3600);

/// The longest run: its history is checked in memory when it ends, and a day of the default
/// run already makes a history of several GB.
pub const LONGEST_RUN: Duration = Duration::from_secs(24 * 3600);

/// The shortest quiet time between faults: starting and healing a fault goes through the
/// Docker API or a `docker exec`, which takes tens to hundreds of milliseconds (a kill's
/// restart took 21 to 282 ms on the CI machine), so a shorter interval would not be one.
pub const SHORTEST_INTERVAL: Duration = Duration::from_millis(100);

/// Descriptors kept for the harness itself: the Docker connection, the history, logs, the
/// runtime.
const OWN_DESCRIPTORS: u64 = 128;

/// Memory one client worker's connection takes (read and write buffers of a Redis
/// connection and its task).
const PER_CONNECTION: u64 = 64 << 10;

/// Memory an `exec:` client's program takes: a Python interpreter with redis-py is about
/// 25 MiB resident; twice that leaves room for bigger libraries.
const PER_PROGRAM: u64 = 50 << 20;

/// Raises this process's soft limit on open files to its hard limit, as servers do: the
/// soft default (often 1024) is an old compatibility value, the hard limit is the machine's.
pub fn raise_open_files() {
    // SAFETY: getrlimit and setrlimit write and read only the struct passed to them.
    unsafe {
        let mut limit = std::mem::zeroed::<libc::rlimit>();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

fn open_files() -> u64 {
    // SAFETY: as above.
    unsafe {
        let mut limit = std::mem::zeroed::<libc::rlimit>();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur
        } else {
            1024
        }
    }
}

fn available_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib << 10)
        })
        .unwrap_or(u64::MAX)
}

/// The most client workers this machine can run, for workers that each open `connections`
/// connections (each a descriptor, two through the link proxies) and, for `exec:` clients,
/// start a program (three pipes); and why it is that many.
pub fn most_workers(connections: u64, program: bool) -> (u64, String) {
    let descriptors_each = connections.saturating_add(if program { 3 } else { 0 });
    let memory_each = connections
        .saturating_mul(PER_CONNECTION)
        .saturating_add(if program { PER_PROGRAM } else { 0 });
    let by_descriptors = open_files().saturating_sub(OWN_DESCRIPTORS) / descriptors_each.max(1);
    let by_memory = available_memory() / memory_each.max(1);
    if by_descriptors <= by_memory {
        (
            by_descriptors,
            format!(
                "each worker holds {descriptors_each} open files and this process may open {} \
                 (`ulimit -n`)",
                open_files()
            ),
        )
    } else {
        (
            by_memory,
            format!(
                "each worker takes about {} MiB and {} MiB of memory is available",
                (memory_each >> 20).max(1),
                available_memory() >> 20
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_allows_some_workers_and_fewer_with_programs() {
        let (plain, why) = most_workers(5, false);
        assert!(plain >= 100, "{plain}: {why}");
        let (programs, _) = most_workers(5, true);
        assert!(programs < plain);
        assert!(most_workers(u64::MAX / 2, true).0 == 0);
    }
}
