//! The nemesis part of a run: which faults, when, and how hard.

use std::time::Duration;

use super::names::{self, Faults};
use super::parse;
use super::part::part;
use crate::limits;
use crate::script::Script;

part! {
    /// What goes wrong.
    pub struct NemesisPart {
        @shown
        /// Faults, comma-separated, or all or none (every fault is listed at the end).
        #[arg(long, default_value = "kill", value_parser = parse::faults)]
        #[serde(flatten)]
        pub nemesis: Faults,
        /// Faults at fixed times instead of a seeded schedule: a TOML file of `[[fault]]`
        /// tables (at, fault, targets, for, params), as scenario files and `splitbrain shrink`
        /// write them.
        #[arg(long, value_name = "FILE", conflicts_with = "nemesis", value_parser = parse::script)]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub script: Option<Script>,
        @shown
        /// Seed for the fault schedule (default: random, printed and stored in test.json; drawn
        /// below 2^53, so `--seed $(jq .seed test.json)` reruns the same schedule).
        #[arg(long, value_parser = parse::seed, allow_hyphen_values = true)]
        pub seed: Option<u64>,
        /// How long a killed node stays down before it is restarted (default: at once; on a
        /// deployment that fails over, as long as other faults, around its failure detector).
        #[arg(long, value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(default, with = "names::opt_millis")]
        pub restart_delay: Option<Duration>,
        /// Mean quiet time before each fault (seeded, within half of it either way), and the
        /// mean length of faults that have no length of their own (default: 500ms; on a
        /// deployment that fails over, drawn around its failure detector instead, so that
        /// faults outlast it).
        #[arg(long, value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(default, with = "names::opt_millis")]
        pub nemesis_interval: Option<Duration>,
        /// The largest clock jump of clock-bump and clock-strobe (default: 10s, or twice the
        /// TTL where that is longer, so that a jump can outrun a lease).
        #[arg(long, value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(default, skip_serializing_if = "Option::is_none", with = "names::opt_millis")]
        pub clock_bump: Option<Duration>,
        /// How fast clock-drift runs a clock (or 1/that, for a slow one); above 0, not 1.
        #[arg(long, default_value_t = 2.0, allow_hyphen_values = true)]
        pub clock_drift: f64,
        /// How long client-pause freezes a client, give or take a quarter (default: 3s, or 1.5
        /// TTLs where that is longer, so that the frozen client outlives its lease).
        #[arg(long, value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(default, skip_serializing_if = "Option::is_none", with = "names::opt_millis")]
        pub client_pause: Option<Duration>,
        /// How long link-latency delays traffic (give or take a half).
        #[arg(long, default_value = "1s", value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(with = "names::millis")]
        pub link_latency: Duration,
        /// Delay every chunk on every client link by a random 0 to this, for the whole run: the
        /// uneven network under which Redlock's votes split (0: clients connect straight).
        #[arg(long, default_value = "0s", value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(default, with = "names::millis")]
        pub link_jitter: Duration,
        /// Client groups, each reaching the nodes through links of its own (used by link
        /// faults).
        #[arg(long, default_value_t = 2, allow_hyphen_values = true, value_parser = parse::count)]
        pub client_groups: usize,
        /// Serve toxiproxy's HTTP API for the client links on this loopback port (toxiproxy's
        /// own is 8474), so toxiproxy clients and scripts can drive them during the run.
        #[arg(long)]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub toxiproxy_port: Option<u16>,
    }
}

/// The default largest clock jump and client pause, where the TTL asks for no more.
const CLOCK_BUMP: Duration = Duration::from_secs(10);
const CLIENT_PAUSE: Duration = Duration::from_secs(3);

impl NemesisPart {
    /// Why these options cannot run, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        let drift = self.clock_drift;
        if !(drift > 0.0 && drift.is_finite()) || drift == 1.0 {
            return Err(format!(
                "--clock-drift {drift} must be a rate above 0 other than 1, like 2 (twice as fast)"
            ));
        }
        if let Some(interval) = self
            .nemesis_interval
            .filter(|&i| i < limits::SHORTEST_INTERVAL)
        {
            return Err(format!(
                "--nemesis-interval {} is shorter than {}: starting and healing a fault goes \
                 through Docker and takes tens to hundreds of milliseconds, so faults could \
                 not keep to it",
                humantime::format_duration(interval),
                humantime::format_duration(limits::SHORTEST_INTERVAL)
            ));
        }
        Ok(())
    }

    /// Whether an option works on the client links for the whole run.
    pub fn shapes_links(&self) -> bool {
        self.toxiproxy_port.is_some() || !self.link_jitter.is_zero()
    }

    /// The largest clock jump: `--clock-bump`, or one that outlasts a lease of `ttl`.
    pub fn clock_bump(&self, ttl: Duration) -> Duration {
        self.clock_bump
            .unwrap_or_else(|| outlasting(CLOCK_BUMP, ttl, 2.0))
    }

    /// How long a client pause lasts: `--client-pause`, or one that outlasts a lease of `ttl`.
    pub fn client_pause(&self, ttl: Duration) -> Duration {
        self.client_pause
            .unwrap_or_else(|| outlasting(CLIENT_PAUSE, ttl, 1.5))
    }
}

/// A lease fault's default length: `default`, or `factor` TTLs where that is longer, since a
/// pause or a clock jump shorter than the lease cannot make a zombie (within the longest
/// duration any option takes).
fn outlasting(default: Duration, ttl: Duration, factor: f64) -> Duration {
    default.max(ttl.mul_f64(factor)).min(limits::LONGEST)
}
