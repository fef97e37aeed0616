//! Options that only some deployments take (a Sentinel quorum, a cluster's replicas, Redis's
//! append-only file), declared by the topologies that take them ([`super::Topology::settings`]):
//! the harness makes each a `splitbrain run` option and a `test.json` key, and refuses one
//! given to a deployment that does not take it.

use std::collections::BTreeMap;
use std::time::Duration;

/// One such option, as a topology declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// Its key in `test.json` (`down_after`); its flag is the same with dashes
    /// (`--down-after`).
    pub id: &'static str,
    /// One line for `--help`.
    pub help: &'static str,
    /// The values it takes.
    pub kind: Kind,
    /// Its value where the run does not give one.
    pub default: Value,
}

/// The values a setting takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number, at least `least`.
    Count {
        least: usize,
    },
    Duration,
    /// One of these names.
    Choice(&'static [&'static str]),
}

/// A setting's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    Count(usize),
    Duration(Duration),
    Choice(&'static str),
}

impl Setting {
    /// The flag a user types: `--down-after` without its dashes.
    pub fn flag(&self) -> String {
        self.id.replace('_', "-")
    }
}

/// The settings a run was given, by id: a setting not given has its declared default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings(BTreeMap<&'static str, Value>);

impl Settings {
    pub fn set(&mut self, setting: &Setting, value: Value) {
        self.0.insert(setting.id, value);
    }

    /// The value of `setting`: the one given, or its default.
    pub fn get(&self, setting: &Setting) -> Value {
        self.0.get(setting.id).copied().unwrap_or(setting.default)
    }

    /// A count setting's value (its default, should the value given be of another kind).
    pub fn count(&self, setting: &Setting) -> usize {
        match (self.get(setting), setting.default) {
            (Value::Count(n), _) | (_, Value::Count(n)) => n,
            _ => panic!("{} is declared a count", setting.id),
        }
    }

    /// A duration setting's value.
    pub fn duration(&self, setting: &Setting) -> Duration {
        match (self.get(setting), setting.default) {
            (Value::Duration(d), _) | (_, Value::Duration(d)) => d,
            _ => panic!("{} is declared a duration", setting.id),
        }
    }

    /// A choice setting's value: one of its names.
    pub fn choice(&self, setting: &Setting) -> &'static str {
        match (self.get(setting), setting.default) {
            (Value::Choice(name), _) | (_, Value::Choice(name)) => name,
            _ => panic!("{} is declared a choice", setting.id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUORUM: Setting = Setting {
        id: "quorum",
        help: "how many must agree",
        kind: Kind::Count { least: 1 },
        default: Value::Count(2),
    };

    #[test]
    fn a_setting_not_given_has_its_default() {
        let mut settings = Settings::default();
        assert_eq!(settings.count(&QUORUM), 2);
        settings.set(&QUORUM, Value::Count(3));
        assert_eq!(settings.count(&QUORUM), 3);
        assert_eq!(QUORUM.flag(), "quorum");
    }
}
