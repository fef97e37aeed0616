use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use splitbrain_checker::{Op, OpType, Process};
use splitbrain_compose::ComposeError;
use splitbrain_workloads::Recorder;
use tokio_util::sync::CancellationToken;

use crate::faults::{families, Action, Layout, Target};
use crate::schedule::Schedule;
use crate::script::{self, Planned, ScriptedFault};
use crate::Fault;

/// When faults happen, and how big they are.
#[derive(Debug, Clone, PartialEq)]
pub struct NemesisOptions {
    /// Mean quiet time before each fault, and mean length of faults that have no other.
    pub interval: Duration,
    /// How long a killed node stays down; `None`: as long as other faults last (around the
    /// failure detector where faults are paced by one, else not at all).
    pub restart_delay: Option<Duration>,
    /// The failure detector faults are paced by (see [`crate::faults::fault_length`]): the
    /// deployment's, unless `--nemesis-interval` set the pace.
    pub detector: Option<Duration>,
    /// The largest clock jump.
    pub clock_bump: Duration,
    /// How fast a drifting clock runs (its inverse for a slow one); above 0, not 1.
    pub clock_drift: f64,
    /// How long a client pause lasts, give or take a quarter.
    pub client_pause: Duration,
    /// How long link-latency delays traffic, give or take a half.
    pub link_latency: Duration,
    /// The lock's TTL: how far a clock must jump to expire a held key at once.
    pub ttl: Duration,
}

impl Default for NemesisOptions {
    fn default() -> Self {
        NemesisOptions {
            interval: Duration::from_millis(500),
            restart_delay: None,
            detector: None,
            clock_bump: Duration::from_secs(10),
            clock_drift: 2.0,
            client_pause: Duration::from_secs(3),
            link_latency: Duration::from_secs(1),
            ttl: Duration::from_secs(2),
        }
    }
}

/// A fault that could not be injected, healed, or verified healed.
///
/// `Action`'s message says the error it wraps, which is therefore not also its `source` (a
/// field of that name would be): an error chain printed whole would say it twice.
#[derive(Debug, thiserror::Error)]
pub enum NemesisError {
    #[error("{action} {fault} on {targets}: {error}", targets = .targets.join(","))]
    Action {
        action: &'static str,
        fault: &'static str,
        targets: Vec<String>,
        error: ComposeError,
    },
    #[error("the heal did not take: {}", .0.join("; "))]
    NotHealed(Vec<String>),
    #[error("{0}")]
    Script(String),
}

/// The nemesis op that marks a fault's start or stop: process `nemesis`, type `info`, the
/// targets in `node`, the parameters in `value`.
pub fn nemesis_op(f: &str, fault: &str, action: &Action) -> Op {
    let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(action.targets.clone());
    op.fault = Some(fault.to_string());
    if !action.params.is_null() {
        op.value = Some(action.params.clone());
    }
    op
}

/// Runs a seeded fault schedule against a deployment, Jepsen-style: a quiet time, a fault,
/// its heal, again, until stopped; or, given a script, its faults at their times. Then heals
/// everything and verifies it.
pub struct Nemesis {
    pub faults: Vec<&'static dyn Fault>,
    pub options: NemesisOptions,
    pub seed: u64,
    pub script: Option<Vec<ScriptedFault>>,
}

