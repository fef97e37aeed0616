use std::time::Duration;

use splitbrain_checker::{Op, OpType, Process};
use splitbrain_compose::{ComposeError, Deployment};
use splitbrain_workloads::Recorder;
use tokio_util::sync::CancellationToken;

use crate::schedule::Schedule;
use crate::Fault;

/// When faults happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NemesisOptions {
    /// Quiet time before each fault (and how long a pause lasts).
    pub interval: Duration,
    /// How long a killed node stays down.
    pub restart_delay: Duration,
}

/// A fault that could not be injected, healed, or verified healed.
#[derive(Debug, thiserror::Error)]
pub enum NemesisError {
    #[error("{action} {fault} on {targets}: {source}", targets = .targets.join(","))]
    Action {
        action: &'static str,
        fault: &'static str,
        targets: Vec<String>,
        source: ComposeError,
    },
    #[error("the heal did not take: {0}")]
    NotHealed(String),
}

/// The nemesis op that marks a fault's start or stop: process `nemesis`, type `info`.
pub fn nemesis_op(f: &str, fault: &str, targets: &[String]) -> Op {
    let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(targets.to_vec());
    op.fault = Some(fault.to_string());
    op
}

/// Runs a seeded fault schedule against a deployment, Jepsen-style: a quiet interval, a
/// fault, its heal, again, until stopped. Every start and stop is recorded once it has taken
/// effect.
pub struct Nemesis {
    pub faults: Vec<&'static dyn Fault>,
    pub options: NemesisOptions,
    pub seed: u64,
}

impl Nemesis {
    /// Injects faults until `stop` is cancelled, then heals whatever is active and checks that
    /// every node is running and unpaused. Returns each fault injected, with its targets.
    pub async fn run(
        &self,
        deployment: &Deployment,
        recorder: &Recorder,
        stop: CancellationToken,
    ) -> Result<Vec<(String, Vec<String>)>, NemesisError> {
        let nodes = deployment.nodes().iter().map(|n| n.name.clone()).collect();
        let mut schedule = Schedule::new(self.seed, self.faults.clone(), nodes);
        let mut injected = Vec::new();
        while sleep_unless_stopped(self.options.interval, &stop).await {
            let Some(step) = schedule.next() else { break };
            let fault = step.fault;
            let started = fault.start(deployment, &step.targets).await;
            if let Err(source) = started {
                // Part of it may have taken: heal before giving up.
                let _ = fault.stop(deployment, &step.targets).await;
                return Err(action_error("start", fault, &step.targets, source));
            }
            recorder.record(nemesis_op("start", fault.name(), &step.targets));
            injected.push((fault.name().to_string(), step.targets.clone()));
            sleep_unless_stopped(fault.duration(&self.options), &stop).await;
            fault
                .stop(deployment, &step.targets)
                .await
                .map_err(|source| action_error("stop", fault, &step.targets, source))?;
            recorder.record(nemesis_op("stop", fault.name(), &step.targets));
        }
        verify_healed(deployment).await?;
        Ok(injected)
    }
}

fn action_error(
    action: &'static str,
    fault: &'static dyn Fault,
    targets: &[String],
    source: ComposeError,
) -> NemesisError {
    NemesisError::Action {
        action,
        fault: fault.name(),
        targets: targets.to_vec(),
        source,
    }
}

/// Every node must be running and not paused.
pub async fn verify_healed(deployment: &Deployment) -> Result<(), NemesisError> {
    let health = deployment
        .health()
        .await
        .map_err(|e| NemesisError::NotHealed(e.to_string()))?;
    let down: Vec<_> = health
        .into_iter()
        .filter(|(_, up)| !up)
        .map(|(name, _)| name)
        .collect();
    if down.is_empty() {
        Ok(())
    } else {
        Err(NemesisError::NotHealed(format!(
            "{} still down or paused",
            down.join(", ")
        )))
    }
}

/// Sleeps; returns false if `stop` was cancelled first.
async fn sleep_unless_stopped(duration: Duration, stop: &CancellationToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep(duration) => !stop.is_cancelled(),
        () = stop.cancelled() => false,
    }
}
