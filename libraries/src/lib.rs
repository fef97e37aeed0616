//! Real lock libraries under test. Each is a folder under `adapters/`: an `exec:` adapter
//! written as the library's own documentation tells its users to lock, the file that pins the
//! library's version, and a manifest, `library.toml`, saying what the library is and what
//! it claims. `--client lib:NAME` runs one; splitbrain installs what it needs on first use,
//! into its own cache ([`install`]), never into the system.

pub mod card;
pub mod install;
pub mod kind;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use kind::Kind;

/// The folder adapters are read from, unless `SPLITBRAIN_ADAPTERS` says otherwise.
pub const ADAPTERS: &str = "adapters";

/// How `--client` names a library: `lib:redis-py`.
pub const LIB_PREFIX: &str = "lib:";

/// A library's manifest, `adapters/<name>/library.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Manifest {
    /// What the library is and how the adapter locks with it, in one line.
    pub summary: String,
    /// The package, as its registry names it (`redis`, `python-redis-lock`).
    pub package: String,
    /// The version the adapter pins and was measured against.
    pub version: String,
    pub language: Language,
    /// The adapter's file, in the library's folder.
    pub adapter: String,
    /// The deployments it is written for (`single`, `redlock`, `sentinel`, ...).
    pub deployments: Vec<String>,
    /// What kind of lock it is, which says which hazards apply to it: a file of
    /// `libraries/kinds/`.
    #[serde(deserialize_with = "kind::deserialize")]
    pub kind: &'static Kind,
    /// Whether it extends its lease while held, and whether the adapter reports it.
    pub renews: Renewal,
    /// Whether a grant returns a fencing token.
    pub fencing: bool,
    /// What a Java adapter runs with; only a Java adapter has it.
    #[serde(default)]
    pub java: Option<Java>,
    /// Other ways its users write the lock, by name (`lib:sherlock:expire-none`): each a
    /// documented option of the library that a finding or a card line needs.
    #[serde(default)]
    pub variants: BTreeMap<String, Variant>,
    /// What the library's own users report that its card does not show, and why:
    /// `[[not-shown]]`, on the findings page beside the findings.
    #[serde(default)]
    pub not_shown: Vec<NotShown>,
    /// Errors of the library that leave an acquire's outcome unknown by one of its own
    /// findings: `[[known-unknown]]`. A card line that expects `valid` and is `unknown` in a
    /// seed through these alone says so, and lays that seed to the finding, not the line.
    #[serde(default, rename = "known-unknown")]
    pub known_unknowns: Vec<KnownUnknown>,
}

/// An error the library raises to its caller after it may have set the lock's keys, which a
/// finding of its own shows: an acquire that ends in it is `unknown`, and that is the
/// finding's doing, not a failure of whatever else the run tests.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct KnownUnknown {
    /// What the acquire's error begins with, as the adapter reports it
    /// (`MultipleRedlockException`).
    pub error: String,
    /// The finding that shows it: a file of `scenarios/findings/` naming this library.
    pub finding: String,
}

impl KnownUnknown {
    /// Whether an acquire that ended with `error` is this one.
    pub fn matches(&self, error: &str) -> bool {
        error.starts_with(&self.error)
    }
}

/// A behaviour of the library, written down upstream, that no finding shows: what was tried
/// here, what it showed, and why that is not a finding.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct NotShown {
    /// The behaviour, as its users meet it.
    pub behaviour: String,
    /// Where upstream it is written down (an issue, a pull request, the pinned code).
    pub source: String,
    /// The commands tried here, as a user would type them (none where no run reaches it:
    /// `showed` says why).
    pub tried: Vec<String>,
    /// What that run showed.
    pub showed: String,
    /// Why that does not make a finding.
    pub why: String,
}

/// One way of using a library other than the adapter's plain one: `[variants.NAME]` in the
/// manifest. The adapter is the same program, started with `args`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Variant {
    /// What the variant changes, as a user of the library would write it.
    pub summary: String,
    /// What the adapter is started with to lock this way.
    pub args: Vec<String>,
    /// Where the variant keeps its lock alive and the plain use does not (rslock's `extends`),
    /// what it tells splitbrain of that, as the manifest's own `renews`.
    #[serde(default)]
    pub renews: Option<Renewal>,
}

