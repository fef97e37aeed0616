//! The limits part of a run: how long, and how many clients at once.

use std::time::Duration;

use super::part::part;
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
