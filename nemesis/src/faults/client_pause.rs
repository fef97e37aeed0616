use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::Rng;
use splitbrain_compose::ComposeError;

use super::{client_target, client_worker, Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// Freeze one client worker inside its next critical section for about `--client-pause`, lease
/// watchdog and all; then it carries on as if no time had passed: the article's zombie.
/// Targets are named `client-<worker>`. The fault's window runs from arming the client to its
/// thaw, so it covers the freeze whenever within it the client took the lock.
pub struct ClientPause;

fn pause(action: &Action) -> Duration {
    Duration::from_millis(action.params["pause_ms"].as_u64().unwrap_or_default())
}

#[async_trait]
impl Fault for ClientPause {
    fn name(&self) -> &'static str {
        "client-pause"
    }

    fn summary(&self) -> &'static str {
        "freeze a client inside its critical section for about --client-pause (a zombie)"
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        if layout.clients == 0 {
            return Err("client-pause needs at least one client".into());
        }
        Ok(())
    }

    fn plan(&self, layout: &Layout, options: &NemesisOptions, rng: &mut StdRng) -> Action {
        let worker = rng.random_range(0..layout.clients.max(1));
        let pause = options.client_pause.mul_f64(rng.random_range(0.75..1.25));
        Action {
            targets: vec![client_target(worker)],
            params: serde_json::json!({ "pause_ms": pause.as_millis() as u64 }),
        }
    }

    /// The time the armed client gets to take the lock (one to two pauses, since it contends
    /// with the others), on top of the pause itself.
    fn hold(&self, options: &NemesisOptions, rng: &mut StdRng) -> Duration {
        options.client_pause.mul_f64(rng.random_range(1.0..2.0))
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        for name in &action.targets {
            target.clients.arm(client_worker(name), pause(action));
        }
        Ok(Started::default())
    }

    async fn stop(&self, target: &Target, action: &Action) -> Result<(), ComposeError> {
        for name in &action.targets {
            // A client frozen late in the window comes out of it before the fault ends.
            target
                .clients
                .settle(client_worker(name), pause(action))
                .await;
        }
        Ok(())
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
