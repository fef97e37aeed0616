//! How `test.json` names what a spec holds: a deployment, server, workload, fault or client
//! by the name `run` took it by, durations as whole milliseconds.

use serde::{Deserialize, Serialize};
use splitbrain_compose::{System, Topology};
use splitbrain_libraries::Library;
use splitbrain_nemesis::find_fault;
use splitbrain_nemesis::Fault;
use splitbrain_systems::{find_server, find_topology};
use splitbrain_workloads::workload::{find_workload, WorkloadKind};
use splitbrain_workloads::{ClientKind, EXEC_PREFIX};

/// A run's lock client: its kind and, for an `exec:` client, the command it runs; for a
/// library of the catalog (`lib:NAME`), the library, whose adapter the command runs.
/// `test.json` stores it as `--client` took it.
#[derive(Clone)]
pub struct ChosenClient {
    pub kind: &'static ClientKind,
    pub command: Option<String>,
    pub library: Option<Box<Library>>,
}

impl std::fmt::Display for ChosenClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.library, &self.command) {
            (Some(library), _) => f.write_str(&library.client_name()),
            (None, Some(command)) => write!(f, "{EXEC_PREFIX}{command}"),
            (None, None) => f.write_str(self.kind.name),
        }
    }
}

impl std::fmt::Debug for ChosenClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl Serialize for ChosenClient {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ChosenClient {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ChosenClient, D::Error> {
        let arg = String::deserialize(d)?;
        super::parse::client(&arg).map_err(serde::de::Error::custom)
    }
}

/// The faults of `--nemesis`: `test.json` keeps the list as `nemesis`, and whether it was
/// `all` as `skip_unsupported` (faults this machine cannot inject are then skipped, not
/// refused).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Faults {
    #[serde(rename = "nemesis", with = "by_names")]
    pub chosen: Vec<&'static dyn Fault>,
    #[serde(rename = "skip_unsupported")]
    pub every: bool,
}

impl super::part::Flag for Faults {
    fn arg(&self) -> Option<String> {
        let names: Vec<&str> = self.chosen.iter().map(|f| f.name()).collect();
        Some(match (self.every, names.is_empty()) {
            (true, _) => "all".to_string(),
            (false, true) => "none".to_string(),
            (false, false) => names.join(","),
        })
    }
}

/// How Redlock asks its nodes: `test.json` keeps it as `sequential`, true or false.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Acquire {
    #[default]
    Parallel,
    Sequential,
}

impl Acquire {
    pub fn name(self) -> &'static str {
        match self {
            Acquire::Parallel => "parallel",
            Acquire::Sequential => "sequential",
        }
    }
}

impl super::part::Flag for Acquire {
    fn arg(&self) -> Option<String> {
        Some(self.name().to_string())
    }
}

pub(super) mod sequential {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Acquire;

    pub fn serialize<S: Serializer>(acquire: &Acquire, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(*acquire == Acquire::Sequential)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Acquire, D::Error> {
        Ok(match bool::deserialize(d)? {
            true => Acquire::Sequential,
            false => Acquire::Parallel,
        })
    }
}

/// A kind users name on the command line (a deployment, a workload, a fault): a spec holds
/// what it is, and `test.json` its name.
pub(super) trait Named: 'static {
    /// What it is, for an error: `deployment`.
    const WHAT: &'static str;
    fn named(&self) -> &'static str;
    fn by_name(name: &str) -> Option<&'static Self>;
}

impl Named for dyn System {
    const WHAT: &'static str = "server";
    fn named(&self) -> &'static str {
        self.name()
    }
    fn by_name(name: &str) -> Option<&'static Self> {
        find_server(name).map(|(_, server)| server)
    }
}

impl Named for dyn Topology {
    const WHAT: &'static str = "deployment";
    fn named(&self) -> &'static str {
        self.name()
    }
    fn by_name(name: &str) -> Option<&'static Self> {
        find_topology(name).map(|(_, topology)| topology)
    }
}

impl Named for WorkloadKind {
    const WHAT: &'static str = "workload";
    fn named(&self) -> &'static str {
        self.name
    }
    fn by_name(name: &str) -> Option<&'static Self> {
        find_workload(name)
    }
}

impl Named for dyn Fault {
    const WHAT: &'static str = "fault";
    fn named(&self) -> &'static str {
        self.name()
    }
    fn by_name(name: &str) -> Option<&'static Self> {
        find_fault(name)
    }
}

/// A [`Named`] kind in JSON: its name.
pub(super) mod by_name {
    use serde::{de, Deserialize, Deserializer, Serializer};

    use super::Named;

    pub fn serialize<T: Named + ?Sized, S: Serializer>(
        kind: &&'static T,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_str(kind.named())
    }

    pub fn deserialize<'de, T: Named + ?Sized, D: Deserializer<'de>>(
        d: D,
    ) -> Result<&'static T, D::Error> {
        let name = String::deserialize(d)?;
        T::by_name(&name).ok_or_else(|| de::Error::custom(format!("unknown {} `{name}`", T::WHAT)))
    }
}

/// An optional [`Named`] kind in JSON: its name, or nothing.
pub(super) mod opt_by_name {
    use serde::{de, Deserialize, Deserializer, Serializer};

    use super::Named;

    pub fn serialize<T: Named + ?Sized, S: Serializer>(
        kind: &Option<&'static T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match kind {
            Some(kind) => s.serialize_some(kind.named()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: Named + ?Sized, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<&'static T>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(name) => T::by_name(&name)
                .map(Some)
                .ok_or_else(|| de::Error::custom(format!("unknown {} `{name}`", T::WHAT))),
            None => Ok(None),
        }
    }
}

/// A list of [`Named`] kinds in JSON: their names.
pub(super) mod by_names {
    use serde::ser::SerializeSeq;
    use serde::{de, Deserialize, Deserializer, Serializer};

    use super::Named;

    pub fn serialize<T: Named + ?Sized, S: Serializer>(
        kinds: &[&'static T],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(kinds.len()))?;
        for kind in kinds {
            seq.serialize_element(kind.named())?;
        }
        seq.end()
    }

    pub fn deserialize<'de, T: Named + ?Sized, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<&'static T>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|name| {
                T::by_name(name)
                    .ok_or_else(|| de::Error::custom(format!("unknown {} `{name}`", T::WHAT)))
            })
            .collect()
    }
}

/// Durations as whole milliseconds in JSON.
pub(super) mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

pub(super) mod opt_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}
