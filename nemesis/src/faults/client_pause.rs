use std::time::{Duration, Instant};

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::Rng;
use splitbrain_compose::ComposeError;

use super::{client_target, client_worker, Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// Freeze the next client to take a lock, inside its critical section, for about
/// `--client-pause`, lease watchdog (and an external program's renewal thread) and all; then it
/// carries on as if no time had passed: the article's zombie. The client is whichever worker
/// enters a critical section first once the fault starts (a pause on a client that holds
/// nothing makes no zombie); its op's target is that worker, `client-<worker>`, and the op is
/// recorded when it froze.
pub struct ClientPause;

fn pause(action: &Action) -> Duration {
    Duration::from_millis(action.params["pause_ms"].as_u64().unwrap_or_default())
}

#[async_trait]
impl Fault for ClientPause {
    fn name(&self) -> &'static str {
        "client-pause"
    }

    fn aims_when_started(&self) -> bool {
        true
    }

    fn summary(&self) -> &'static str {
        "freeze the next client to take a lock, inside its critical section, for about --client-pause (a zombie)"
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        if layout.clients == 0 {
            return Err("client-pause needs at least one client".into());
        }
        Ok(())
    }

    fn plan(&self, _layout: &Layout, options: &NemesisOptions, rng: &mut StdRng) -> Action {
        let pause = options.client_pause.mul_f64(rng.random_range(0.75..1.25));
        Action {
            targets: Vec::new(),
            params: serde_json::json!({ "pause_ms": pause.as_millis() as u64 }),
        }
    }

    /// After the freeze, the pause itself (the thaw comes at its end, or at `stop`).
    fn hold(&self, options: &NemesisOptions, rng: &mut StdRng) -> Duration {
        options.client_pause.mul_f64(rng.random_range(1.0..1.25))
    }

    /// Arms every client and waits, for up to two pauses, for one to take a lock and freeze.
    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        target.clients.arm_next_holder(pause(action));
        let frozen = target.clients.wait_frozen(pause(action) * 2).await;
        Ok(match frozen {
            Some(worker) => Started {
                targets: Some(vec![client_target(worker)]),
                ..Started::default()
            },
            None => Started {
                measured: Some(serde_json::json!({ "refused": "no client took a lock in time" })),
                targets: Some(Vec::new()),
                ..Started::default()
            },
        })
    }

    async fn stop(&self, target: &Target, action: &Action) -> Result<(), ComposeError> {
        for name in &action.targets {
            target
                .clients
                .settle(client_worker(name), pause(action))
                .await;
        }
        Ok(())
    }

    /// The thaw: a pause ends after `pause_ms`, and its stop comes at the end of a hold that
    /// may be a quarter longer.
    fn ended_by_itself(&self, target: &Target, action: &Action) -> Option<Instant> {
        action
            .targets
            .iter()
            .filter_map(|name| target.clients.thawed_at(client_worker(name)))
            .max()
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        target.clients.thaw_all();
        Ok(())
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        Ok(target
            .clients
            .held()
            .into_iter()
            .map(|w| format!("{} is still frozen", client_target(w)))
            .collect())
    }
}