/// What an adapter is written in, which says how it is installed and started: a Python
/// adapter from a virtual environment made from its `requirements.txt`, a Rust adapter built
/// from its own `Cargo.toml` and `Cargo.lock` (a binary named `adapter`), a Java adapter from
/// its source file by the JDK, with the Debian packages its `[java]` table names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Language {
    Python,
    Rust,
    Java,
}

impl Language {
    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Rust => "rust",
            Language::Java => "java",
        }
    }
}

/// A Java adapter's `[java]` table: the Debian packages that hold the library, and the jars
/// it runs with.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Java {
    pub debian_packages: Vec<String>,
    pub classpath: Vec<String>,
}

/// Whether a library extends its lease while the lock is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Renewal {
    No,
    /// It renews, and the adapter reports each renewal (`"renewal":"reported"`).
    Reported,
    /// It renews where the adapter cannot see it.
    Silent,
}

impl Renewal {
    pub fn name(self) -> &'static str {
        match self {
            Renewal::No => "no",
            Renewal::Reported => "reported",
            Renewal::Silent => "silent",
        }
    }
}

/// One library of the catalog: its folder and its manifest, and the variant a client chose.
#[derive(Debug, Clone)]
pub struct Library {
    pub name: String,
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// One of the manifest's `variants`, by name, or the adapter's plain way.
    pub variant: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("no library `{name}` in {dir}; the libraries there are: {known}")]
    Unknown {
        name: String,
        dir: String,
        known: String,
    },
    #[error("{library} has no variant `{variant}`; {known}")]
    UnknownVariant {
        library: String,
        variant: String,
        known: String,
    },
    #[error("{0}: {1}")]
    Unreadable(String, String),
}

/// The folder of adapters: `SPLITBRAIN_ADAPTERS`, or `adapters` in the current folder, or,
/// where there is none, the one in the source tree splitbrain was built from (a run from
/// another folder, a test run from its crate's folder).
pub fn adapters_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SPLITBRAIN_ADAPTERS") {
        return PathBuf::from(dir);
    }
    let here = PathBuf::from(ADAPTERS);
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(ADAPTERS);
    match !here.is_dir() && built_from.is_dir() {
        true => built_from,
        false => here,
    }
}

/// Every library under `dir`, by name; a folder without a manifest is not one.
pub fn catalog(dir: &Path) -> Result<Vec<Library>, CatalogError> {
    let unreadable = |path: &Path, e: &dyn std::fmt::Display| {
        CatalogError::Unreadable(path.display().to_string(), e.to_string())
    };
    let entries = std::fs::read_dir(dir).map_err(|e| unreadable(dir, &e))?;
    let mut libraries = Vec::new();
    for entry in entries {
        let folder = entry.map_err(|e| unreadable(dir, &e))?.path();
        let manifest = folder.join("library.toml");
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest).map_err(|e| unreadable(&manifest, &e))?;
        let parsed: Manifest = toml::from_str(&text).map_err(|e| unreadable(&manifest, &e))?;
        let name = folder
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        libraries.push(Library {
            name,
            dir: folder,
            manifest: parsed,
            variant: None,
        });
    }
    libraries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(libraries)
}

