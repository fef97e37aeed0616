//! The limits part of a run: how long, how many clients at once, and what ends it early.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use splitbrain_checker::explain::Cause;

use super::part::{part, Flag};
use super::{names, parse};

part! {
    /// How much runs.
    pub struct LimitsPart {
        @shown
        /// How long clients run.
        #[arg(long, default_value = "60s", value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(with = "names::millis")]
        pub time_limit: Duration,
        @shown
        /// Client processes running at once.
        #[arg(long, default_value_t = 5, allow_hyphen_values = true, value_parser = parse::count)]
        pub concurrency: usize,
        /// Stop at the first violation explained as one of these causes (comma-separated, as
        /// results.json writes them: renewal-stopped,zombie) instead of at --time-limit: for a
        /// hazard whose mechanism is known, once it has shown. The history is checked as it
        /// is written, about once a second; the verdict is the whole history's, as ever.
        #[arg(long, value_name = "CAUSE,...", value_parser = parse::causes)]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub stop_at_first: Option<Causes>,
    }
}

/// The causes a run stops at the first of (`--stop-at-first`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Causes(pub Vec<Cause>);

impl Causes {
    pub fn contains(&self, cause: Cause) -> bool {
        self.0.contains(&cause)
    }
}

impl std::fmt::Display for Causes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<String> = self.0.iter().map(|c| c.key()).collect();
        f.write_str(&keys.join(","))
    }
}

impl Flag for Causes {
    fn arg(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl LimitsPart {
    /// Why these limits cannot run, if they cannot. The most clients a machine can run
    /// depends on the deployment, so the spec checks that.
    pub fn check(&self) -> Result<(), String> {
        if self.time_limit.is_zero() {
            return Err("--time-limit must be more than zero".into());
        }
        if self.time_limit > crate::limits::LONGEST_RUN {
            return Err(format!(
                "--time-limit {} is longer than {}: a run's history is checked in memory when \
                 it ends, and a day of the default run makes a history of several GB; split \
                 it into shorter runs (a matrix with seeds)",
                humantime::format_duration(self.time_limit),
                humantime::format_duration(crate::limits::LONGEST_RUN)
            ));
        }
        Ok(())
    }
}
