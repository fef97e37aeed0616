//! A run's faults at fixed times, written out: read from a `--script` file (or a scenario's
//! `[[fault]]` tables), or taken from a stored run's history for `--replay` and `shrink`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use splitbrain_nemesis::script::ScriptedFault;
use splitbrain_nemesis::{find_fault, Fault, FAULTS};

use crate::error::HarnessError;

/// A run's faults written out, and where they were read from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Script {
    /// The script file, or the run folder whose faults are replayed.
    pub from: PathBuf,
    /// Whether `from` is a stored run this one replays.
    #[serde(default)]
    pub replay: bool,
    pub faults: Vec<ScriptedFault>,
}

impl Script {
    /// Reads a script file's `[[fault]]` tables (a scenario file's other tables are the
    /// scenario's business, and are left alone).
    pub fn read(path: &Path) -> Result<Script, HarnessError> {
        #[derive(Deserialize)]
        struct ScriptFile {
            #[serde(default)]
            fault: Vec<ScriptedFault>,
        }
        let bad = HarnessError::BadInput;
        let text = std::fs::read_to_string(path).map_err(|e| {
            bad(format!(
                "cannot read the script file {}: {e}",
                path.display()
            ))
        })?;
        let file: ScriptFile = toml::from_str(&text).map_err(|e| {
            let line = text[..e.span().map_or(0, |s| s.start).min(text.len())]
                .matches('\n')
                .count()
                + 1;
            bad(format!("{}:{line}: {}", path.display(), e.message().trim()))
        })?;
        if file.fault.is_empty() {
            return Err(bad(format!(
                "{} has no [[fault]] tables; write each fault as\n[[fault]]\nat = \"5s\"\nfault = \
                 \"kill\"\ntargets = [\"n1\"]\nfor = \"1s\"",
                path.display()
            )));
        }
        Ok(Script {
            from: path.to_path_buf(),
            replay: false,
            faults: file.fault,
        })
    }

    /// The faults it runs, each once, in the order they first come.
    pub fn fault_kinds(&self) -> Result<Vec<&'static dyn Fault>, HarnessError> {
        let mut faults: Vec<&'static dyn Fault> = Vec::new();
        for (number, step) in self.faults.iter().enumerate() {
            let Some(fault) = find_fault(&step.fault) else {
                let known: Vec<&str> = FAULTS.iter().map(|f| f.name()).collect();
                return Err(HarnessError::BadInput(format!(
                    "--script {}: scripted fault {} names an unknown fault `{}`; choose one of: {}",
                    self.from.display(),
                    number + 1,
                    step.fault,
                    known.join(", ")
                )));
            };
            if !faults.iter().any(|f| f.name() == fault.name()) {
                faults.push(fault);
            }
        }
        Ok(faults)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::Duration;

    use super::*;

    /// A scripted kill of `node` at `at_ms` for `hold_ms`.
    pub(crate) fn kill(at_ms: u64, node: &str, hold_ms: u64) -> ScriptedFault {
        ScriptedFault {
            at: Duration::from_millis(at_ms),
            fault: "kill".into(),
            targets: vec![node.into()],
            hold: Duration::from_millis(hold_ms),
            params: serde_json::Value::Null,
        }
    }

    #[test]
    fn a_script_file_names_its_mistakes_at_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.toml");
        std::fs::write(
            &path,
            "[[fault]]\nat = \"5s\"\nfault = \"kill\"\nfor = \"soon\"\n",
        )
        .unwrap();
        let HarnessError::BadInput(why) = Script::read(&path).unwrap_err() else {
            panic!("not bad input")
        };
        assert!(
            why.contains("script.toml:4:") && why.contains("`soon` is not a duration"),
            "{why}"
        );
        std::fs::write(&path, "[scenario]\nclaim = \"x\"\n").unwrap();
        let HarnessError::BadInput(why) = Script::read(&path).unwrap_err() else {
            panic!("not bad input")
        };
        assert!(why.contains("has no [[fault]] tables"), "{why}");
        std::fs::write(
            &path,
            "[[fault]]\nat = \"5s 200ms\"\nfault = \"kill\"\ntargets = [\"n2\"]\nfor = \"1s\"\n",
        )
        .unwrap();
        let script = Script::read(&path).unwrap();
        assert_eq!(script.faults, [kill(5200, "n2", 1000)]);
    }
}
