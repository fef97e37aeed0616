//! Kinds of lock. Each is a file of `libraries/kinds/`: the scenarios of the catalog whose
//! hazard a library of that kind is exposed to, and what it should show in each, which make
//! its card. A new kind is one file and one line in [`FILES`].

use std::sync::LazyLock;

use serde::{Deserialize, Deserializer};

/// Every kind, by the name a manifest's `kind` gives, with its file.
const FILES: &[(&str, &str)] = &[
    ("single-redis", include_str!("../kinds/single-redis.toml")),
    ("redlock", include_str!("../kinds/redlock.toml")),
    ("sentinel", include_str!("../kinds/sentinel.toml")),
    ("zookeeper", include_str!("../kinds/zookeeper.toml")),
    ("etcd", include_str!("../kinds/etcd.toml")),
];

/// What kind of lock a library takes, which says which hazards apply to it.
#[derive(Debug, PartialEq, Eq)]
pub struct Kind {
    /// Its name in a manifest (`single-redis`): its file's.
    pub name: &'static str,
    /// What it is, in a sentence.
    pub summary: String,
    /// Its card's lines after the control, in order.
    pub lines: Vec<Line>,
}

/// One line of a kind's card: a scenario of the catalog.
#[derive(Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Line {
    /// The scenario, a file of `scenarios/`.
    pub scenario: String,
    /// What a library of this kind should show in it, in a sentence.
    pub expected: String,
    /// Where the line is only for some libraries of the kind: those that renew their lease
    /// (a watchdog's zombie), or those whose grants carry a fencing token (the fenced cure).
    #[serde(default)]
    pub only_if: Option<Feature>,
}

/// What a library may do that puts a line on its card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Feature {
    Renews,
    Fences,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KindFile {
    summary: String,
    #[serde(rename = "line")]
    lines: Vec<Line>,
}

static KINDS: LazyLock<Vec<Kind>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|&(name, text)| {
            // The files are built into the program and a test reads each: a bad one cannot
            // reach a user.
            let file: KindFile =
                toml::from_str(text).unwrap_or_else(|e| panic!("libraries/kinds/{name}.toml: {e}"));
            Kind {
                name,
                summary: file.summary,
                lines: file.lines,
            }
        })
        .collect()
});

/// Every kind, in the order of [`FILES`].
pub fn kinds() -> &'static [Kind] {
    &KINDS
}

/// The kind a manifest names, or `None`.
pub fn find(name: &str) -> Option<&'static Kind> {
    kinds().iter().find(|k| k.name == name)
}

/// Reads a manifest's `kind`, refusing a name that is not a file of `libraries/kinds/`.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<&'static Kind, D::Error> {
    let name = String::deserialize(deserializer)?;
    find(&name).ok_or_else(|| {
        let names: Vec<&str> = kinds().iter().map(|k| k.name).collect();
        serde::de::Error::custom(format!(
            "unknown kind `{name}`: one of {} (the files of libraries/kinds/)",
            names.join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_file_reads_and_names_scenarios_of_the_catalog() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let on_disk = std::fs::read_dir(root.join("libraries/kinds"))
            .unwrap()
            .count();
        assert_eq!(
            kinds().len(),
            on_disk,
            "every file of libraries/kinds/ is in FILES"
        );
        for kind in kinds() {
            assert!(
                !kind.summary.is_empty() && !kind.lines.is_empty(),
                "{}",
                kind.name
            );
            for line in &kind.lines {
                let file = root
                    .join("scenarios")
                    .join(format!("{}.toml", line.scenario));
                assert!(file.is_file(), "{}: {}", kind.name, file.display());
            }
        }
    }

    #[test]
    fn a_manifest_naming_no_kind_is_told_the_kinds() {
        #[derive(Debug, Deserialize)]
        struct Named {
            #[serde(deserialize_with = "deserialize")]
            kind: &'static Kind,
        }
        let refused = toml::from_str::<Named>("kind = \"redis\"")
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("unknown kind `redis`: one of single-redis, redlock, sentinel"),
            "{refused}"
        );
        let named: Named = toml::from_str("kind = \"etcd\"").unwrap();
        assert_eq!(named.kind.name, "etcd");
    }
}
