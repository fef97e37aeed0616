//! `splitbrain library`: the real lock libraries of the catalog (`adapters/<name>/`), and
//! installing one before a run that uses it, and each library's report card ([`card`]).

mod card;
mod known;
mod page;

pub use card::{test, Cards};

use splitbrain_libraries::install::{cache_dir, InstallError, Watch};
use splitbrain_libraries::{adapters_dir, catalog, Library};

use tokio_util::sync::CancellationToken;

use crate::error::{Exit, HarnessError};
use crate::progress;
use crate::spec::TestSpec;

/// `splitbrain library list`: each library with its version, language, the deployments it is
/// written for, what kind of lock it is, whether it renews and fences, and whether it is
/// installed in splitbrain's cache yet.
pub fn list() -> Result<Exit, HarnessError> {
    let dir = adapters_dir();
    let libraries = catalog(&dir).map_err(bad_catalog)?;
    let cache = cache_dir();
    let rows: Vec<[String; 8]> = libraries
        .iter()
        .map(|library| {
            let manifest = &library.manifest;
            [
                format!("lib:{}", library.name),
                format!("{} {}", manifest.package, manifest.version),
                manifest.language.name().to_string(),
                manifest.deployments.join(","),
                manifest.kind.name.to_string(),
                manifest.renews.name().to_string(),
                if manifest.fencing { "yes" } else { "no" }.to_string(),
                if library.is_installed(&cache) {
                    "yes"
                } else {
                    "no"
                }
                .to_string(),
            ]
        })
        .collect();
    let header = [
        "client",
        "library",
        "language",
        "deployments",
        "kind",
        "renews",
        "fencing",
        "installed",
    ]
    .map(str::to_string);
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            std::iter::once(&header)
                .chain(&rows)
                .map(|row| row[i].len())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (row, library) in
        std::iter::once((&header, None)).chain(rows.iter().zip(libraries.iter().map(Some)))
    {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        stdoutln!("{}", cells.join("  ").trim_end());
        if let Some(library) = library {
            stdoutln!("    {}", library.manifest.summary);
        }
    }
    stdoutln!(
        "\n{} libraries in {}; installed on first use into {}",
        libraries.len(),
        dir.display(),
        cache.join("adapters").display()
    );
    Ok(Exit::Success)
}

/// A catalog that cannot be read, or a library not in it, and what to do about it.
fn bad_catalog(e: splitbrain_libraries::CatalogError) -> HarnessError {
    HarnessError::BadInput(format!(
        "{e}; run from splitbrain's folder, or set SPLITBRAIN_ADAPTERS to its adapters/ folder"
    ))
}

/// Installs what the run's library needs, once, before anything of the run starts: an
/// install that fails stops the run with the installer's last words.
pub async fn install_for(
    spec: &TestSpec,
    interrupt: &CancellationToken,
) -> Result<(), HarnessError> {
    match spec.client().library.clone() {
        Some(library) => install(*library, interrupt).await,
        None => Ok(()),
    }
}

/// Installs `library` into splitbrain's cache unless it is there already, saying so; a
/// Ctrl-C stops it (and what it started) and is an error: nothing ran.
async fn install(library: Library, interrupt: &CancellationToken) -> Result<(), HarnessError> {
    let cache = cache_dir();
    if library.is_installed(&cache) {
        return Ok(());
    }
    progress::step(&format!(
        "installing {} {} for lib:{} into {}, once",
        library.manifest.package,
        library.manifest.version,
        library.name,
        cache.join("adapters").display()
    ));
    let interrupt = interrupt.clone();
    tokio::task::spawn_blocking(move || {
        let mut watch = Watch {
            show: &mut progress::tool_output,
            stop: &|| interrupt.is_cancelled(),
        };
        library.install(&cache, &mut watch)
    })
    .await
    .map_err(|e| HarnessError::Crash(e.into()))?
    .map_err(|e| match e {
        InstallError::Interrupted(_) => HarnessError::Interrupted(e.to_string()),
        _ => HarnessError::BadInput(e.to_string()),
    })
}
