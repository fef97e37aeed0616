//! The workload part of a run: what the clients do with the lock.

use std::time::Duration;

use splitbrain_workloads::workload::WorkloadKind;

use super::part::part;
use super::{names, parse};

part! {
    /// What the clients do.
    pub struct WorkloadPart {
        @shown
        /// Workload (every workload is listed at the end).
        #[arg(long, default_value = "lock", value_parser = parse::workload)]
        #[serde(with = "names::by_name")]
        pub workload: &'static WorkloadKind,
        /// lock-set: the storage refuses writes whose fencing token is older than one it has
        /// seen (needs a client that issues tokens: fenced, or an exec client that returns them).
        #[arg(long)]
        #[serde(default)]
        pub fencing: bool,
        /// Let the holder of a built-in client act to the end of its hold, writing whatever
        /// its renewals said, as code that never looks at its lease does (by default it stops,
        /// and writes nothing, once the validity it confirmed has run out).
        #[arg(long)]
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub no_lease_check: bool,
        @shown
        /// Lease each acquire asks for.
        #[arg(long, default_value = "2s", value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(with = "names::millis")]
        pub ttl: Duration,
        /// Hold a granted lock this long, at most 90% of its validity (default: a random time
        /// within that); a client with a lease watchdog holds for all of it (default: within
        /// two TTLs).
        #[arg(long, value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(default, skip_serializing_if = "Option::is_none", with = "names::opt_millis")]
        pub hold: Option<Duration>,
        /// Number of lock keys the clients spread over (1: all contend for one); for the
        /// `register` workload, the number of registers.
        #[arg(long, default_value_t = 1, allow_hyphen_values = true, value_parser = parse::count)]
        pub resources: usize,
        /// Put the lock keys in one Redis Cluster slot: every key becomes `{TAG}lock...`, so
        /// that they all live on one master.
        #[arg(long)]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub hash_tag: Option<String>,
    }
}

impl WorkloadPart {
    /// Why these options cannot run, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.ttl.is_zero() {
            return Err("--ttl must be more than zero".into());
        }
        if self.ttl < Duration::from_millis(50) {
            return Err(format!(
                "--ttl {} is too short to hold a lock over a network; use 50ms or more",
                humantime::format_duration(self.ttl)
            ));
        }
        Ok(())
    }
}
