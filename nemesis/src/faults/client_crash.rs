use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::Rng;
use splitbrain_compose::ComposeError;

use super::{client_target, client_worker, Action, Fault, Layout, Started, Target};
use crate::NemesisOptions;

/// Crash one client worker at its next crash point: between SETNX and EXPIRE for
/// `setnx-expire`, just after the lock command for the single-instance clients. The crashed
/// process never releases; the worker goes on as a new process. Targets are `client-<worker>`.
/// Clients without a crash point (Redlock, exec) are never crashed.
pub struct ClientCrash;

#[async_trait]
impl Fault for ClientCrash {
    fn name(&self) -> &'static str {
        "client-crash"
    }

    fn summary(&self) -> &'static str {
        "crash a client right after its lock command (between SETNX and EXPIRE)"
    }

    fn fits(&self, layout: &Layout) -> Result<(), String> {
        if layout.clients == 0 {
            return Err("client-crash needs at least one client".into());
        }
        Ok(())
    }

    fn plan(&self, layout: &Layout, _options: &NemesisOptions, rng: &mut StdRng) -> Action {
        Action::on(vec![client_target(
            rng.random_range(0..layout.clients.max(1)),
        )])
    }

    /// Long enough for the armed client to win the lock among the others.
    fn hold(&self, options: &NemesisOptions, rng: &mut StdRng) -> Duration {
        options.interval.mul_f64(rng.random_range(2.0..4.0))
    }

    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError> {
        for name in &action.targets {
            target.crashes.arm(client_worker(name));
        }
        Ok(Started::default())
    }

    async fn stop(&self, target: &Target, action: &Action) -> Result<(), ComposeError> {
        for name in &action.targets {
            target.crashes.disarm(client_worker(name));
        }
        Ok(())
    }

    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError> {
        for worker in target.crashes.armed() {
            target.crashes.disarm(worker);
        }
        Ok(())
    }

    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError> {
        Ok(target
            .crashes
            .armed()
            .into_iter()
            .map(|w| format!("{} is still armed to crash", client_target(w)))
            .collect())
    }
}