impl Nemesis {
    /// Injects faults until `stop` is cancelled (or the script has run), then heals every
    /// fault it may have left and checks that no trace of any fault remains on any node.
    pub async fn run(
        &self,
        target: &Target,
        recorder: &Recorder,
        stop: CancellationToken,
    ) -> Result<(), NemesisError> {
        let layout = Layout {
            nodes: target.deployment.node_names(),
            clients: target.clients.workers(),
            groups: target.links.groups(),
            replication: target.deployment.replication(),
            clock_faults: target.deployment.system().clock_faults_reach(),
            // A schedule that runs was checked against the deployments already.
            deployments: Vec::new(),
        };
        let outcome = match &self.script {
            Some(script) => match script::plan(script, &layout, &self.options, self.seed) {
                Ok(steps) => run_script(&steps, target, recorder, &stop).await,
                Err(why) => Err(NemesisError::Script(why)),
            },
            None => {
                let schedule =
                    Schedule::new(self.seed, self.faults.clone(), layout, self.options.clone());
                let mut outcome = Ok(());
                for step in schedule {
                    if !sleep_unless_stopped(step.wait, &stop).await {
                        break;
                    }
                    let hold = Hold::For(step.hold);
                    outcome = run_step(step.fault, &step.action, hold, target, recorder, &stop)
                        .await
                        .map(|_| ());
                    if outcome.is_err() {
                        break;
                    }
                }
                outcome
            }
        };
        let healed = heal(target).await;
        outcome.and(healed)
    }
}

/// Runs every scripted step so that it takes effect at its time from the history's time 0.
/// A step that began after another ended, in the script, begins after it ends here too (a
/// replay of a schedule stays one fault at a time, however late a heal comes); steps that
/// overlap in the script run side by side. Each step is begun early by as long as the last
/// step of its family took to take effect, and healed early likewise, so that what is
/// recorded keeps to the script's times. The first error stops the rest.
async fn run_script(
    steps: &[Planned],
    target: &Target,
    recorder: &Recorder,
    stop: &CancellationToken,
) -> Result<(), NemesisError> {
    let zero = tokio::time::Instant::from_std(recorder.started());
    let finished: Vec<CancellationToken> = steps.iter().map(|_| CancellationToken::new()).collect();
    let leads: std::sync::Mutex<BTreeMap<&str, Latency>> = Default::default();
    let (finished, leads) = (&finished, &leads);
    futures_util::future::try_join_all(steps.iter().enumerate().map(|(i, step)| async move {
        let _finished = finished[i].clone().drop_guard();
        let before = steps[..i]
            .iter()
            .enumerate()
            .filter(|(_, earlier)| earlier.at + earlier.hold <= step.at);
        for (j, _) in before {
            tokio::select! {
                () = finished[j].cancelled() => {}
                () = stop.cancelled() => return Ok(()),
            }
        }
        let family = step.fault.family();
        // A fault that aims when it starts waits for its holder first: it neither takes a
        // lead nor teaches one.
        let aims = step.fault.aims_when_started();
        let lead = match aims {
            true => Latency::default(),
            false => leads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(family)
                .copied()
                .unwrap_or_default(),
        };
        if !sleep_until_unless_stopped(zero + step.at.saturating_sub(lead.start), stop).await {
            return Ok(());
        }
        let heal_at = zero + (step.at + step.hold).saturating_sub(lead.stop);
        let hold = Hold::Until(heal_at);
        let took = run_step(step.fault, &step.action, hold, target, recorder, stop).await?;
        if !aims {
            leads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(family, took);
        }
        Ok(())
    }))
    .await?;
    // As a seeded schedule runs until the time limit, so does a script's run.
    stop.cancelled().await;
    Ok(())
}

/// How long a fault stays on once it has taken effect.
enum Hold {
    For(Duration),
    Until(tokio::time::Instant),
}

/// How long a step's start and its stop took to take effect.
#[derive(Debug, Clone, Copy, Default)]
struct Latency {
    start: Duration,
    stop: Duration,
}

