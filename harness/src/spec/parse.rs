//! What a command line's words become: durations, counts, and the names of deployments,
//! servers, clients, workloads and faults, each read once, by clap, with a sentence naming
//! what would be right.

use std::time::Duration;

use splitbrain_checker::explain::Cause;
use splitbrain_compose::{System, Topology};
use splitbrain_libraries::install::cache_dir;
use splitbrain_libraries::{adapters_dir, LIB_PREFIX};
use splitbrain_nemesis::{all_faults, find_fault, FAULTS};
use splitbrain_systems::{find_client, find_server, find_topology};
use splitbrain_workloads::workload::{find_workload, WorkloadKind, WORKLOADS};
use splitbrain_workloads::{EXEC, EXEC_PREFIX};

use super::limits::Causes;
use super::names::{Acquire, ChosenClient, Faults};
use crate::script::Script;

/// Parses `renewal-stopped,zombie`: causes as results.json names them.
pub fn causes(text: &str) -> Result<Causes, String> {
    let mut causes = Vec::new();
    for key in text.split(',').map(str::trim) {
        let cause = Cause::from_key(key).ok_or_else(|| {
            let known: Vec<String> = Cause::ALL.into_iter().map(Cause::key).collect();
            format!("unknown cause `{key}`; choose from: {}", known.join(", "))
        })?;
        if !causes.contains(&cause) {
            causes.push(cause);
        }
    }
    Ok(Causes(causes))
}

/// Parses a seed: a whole number, as `test.json` stores it.
pub fn seed(text: &str) -> Result<u64, String> {
    text.trim().parse().map_err(|_| {
        format!(
            "`{text}` is not a seed: write a whole number from 0 to {}, like 42 (a run's seed \
             is printed and stored in its test.json)",
            u64::MAX
        )
    })
}

/// Parses `500ms`, `2s`, `1m`, `1h30m`.
pub fn duration(text: &str) -> Result<Duration, String> {
    if text.trim_start().starts_with('-') {
        return Err(format!(
            "`{text}` is negative; durations must be positive, like 2s"
        ));
    }
    let parsed = humantime::parse_duration(text)
        .map_err(|e| format!("`{text}` is not a duration ({e}); write it like 500ms, 2s or 1m"))?;
    if parsed > crate::limits::LONGEST {
        return Err(format!(
            "`{text}` is longer than a year, the longest duration splitbrain takes (its timers \
             and the history's nanosecond times are not made for more)"
        ));
    }
    Ok(parsed)
}

/// A positive whole number.
pub fn count(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("`{text}` is not a positive whole number")),
    }
}

pub fn acquire(text: &str) -> Result<Acquire, String> {
    [Acquire::Parallel, Acquire::Sequential]
        .into_iter()
        .find(|a| a.name() == text)
        .ok_or_else(|| format!("`{text}`: choose parallel or sequential"))
}

pub fn deployment(text: &str) -> Result<&'static dyn Topology, String> {
    find_topology(text)
        .map(|(_, topology)| topology)
        .ok_or_else(|| {
            format!(
                "unknown deployment `{text}`; choose one of: {}",
                names(splitbrain_systems::topologies().map(|t| t.name()))
            )
        })
}

pub fn server(text: &str) -> Result<&'static dyn System, String> {
    find_server(text).map(|(_, server)| server).ok_or_else(|| {
        format!(
            "unknown server `{text}`; choose one of: {}",
            names(splitbrain_systems::servers().map(|s| s.name()))
        )
    })
}

/// A lock client: one of splitbrain's, `exec:<command>`, or `lib:<library>`, an adapter of
/// the catalog, run from its environment in splitbrain's cache.
pub fn client(text: &str) -> Result<ChosenClient, String> {
    if let Some(name) = text.strip_prefix(LIB_PREFIX) {
        let library =
            splitbrain_libraries::find(&adapters_dir(), name).map_err(|e| e.to_string())?;
        let command = library.command(&cache_dir()).map_err(|e| e.to_string())?;
        return Ok(ChosenClient {
            kind: &EXEC,
            command: Some(command),
            library: Some(Box::new(library)),
        });
    }
    let kind = find_client(text).ok_or_else(|| {
        format!(
            "unknown client `{text}`; choose one of: {}, {LIB_PREFIX}<library> (`splitbrain \
             library list`)",
            names(splitbrain_systems::clients().map(|c| c.name))
        )
    })?;
    Ok(ChosenClient {
        kind,
        command: text.strip_prefix(EXEC_PREFIX).map(str::to_string),
        library: None,
    })
}

pub fn workload(text: &str) -> Result<&'static WorkloadKind, String> {
    find_workload(text).ok_or_else(|| {
        format!(
            "unknown workload `{text}`; choose one of: {}",
            names(WORKLOADS.iter().map(|w| w.name))
        )
    })
}

/// `none`, `all`, or a comma-separated list of faults.
pub fn faults(text: &str) -> Result<Faults, String> {
    match text.trim() {
        "none" => return Ok(Faults::default()),
        "all" => {
            return Ok(Faults {
                chosen: all_faults(),
                every: true,
            })
        }
        _ => {}
    }
    let mut chosen = Faults::default();
    for name in text.split(',').map(str::trim) {
        let fault = find_fault(name).ok_or_else(|| {
            format!(
                "unknown fault `{name}`; choose none, all, or a comma-separated list of: {}",
                names(FAULTS.iter().map(|f| f.name()))
            )
        })?;
        if !chosen.chosen.iter().any(|f| f.name() == name) {
            chosen.chosen.push(fault);
        }
    }
    Ok(chosen)
}

pub fn script(text: &str) -> Result<Script, String> {
    Script::read(std::path::Path::new(text)).map_err(|e| e.to_string())
}

pub fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_people_write_them() {
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(duration("1m"), Ok(Duration::from_secs(60)));
        assert!(duration("-2s").unwrap_err().contains("negative"));
        assert!(duration("2 parsecs")
            .unwrap_err()
            .contains("not a duration"));
        assert!(duration("5").is_err(), "a bare number has no unit");
    }
}
