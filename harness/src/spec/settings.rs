//! The options only some deployments take, as the topologies declare them
//! (`Topology::settings`): each a `splitbrain run` flag and a `test.json` key, made here from
//! the registry, so that the harness names none of them.

use clap::{Arg, ArgMatches, Command, FromArgMatches};
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use splitbrain_compose::topology::setting::{Kind, Value as SettingValue};
use splitbrain_compose::topology::{Setting, Settings};

use super::parse;
use super::part::Value;

/// The settings a run was given: a part of its options, flattened into the topology's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSettings(pub Settings);

/// Every setting some deployment declares.
fn declared() -> Vec<&'static Setting> {
    splitbrain_systems::settings()
}

impl RunSettings {
    /// Each setting's value as the command line writes it, for [`super::part::Part`].
    pub fn values(&self) -> Vec<Value> {
        declared()
            .into_iter()
            .map(|setting| Value {
                id: setting.id,
                text: Some(text(self.0.get(setting))),
                shown: false,
            })
            .collect()
    }
}

/// A value as the command line writes it.
fn text(value: SettingValue) -> String {
    match value {
        SettingValue::Count(n) => n.to_string(),
        SettingValue::Duration(d) => humantime::format_duration(d).to_string(),
        SettingValue::Choice(name) => name.to_string(),
    }
}

/// A value as the command line gives it, checked against what the setting takes.
fn parse(setting: &'static Setting, text: &str) -> Result<SettingValue, String> {
    match setting.kind {
        Kind::Count { least: 0 } => text
            .parse()
            .map(SettingValue::Count)
            .map_err(|_| format!("`{text}` is not a whole number")),
        Kind::Count { least: 1 } => parse::count(text).map(SettingValue::Count),
        Kind::Count { least } => match text.parse() {
            Ok(n) if n >= least => Ok(SettingValue::Count(n)),
            _ => Err(format!("`{text}` is not a whole number of {least} or more")),
        },
        Kind::Duration => parse::duration(text).map(SettingValue::Duration),
        Kind::Choice(names) => names
            .iter()
            .find(|name| **name == text)
            .map(|name| SettingValue::Choice(name))
            .ok_or_else(|| {
                format!(
                    "unknown {} `{text}`; choose one of: {}",
                    setting.flag(),
                    names.join(", ")
                )
            }),
    }
}

impl clap::Args for RunSettings {
    fn augment_args(command: Command) -> Command {
        declared().into_iter().fold(command, |command, setting| {
            command.arg(
                Arg::new(setting.id)
                    .long(setting.flag())
                    .value_name(setting.id.to_uppercase())
                    .help(setting.help)
                    .default_value(text(setting.default))
                    .allow_hyphen_values(true)
                    .value_parser(move |text: &str| parse(setting, text)),
            )
        })
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl FromArgMatches for RunSettings {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut settings = Settings::default();
        for setting in declared() {
            if let Ok(Some(value)) = matches.try_get_one::<SettingValue>(setting.id) {
                settings.set(setting, *value);
            }
        }
        Ok(RunSettings(settings))
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// In `test.json`, every setting at its value: a count, a duration in whole milliseconds, a
/// choice by its name.
impl Serialize for RunSettings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let settings = declared();
        let mut map = serializer.serialize_map(Some(settings.len()))?;
        for setting in settings {
            match self.0.get(setting) {
                SettingValue::Count(n) => map.serialize_entry(setting.id, &n)?,
                SettingValue::Duration(d) => {
                    map.serialize_entry(setting.id, &(d.as_millis() as u64))?
                }
                SettingValue::Choice(name) => map.serialize_entry(setting.id, name)?,
            }
        }
        map.end()
    }
}

/// Read from the keys of the whole `test.json` (the part is flattened into it): the keys of
/// declared settings, each checked as the command line checks it; a key left out is the
/// setting's default, and other keys are other parts'.
impl<'de> Deserialize<'de> for RunSettings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = RunSettings;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a run's options")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RunSettings, A::Error> {
                let mut settings = Settings::default();
                while let Some(key) = map.next_key::<String>()? {
                    let Some(setting) = declared().into_iter().find(|s| s.id == key) else {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    };
                    let json: serde_json::Value = map.next_value()?;
                    let text = match (setting.kind, &json) {
                        (Kind::Duration, serde_json::Value::Number(ms)) => format!("{ms}ms"),
                        (_, serde_json::Value::String(s)) => s.clone(),
                        (_, other) => other.to_string(),
                    };
                    let value = parse(setting, &text)
                        .map_err(|e| serde::de::Error::custom(format!("`{}`: {e}", setting.id)))?;
                    settings.set(setting, value);
                }
                Ok(RunSettings(settings))
            }
        }
        deserializer.deserialize_map(Keys)
    }
}
