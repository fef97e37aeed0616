//! The command line that makes a spec again: `test.json`'s `command`, and the options a
//! matrix cell, a replay or a shrunk scenario prints. It is read from the parts' own
//! definitions: each option's flag from clap, and whether to print it from its default and
//! from the rules of what would do nothing.

use super::idle::{idle, Combination};
use super::{shell_quoted, TestSpec};

impl TestSpec {
    /// The command line that runs this test again, seed included.
    pub fn command_line(&self) -> String {
        if let Some(script) = self.nemesis.script.as_ref().filter(|script| script.replay) {
            return format!(
                "splitbrain run --replay {}",
                shell_quoted(&script.from.display().to_string())
            );
        }
        let mut line = "splitbrain run".to_string();
        for (flag, value) in self.options() {
            line += &format!(" --{flag}");
            if let Some(value) = value {
                line += &format!(" {}", shell_quoted(&value));
            }
        }
        line
    }

    /// The `splitbrain run` options that make this test again, as `(flag, value)` (no value
    /// for a switch): the run's headline first (deployment, client, workload, faults, seed,
    /// and the like), then every other option given, but not one that would do nothing here
    /// (`run` would refuse it).
    pub fn options(&self) -> Vec<(String, Option<String>)> {
        let combination = self.combination();
        let mut printed: Vec<_> = self
            .printed()
            .into_iter()
            .filter(|option| option.shown || option.given)
            .filter(|option| idle(option.id, &combination).is_none())
            .collect();
        printed.sort_by_key(|option| !option.shown);
        printed
            .into_iter()
            .map(|option| (option.flag, option.value))
            .collect()
    }

    /// What the options' effect depends on.
    pub(super) fn combination(&self) -> Combination<'_> {
        let workload = self.workload_kind();
        Combination {
            deployment: self.deployment().name(),
            client: self.client().to_string(),
            checks_lease: self.client().kind.checks_lease,
            workload: workload.name,
            data_workload: workload.data.is_some(),
            faults: self.faults().iter().map(|f| f.name()).collect(),
            scripted: self.nemesis.script.is_some(),
            client_groups: self.client_groups(),
        }
    }
}