/// The library `name` under `dir`; `NAME:VARIANT` names one of its variants.
pub fn find(dir: &Path, name: &str) -> Result<Library, CatalogError> {
    let (name, variant) = match name.split_once(':') {
        Some((name, variant)) => (name, Some(variant)),
        None => (name, None),
    };
    let libraries = catalog(dir)?;
    let known: Vec<&str> = libraries.iter().map(|l| l.name.as_str()).collect();
    let known = known.join(", ");
    let mut library = libraries
        .iter()
        .find(|l| l.name == name)
        .cloned()
        .ok_or_else(|| CatalogError::Unknown {
            name: name.to_string(),
            dir: dir.display().to_string(),
            known,
        })?;
    if let Some(variant) = variant {
        if !library.manifest.variants.contains_key(variant) {
            let names: Vec<String> = library
                .manifest
                .variants
                .keys()
                .map(|v| format!("{LIB_PREFIX}{name}:{v}"))
                .collect();
            return Err(CatalogError::UnknownVariant {
                library: format!("{LIB_PREFIX}{name}"),
                variant: variant.to_string(),
                known: match names.is_empty() {
                    true => "it has none".to_string(),
                    false => format!("it has {}", names.join(", ")),
                },
            });
        }
        library.variant = Some(variant.to_string());
    }
    Ok(library)
}

impl Library {
    /// How `--client` names it: `lib:sherlock`, or `lib:sherlock:expire-none` for a variant.
    pub fn client_name(&self) -> String {
        match &self.variant {
            Some(variant) => format!("{LIB_PREFIX}{}:{variant}", self.name),
            None => format!("{LIB_PREFIX}{}", self.name),
        }
    }

    /// Its name in a folder's name: `sherlock`, or `sherlock-expire-none`.
    pub fn folder_name(&self) -> String {
        match &self.variant {
            Some(variant) => format!("{}-{variant}", self.name),
            None => self.name.clone(),
        }
    }

    /// What the adapter is started with: its variant's arguments, or none.
    pub fn variant_args(&self) -> &[String] {
        self.variant
            .as_ref()
            .and_then(|v| self.manifest.variants.get(v))
            .map_or(&[], |v| v.args.as_slice())
    }

    /// The adapter's file.
    pub fn adapter(&self) -> PathBuf {
        self.dir.join(&self.manifest.adapter)
    }

