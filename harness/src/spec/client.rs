//! The client part of a run: which lock client, and how it asks.

use std::time::Duration;

use splitbrain_workloads::ClientOptions;

use super::catalog::client_help;
use super::names::{self, Acquire, ChosenClient};
use super::parse;
use super::part::part;

part! {
    /// Who takes the lock.
    pub struct ClientPart {
        @shown
        /// Lock algorithm (the help lists every one, from the registry of systems).
        #[arg(long, value_parser = parse::client, help = client_help())]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub client: Option<ChosenClient>,
        /// Redlock: retry after a fixed backoff, with no random jitter (the split-vote livelock).
        #[arg(long = "no-jitter", action = clap::ArgAction::SetFalse)]
        #[serde(default = "yes")]
        pub jitter: bool,
        /// Redlock: ask the nodes in parallel or sequential (one after another).
        #[arg(long, default_value = "parallel", value_parser = parse::acquire)]
        #[serde(rename = "sequential", default, with = "names::sequential")]
        pub acquire: Acquire,
        /// wait: how many replicas WAIT asks for (default: every replica the master has).
        #[arg(long, value_parser = parse::count)]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub wait_replicas: Option<usize>,
        /// How long an exec: client's program may take to start and answer hello (start-up is
        /// never counted in an operation).
        #[arg(long, default_value = "60s", value_parser = parse::duration, allow_hyphen_values = true)]
        #[serde(default = "default_start_timeout", with = "names::millis")]
        pub exec_start_timeout: Duration,
    }
}

impl ClientPart {
    /// The lock client, once the spec has resolved the deployment's default.
    pub fn chosen(&self) -> &ChosenClient {
        self.client.as_ref().expect(
            "a checked spec names its client: the deployment's default where none was given",
        )
    }

    pub fn options(&self) -> ClientOptions {
        ClientOptions {
            jitter: self.jitter,
            sequential: self.acquire == Acquire::Sequential,
            wait_replicas: self.wait_replicas,
            command: self.client.as_ref().and_then(|c| c.command.clone()),
            start_timeout: self.exec_start_timeout,
        }
    }
}

fn yes() -> bool {
    true
}

/// What test.json files written before `--exec-start-timeout` existed ran with.
fn default_start_timeout() -> Duration {
    Duration::from_secs(30)
}