/// Starts one fault, holds it, stops it, recording both ends once they have taken effect.
async fn run_step(
    fault: &'static dyn Fault,
    action: &Action,
    hold: Hold,
    target: &Target,
    recorder: &Recorder,
    stop: &CancellationToken,
) -> Result<Latency, NemesisError> {
    let error = |what, error| NemesisError::Action {
        action: what,
        fault: fault.name(),
        targets: action.targets.clone(),
        error,
    };
    let starting = Instant::now();
    let started = match fault.start(target, action).await {
        Ok(started) => started,
        Err(source) => {
            // Part of it may have taken: undo before giving up.
            let _ = fault.stop(target, action).await;
            return Err(error("start", source));
        }
    };
    let hit = started.targets.map(|targets| Action {
        targets,
        params: action.params.clone(),
    });
    let action = hit.as_ref().unwrap_or(action);
    let mut op = nemesis_op("start", fault.name(), action);
    let began = started
        .acting_from
        .unwrap_or(starting)
        .duration_since(recorder.started());
    op.measured = Some(with_began(started.measured, began));
    recorder.record(op);
    let start = starting.elapsed();
    match hold {
        Hold::For(hold) => sleep_unless_stopped(hold, stop).await,
        Hold::Until(at) => sleep_until_unless_stopped(at, stop).await,
    };
    if let Some(background) = started.background {
        background.abort();
        let _ = background.await;
    }
    let stopping = Instant::now();
    fault
        .stop(target, action)
        .await
        .map_err(|source| error("stop", source))?;
    let ended = fault
        .ended_by_itself(target, action)
        .filter(|&ended| ended >= starting && ended < stopping)
        .unwrap_or(stopping);
    let mut op = nemesis_op("stop", fault.name(), action);
    op.measured = Some(serde_json::json!({
        "ended_ms": since_test_start_ms(ended.duration_since(recorder.started()))
    }));
    recorder.record(op);
    Ok(Latency {
        start,
        stop: stopping.elapsed(),
    })
}

/// Milliseconds since the test started, to the microsecond.
fn since_test_start_ms(elapsed: Duration) -> f64 {
    (elapsed.as_secs_f64() * 1e6).round() / 1e3
}

/// What a start measured, with `began_ms`: when the nemesis began it, in milliseconds since
/// the test started. The op is recorded once the fault has taken effect, which it did at some
/// time between the two; an explanation must not place it after a grant it may have preceded.
fn with_began(measured: Option<serde_json::Value>, began: Duration) -> serde_json::Value {
    let began_ms = since_test_start_ms(began);
    match measured {
        Some(serde_json::Value::Object(mut fields)) => {
            fields.insert("began_ms".into(), began_ms.into());
            serde_json::Value::Object(fields)
        }
        None => serde_json::json!({ "began_ms": began_ms }),
        Some(other) => serde_json::json!({ "began_ms": began_ms, "value": other }),
    }
}

/// Heals every family of fault on every node and link, whether or not this run used it (a
/// toxiproxy client may have added toxics of its own), then checks that no trace is left:
/// nothing down or paused, no iptables rule, netem qdisc or clock skew, no toxic link, no
/// frozen client.
pub async fn heal(target: &Target) -> Result<(), NemesisError> {
    let mut problems = Vec::new();
    // In registry order: restart and resume before anything that must exec into a node.
    for fault in families() {
        if let Err(e) = fault.heal_all(target).await {
            problems.push(format!("healing {}: {e}", fault.family()));
        }
    }
    for fault in families() {
        match fault.leftovers(target).await {
            Ok(left) => problems.extend(left),
            Err(e) => problems.push(format!("checking {}: {e}", fault.family())),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(NemesisError::NotHealed(problems))
    }
}

/// Sleeps until `at`; returns false if `stop` was cancelled first.
async fn sleep_until_unless_stopped(at: tokio::time::Instant, stop: &CancellationToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep_until(at) => !stop.is_cancelled(),
        () = stop.cancelled() => false,
    }
}

/// Sleeps; returns false if `stop` was cancelled first.
async fn sleep_unless_stopped(duration: Duration, stop: &CancellationToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep(duration) => !stop.is_cancelled(),
        () = stop.cancelled() => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_action_printed_with_its_chain_says_the_wrapped_error_once() {
        let error = NemesisError::Action {
            action: "start",
            fault: "kill",
            targets: vec!["n1".into(), "n2".into()],
            error: ComposeError::UnknownNode("n9".into()),
        };
        // As `anyhow`'s `{:#}` prints it: the error, then each source under it.
        let mut printed = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(next) = source {
            printed += &format!(": {next}");
            source = next.source();
        }
        assert_eq!(printed, "start kill on n1,n2: unknown node n9");
    }
}