    /// The files that pin what the adapter needs: a changed one makes a new install. An
    /// adapter compiled at install (Rust, Java) pins its own source too, or an edited adapter
    /// would go on running as it was first built.
    pub fn pins(&self) -> Vec<PathBuf> {
        match self.manifest.language {
            Language::Python => vec![self.dir.join("requirements.txt")],
            Language::Rust => vec![
                self.dir.join("Cargo.toml"),
                self.dir.join("Cargo.lock"),
                self.adapter(),
            ],
            Language::Java => vec![self.dir.join("library.toml"), self.adapter()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repository_adapters() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../adapters")
    }

    #[test]
    fn every_manifest_names_its_adapter_and_the_version_its_pins_install() {
        let libraries = catalog(&repository_adapters()).unwrap();
        assert!(libraries.len() >= 3, "{libraries:?}");
        for library in &libraries {
            assert!(library.adapter().is_file(), "{}", library.name);
            let (package, version) = (&library.manifest.package, &library.manifest.version);
            let (file, pin) = match library.manifest.language {
                Language::Python => ("requirements.txt", format!("{package}=={version}")),
                Language::Rust => (
                    "Cargo.toml",
                    format!("{package} = {{ version = \"={version}\""),
                ),
                // Debian's archive holds one version of a package a release.
                Language::Java => ("library.toml", format!("\"{package}\"")),
            };
            let pins = std::fs::read_to_string(library.dir.join(file)).unwrap();
            assert!(
                pins.lines()
                    .any(|line| line.trim().starts_with(&pin) || line.contains(&pin)),
                "{}: {pin} is not in its {file}",
                library.name,
            );
        }
    }

    /// An adapter compiled at install is built anew when its source changes; a Python one,
    /// run from its source, keeps its environment.
    #[test]
    fn an_edited_compiled_adapter_is_installed_anew() {
        let cache = tempfile::tempdir().unwrap();
        for (name, compiled) in [("rslock", true), ("curator", true), ("redis-py", false)] {
            let copy = tempfile::tempdir().unwrap();
            let from = repository_adapters().join(name);
            for entry in walk(&from) {
                let to = copy.path().join(entry.strip_prefix(&from).unwrap());
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(&entry, &to).unwrap();
            }
            let library = find(copy.path().parent().unwrap(), name_of(copy.path())).unwrap();
            let before = library.environment(cache.path()).unwrap();
            let source = library.adapter();
            let mut text = std::fs::read_to_string(&source).unwrap();
            text.push_str("\n// edited\n");
            std::fs::write(&source, text).unwrap();
            let after = library.environment(cache.path()).unwrap();
            assert_eq!(before != after, compiled, "{name}");
        }
    }

    fn name_of(dir: &Path) -> &str {
        dir.file_name().unwrap().to_str().unwrap()
    }

    /// Every file under `dir`.
    fn walk(dir: &Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .flat_map(|entry| {
                let path = entry.unwrap().path();
                match path.is_dir() {
                    true => walk(&path),
                    false => vec![path],
                }
            })
            .collect()
    }

    /// What a manifest says of renewal is what its adapter answers `hello` with.
    #[test]
    fn every_manifest_says_of_renewal_what_its_adapter_tells_splitbrain() {
        for library in catalog(&repository_adapters()).unwrap() {
            let adapter = std::fs::read_to_string(library.adapter()).unwrap();
            for renewal in [Renewal::Reported, Renewal::Silent] {
                // As each language writes the field: Python's keyword, Java's `put`, Rust's
                // `json!`.
                let name = renewal.name();
                let says = [
                    format!("renewal=\"{name}\""),
                    format!("\"renewal\", \"{name}\""),
                    format!("\"renewal\": \"{name}\""),
                ]
                .iter()
                .any(|form| adapter.contains(form.as_str()));
                let variants = library.manifest.variants.values();
                let declared = library.manifest.renews == renewal
                    || variants.filter_map(|v| v.renews).any(|r| r == renewal);
                assert_eq!(
                    says,
                    declared,
                    "{}: the manifest says renews = {}",
                    library.name,
                    library.manifest.renews.name()
                );
            }
        }
    }

    #[test]
    fn an_unknown_library_is_refused_naming_those_there_are() {
        let e = find(&repository_adapters(), "redis-pie")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no library `redis-pie`"), "{e}");
        assert!(
            e.contains("python-redis-lock, redis-py, redis-py-sentinel"),
            "{e}"
        );
    }

    #[test]
    fn a_variant_runs_the_adapter_with_its_args_and_an_unknown_one_is_refused() {
        let library = find(&repository_adapters(), "sherlock:expire-none").unwrap();
        assert_eq!(library.client_name(), "lib:sherlock:expire-none");
        assert_eq!(library.folder_name(), "sherlock-expire-none");
        let command = library.command(Path::new("/cache")).unwrap();
        assert!(command.ends_with("adapter.py --expire none"), "{command}");
        let e = find(&repository_adapters(), "sherlock:expire-never")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("lib:sherlock has no variant `expire-never`")
                && e.contains("lib:sherlock:expire-none"),
            "{e}"
        );
        let e = find(&repository_adapters(), "redlock-py:x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("it has none"), "{e}");
    }

    #[test]
    fn a_manifest_with_a_field_it_does_not_know_is_refused_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("odd");
        std::fs::create_dir(&folder).unwrap();
        let manifest =
            std::fs::read_to_string(repository_adapters().join("redis-py/library.toml")).unwrap();
        std::fs::write(folder.join("library.toml"), manifest + "colour = \"red\"\n").unwrap();
        let e = catalog(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("odd/library.toml") && e.contains("colour"),
            "{e}"
        );
    }

    #[test]
    fn an_environment_is_named_after_its_pins_and_the_command_runs_from_it() {
        let library = find(&repository_adapters(), "redis-py").unwrap();
        let cache = Path::new("/cache");
        let environment = library.environment(cache).unwrap();
        assert!(
            environment
                .to_string_lossy()
                .starts_with("/cache/adapters/redis-py-"),
            "{environment:?}"
        );
        let command = library.command(cache).unwrap();
        assert!(command.starts_with(&format!("{}/bin/python3 /", environment.display())));
        assert!(
            command.ends_with("adapters/redis-py/adapter.py"),
            "{command}"
        );
        assert!(!library.is_installed(cache));
    }
}
