//! `docs/findings.md`: the bugs of real lock libraries that splitbrain shows, one section a
//! file of `scenarios/findings/`, made from the files themselves (their claim, upstream
//! source, library and variant, schedule, the run that showed it and the commands that
//! reproduce it). A test compares it with the committed page, so it cannot drift from them;
//! `SPLITBRAIN_BLESS=1 cargo test -p splitbrain findings` writes it again.

use std::fmt::Write;
use std::path::Path;

use splitbrain_libraries::{catalog, find, Library, LIB_PREFIX};

use crate::error::HarnessError;
use crate::matrix;
use crate::scenario::{self, Scenario};

const GENERATED: &str = "<!-- Generated from scenarios/findings/ by harness/src/findings.rs; \
                         `SPLITBRAIN_BLESS=1 cargo test -p splitbrain findings` writes it again. -->";

/// The page, from the findings in `scenarios` and the manifests in `adapters`.
pub fn page(scenarios: &Path, adapters: &Path) -> Result<String, HarnessError> {
    // A file of the folder that cures another (the library used as its docs advise) is told
    // under the finding it cures.
    let (cures, findings): (Vec<Scenario>, Vec<Scenario>) = scenario::all(scenarios)?
        .into_iter()
        .filter(|s| s.finding)
        .partition(|s| s.claim.cures.is_some());
    let mut page = format!(
        "# Findings: what real lock libraries do that their users do not expect\n\n{GENERATED}\n\n\
         Each finding is a scenario in `scenarios/findings/`, run with the library as its users \
         write it (the adapter in `adapters/<library>/`, a variant where the finding needs one \
         of the library's documented options), and a line of that library's report card \
         (`splitbrain library test NAME`). A finding holds when nine seeds in ten show it, \
         every violation explained by the mechanism it names ([what the causes \
         mean](reading-results.md)). What was measured, quiet and busy, is in \
         [measurements.md](measurements.md#findings).\n\n\
         | finding | library | expect | in short |\n|---|---|---|---|\n"
    );
    for finding in &findings {
        let _ = writeln!(
            page,
            "| [`{name}`](#{name}) | `{}` | {} | {} |",
            finding.client,
            expected(finding, &cell_of(finding)?),
            finding.claim.claim,
            name = finding.name,
        );
    }
    for finding in &findings {
        section(&mut page, finding, scenarios, adapters)?;
        let cured = |cure: &&Scenario| cure.claim.cures.as_ref() == Some(&finding.name);
        for cure in cures.iter().filter(cured) {
            cure_section(&mut page, cure, adapters)?;
        }
    }
    not_shown(&mut page, adapters)?;
    Ok(page)
}

/// What the libraries' users report that no finding shows, from each manifest's
/// `[[not-shown]]`: the command tried, what it showed, and why that is not a finding.
fn not_shown(page: &mut String, adapters: &Path) -> Result<(), HarnessError> {
    let mut libraries = catalog(adapters).map_err(|e| HarnessError::BadInput(e.to_string()))?;
    libraries.sort_by(|a, b| a.name.cmp(&b.name));
    let _ = writeln!(
        page,
        "\n<a id=\"not-shown\"></a>\n\n## Not shown, and why\n\n\
         What the libraries' own users report that no finding above shows: each with the runs \
         tried here (none where no run reaches it), what they showed, and why that is not a \
         finding. Each is kept in its library's manifest (`[[not-shown]]` in \
         `adapters/<library>/library.toml`)."
    );
    for library in &libraries {
        let manifest = &library.manifest;
        for row in &manifest.not_shown {
            let tried = match row.tried.is_empty() {
                true => " nothing".to_string(),
                false => format!("\n\n  ```sh\n  {}\n  ```\n", row.tried.join("\n  ")),
            };
            let _ = writeln!(
                page,
                "\n### {} {}: {}\n\n\
                 - **Upstream**: {}.\n\
                 - **Tried**:{tried}\n\
                 - **It showed**: {}\n\
                 - **Why it is not a finding**: {}",
                manifest.package, manifest.version, row.behaviour, row.source, row.showed, row.why
            );
        }
    }
    Ok(())
}

/// What a finding expects, held to what: `invalid (no expiry)`.
fn expected(finding: &Scenario, cell: &matrix::Cell) -> String {
    let label = finding.expect.judged_label(finding.judge);
    let causes: Vec<&str> = cell.expect_causes.iter().map(|c| c.label()).collect();
    match causes.is_empty() {
        true => label,
        false => format!("{label} ({})", causes.join(", ")),
    }
}

