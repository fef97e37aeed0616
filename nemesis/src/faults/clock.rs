//! Clock faults, through the clock shim in every node: the host's clock is never touched.
//! Each start records the skew the node's server actually showed, where it tells its clock
//! (Redis's `TIME`).

use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::Rng;
use splitbrain_compose::clock::ClockSkew;
use splitbrain_compose::{ComposeError, Deployment};

use super::{one_or_minority, Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// The three ways a clock goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockKind {
    /// Jump by up to ±`--clock-bump`.
    Bump,
    /// Flip between +`--clock-bump` and true time every 100 to 500 ms while the fault lasts.
    Strobe,
    /// Run at `--clock-drift` times real speed, or its inverse.
    Drift,
}

/// A clock fault on one node or a minority.
pub struct Clock(pub ClockKind);

fn ms(value: &serde_json::Value, field: &str) -> i64 {
    value[field].as_i64().unwrap_or_default()
}

/// The clock skew of each target as its server reads it, in ms, right after a change.
pub(super) async fn measure(
    deployment: &Deployment,
    targets: &[String],
) -> Result<serde_json::Value, ComposeError> {
    let mut skews = serde_json::Map::new();
    for node in targets {
        let skew = deployment.measured_skew_ms(node).await?;
        skews.insert(
            node.clone(),
            serde_json::json!((skew * 10.0).round() / 10.0),
        );
    }
    Ok(serde_json::json!({ "skew_ms": skews }))
}

pub(super) async fn set_all(
    deployment: &Deployment,
    targets: &[String],
    skew: ClockSkew,
) -> Result<(), ComposeError> {
    for node in targets {
        deployment.set_clock(node, skew).await?;
    }
    Ok(())
}

/// A bump of at least a tenth of the maximum, in either direction, in whole ms.
fn bump_ms(options: &NemesisOptions, rng: &mut StdRng) -> i64 {
    let max = options.clock_bump.as_millis().max(10) as i64;
    let size = rng.random_range(max / 10..=max);
    if rng.random_bool(0.5) {
        size
    } else {
        -size
    }
}

/// Whether a clock fault can reach these nodes' servers.
pub(super) fn reaches(layout: &Layout) -> Result<(), String> {
    if layout.clock_faults {
        return Ok(());
    }
    Err(format!(
        "the clock faults move the clock that programs read through libc, by a shim the node \
         image preloads; this deployment's server never reads the clock through it (a Go \
         program reads it through the vDSO, a JVM runs without the shim), and times its leases \
         and sessions on the monotonic clock, which no container can move; leave clock faults \
         out here, or use {}",
        layout.deployments_where(|d| d.clock_faults)
    ))
}

#[async_trait]
impl Fault for Clock {
    fn name(&self) -> &'static str {
        match self.0 {
            ClockKind::Bump => "clock-bump",
            ClockKind::Strobe => "clock-strobe",
            ClockKind::Drift => "clock-drift",
        }
    }

    fn family(&self) -> &'static str {
        "clock"
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        reaches(layout)
    }

    fn summary(&self) -> &'static str {
        match self.0 {
            ClockKind::Bump => "jump nodes' clocks by up to ±--clock-bump",
            ClockKind::Strobe => "flip nodes' clocks between +--clock-bump and true time",
            ClockKind::Drift => "run nodes' clocks at --clock-drift times real speed, or 1/that",
        }
    }

    fn plan(&self, layout: &Layout, options: &NemesisOptions, rng: &mut StdRng) -> Action {
        let nodes = &layout.nodes[..];
        let targets = one_or_minority(nodes, rng);
        let params = match self.0 {
            ClockKind::Bump => serde_json::json!({ "offset_ms": bump_ms(options, rng) }),
            ClockKind::Strobe => serde_json::json!({
                "offset_ms": bump_ms(options, rng).abs(),
                "period_ms": rng.random_range(100..=500),
            }),
            ClockKind::Drift => {
                let fast = rng.random_bool(0.5);
                let rate = if fast {
                    options.clock_drift
                } else {
                    1.0 / options.clock_drift
                };
                serde_json::json!({ "rate": rate })
            }
        };
        Action { targets, params }
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        let deployment = &target.deployment;
        let skew = match self.0 {
            ClockKind::Bump | ClockKind::Strobe => {
                ClockSkew::offset(ms(&action.params, "offset_ms") * 1_000_000)
            }
            ClockKind::Drift => ClockSkew::drift(action.params["rate"].as_f64().unwrap_or(1.0)),
        };
        set_all(deployment, &action.targets, skew).await?;
        let measured = Some(measure(deployment, &action.targets).await?);
        let background = (self.0 == ClockKind::Strobe).then(|| {
            let period = Duration::from_millis(ms(&action.params, "period_ms").max(1) as u64);
            let (deployment, targets) = (deployment.clone(), action.targets.clone());
            tokio::spawn(async move {
                for flip in 1u64.. {
                    tokio::time::sleep(period).await;
                    let now = if flip % 2 == 0 {
                        skew
                    } else {
                        ClockSkew::default()
                    };
                    if let Err(e) = set_all(&deployment, &targets, now).await {
                        tracing::warn!("clock strobe: {e}");
                    }
                }
            })
        });
        Ok(Started {
            measured,
            background,
            targets: None,
            acting_from: None,
        })
    }

    async fn stop(&self, target: &Target, action: &Action) -> Result<(), ComposeError> {
        let deployment = &target.deployment;
        set_all(deployment, &action.targets, ClockSkew::default()).await
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        let deployment = &target.deployment;
        let all = deployment.node_names();
        set_all(deployment, &all, ClockSkew::default()).await
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        let deployment = &target.deployment;
        let mut left = Vec::new();
        for node in deployment.nodes() {
            let skew = deployment.clock(&node.name).await?;
            if skew != ClockSkew::default() {
                left.push(format!(
                    "{} has a clock skew ({} ms offset, {} ppm drift)",
                    node.name,
                    skew.offset_ns / 1_000_000,
                    skew.drift_ppm
                ));
            }
        }
        Ok(left)
    }
}