/// A finding's first cell, as its file expands it.
fn cell_of(finding: &Scenario) -> Result<matrix::Cell, HarnessError> {
    let (_, mut cells) = matrix::load_scenario(&finding.path, &[1])?;
    Ok(cells.remove(0))
}

/// `lib:NAME:VARIANT` and, for a variant, what it changes: `: the summary`.
fn as_used(scenario: &Scenario, adapters: &Path) -> Result<(Library, String), HarnessError> {
    let named = scenario.client.trim_start_matches(LIB_PREFIX);
    let library = find(adapters, named)
        .map_err(|e| HarnessError::BadInput(format!("{}: {e}", scenario.path.display())))?;
    let variant = match library
        .variant
        .as_ref()
        .and_then(|v| library.manifest.variants.get(v))
    {
        Some(variant) => format!(": {}", variant.summary),
        None => String::new(),
    };
    Ok((library, variant))
}

/// A finding's cure, under it: the claim, the library as used, and the command.
fn cure_section(page: &mut String, cure: &Scenario, adapters: &Path) -> Result<(), HarnessError> {
    let (_, variant) = as_used(cure, adapters)?;
    let _ = writeln!(
        page,
        "\n<a id=\"{name}\"></a>\n\n**The cure**, `{name}`: {} As `{}`{variant}; the same \
         faults; expect {} in every seed.\n\n```sh\nsplitbrain scenario run {name} --seeds 10\n```",
        cure.claim.claim,
        cure.client,
        cure.expect.judged_label(cure.judge),
        name = cure.name,
    );
    Ok(())
}

fn section(
    page: &mut String,
    finding: &Scenario,
    scenarios: &Path,
    adapters: &Path,
) -> Result<(), HarnessError> {
    let (library, variant) = as_used(finding, adapters)?;
    let manifest = &library.manifest;
    let cell = cell_of(finding)?;
    let _ = writeln!(
        page,
        "\n<a id=\"{name}\"></a>\n\n## {name}\n\n{}\n\n\
         - **Library**: {} {} ({}), as `{}`{variant}.\n\
         - **Upstream**: {}.\n\
         - **Expect**: {} in nine seeds of ten.\n\
         - **Faults**: {}.",
        finding.claim.claim,
        manifest.package,
        manifest.version,
        manifest.language.name(),
        finding.client,
        finding.claim.source,
        expected(finding, &cell),
        match cell.faults.as_str() {
            "" | "none" => "none: it shows with no fault at all".to_string(),
            faults => format!("`{faults}`"),
        },
        name = finding.name,
    );
    if let Some(fewest) = &finding.claim.fewest {
        let _ = writeln!(page, "- **Fewest faults**: {}", fewest.trim());
    }
    if let Some(shown) = &finding.claim.shown_by {
        let _ = writeln!(
            page,
            "\nWhat a run showed (the summary's line, then the history's ops):\n\n```\n{}\n```",
            shown.trim()
        );
    }
    let _ = writeln!(
        page,
        "\nTo reproduce it, over ten seeds, then once:\n\n```sh\nsplitbrain scenario run {} \
         --seeds 10\nsplitbrain run {}\n```",
        finding.name,
        as_typed(&cell.args, scenarios).join(" ")
    );
    Ok(())
}

/// A run's arguments as a user types them in the repository: a file of the scenarios folder
/// (a finding's own schedule, `--script`) by its path from the repository's root, not from
/// wherever the page was made.
fn as_typed(args: &[String], scenarios: &Path) -> Vec<String> {
    args.iter()
        .map(|arg| match Path::new(arg).strip_prefix(scenarios) {
            Ok(inside) => Path::new("scenarios").join(inside).display().to_string(),
            Err(_) => arg.clone(),
        })
        .collect()
}

/// The page for the repository's own folders.
fn repository_page() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    page(&root.join("scenarios"), &root.join("adapters")).expect("the findings read")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_findings_page_is_made_from_the_findings_folder() {
        let page = repository_page();
        for name in ["sherlock-expire-none", "sherlock-fractional-expire"] {
            assert!(page.contains(&format!("## {name}\n")), "{name}");
            assert!(
                page.contains(&format!("splitbrain scenario run {name} --seeds 10")),
                "{name}"
            );
        }
        assert!(
            page.contains("RedisLock(name, expire=None)"),
            "the variant's summary"
        );
        assert!(
            page.contains("--script scenarios/findings/redis-py-release-lost.toml "),
            "a finding's own schedule, by its path in the repository"
        );
        crate::reference::tests::matches_committed(&page, "findings.md");
    }
}
