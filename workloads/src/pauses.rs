//! Client pauses: the zombie maker. A paused client stops dead inside its critical section
//! (and any lease watchdog it runs stops with it), then carries on as if no time had passed.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    /// Freeze for this long at the next moment inside the critical section.
    Armed(Duration),
    Frozen,
}

/// One switch per client worker, shared by the workload (which obeys) and the nemesis (which
/// flips). Cloning shares the switches.
#[derive(Clone)]
pub struct ClientPauses {
    slots: Arc<Vec<watch::Sender<State>>>,
}

impl ClientPauses {
    /// Switches for `workers` client workers, all running.
    pub fn new(workers: usize) -> ClientPauses {
        ClientPauses {
            slots: Arc::new(
                (0..workers)
                    .map(|_| watch::Sender::new(State::Running))
                    .collect(),
            ),
        }
    }

    pub fn workers(&self) -> usize {
        self.slots.len()
    }

    /// Arms worker `w`: inside its next critical section it freezes for `pause`.
    pub fn arm(&self, worker: usize, pause: Duration) {
        if let Some(slot) = self.slots.get(worker) {
            slot.send_replace(State::Armed(pause));
        }
    }

    /// Waits (at most `patience`) for worker `w` to come out of a freeze, then disarms it if
    /// it never froze. Returns whether it froze.
    pub async fn settle(&self, worker: usize, patience: Duration) -> bool {
        let Some(slot) = self.slots.get(worker) else {
            return false;
        };
        let mut state = slot.subscribe();
        let _ = tokio::time::timeout(patience, state.wait_for(|s| *s != State::Frozen)).await;
        let disarmed = slot.send_if_modified(|s| {
            let armed = matches!(s, State::Armed(_));
            if armed {
                *s = State::Running;
            }
            armed
        });
        !disarmed
    }

    /// Whether worker `w` is armed: it freezes at its next checkpoint.
    pub fn is_armed(&self, worker: usize) -> bool {
        self.slots
            .get(worker)
            .is_some_and(|slot| matches!(*slot.borrow(), State::Armed(_)))
    }

    /// Lets every worker go on at once, frozen or armed.
    pub fn thaw_all(&self) {
        for slot in self.slots.iter() {
            slot.send_replace(State::Running);
        }
    }

    /// Workers still frozen or armed.
    pub fn held(&self) -> Vec<usize> {
        (0..self.slots.len())
            .filter(|&w| *self.slots[w].borrow() != State::Running)
            .collect()
    }

    /// Called by worker `w` inside its critical section: if it is armed, it freezes here for
    /// the armed time (or until [`ClientPauses::thaw_all`]). Returns how long it was frozen.
    pub async fn checkpoint(&self, worker: usize) -> Duration {
        let Some(slot) = self.slots.get(worker) else {
            return Duration::ZERO;
        };
        let mut pause = None;
        slot.send_if_modified(|s| match *s {
            State::Armed(d) => {
                pause = Some(d);
                *s = State::Frozen;
                true
            }
            _ => false,
        });
        let Some(pause) = pause else {
            return Duration::ZERO;
        };
        let frozen_at = tokio::time::Instant::now();
        let mut state = slot.subscribe();
        let _ = tokio::time::timeout(pause, state.wait_for(|s| *s != State::Frozen)).await;
        slot.send_replace(State::Running);
        frozen_at.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn an_armed_worker_freezes_at_its_checkpoint_for_the_armed_time() {
        let pauses = ClientPauses::new(2);
        // Not armed: the checkpoint passes straight through.
        pauses.checkpoint(0).await;
        pauses.arm(1, Duration::from_millis(100));
        let started = Instant::now();
        let worker = {
            let pauses = pauses.clone();
            tokio::spawn(async move { pauses.checkpoint(1).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(pauses.held(), [1], "frozen");
        assert!(pauses.settle(1, Duration::from_secs(5)).await, "it froze");
        worker.await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert!(pauses.held().is_empty());
    }

    #[tokio::test]
    async fn a_worker_that_never_holds_a_lock_is_disarmed() {
        let pauses = ClientPauses::new(1);
        pauses.arm(0, Duration::from_secs(60));
        assert!(!pauses.settle(0, Duration::from_millis(10)).await);
        assert!(pauses.held().is_empty());
    }

    #[tokio::test]
    async fn thaw_all_wakes_a_frozen_worker_early() {
        let pauses = ClientPauses::new(1);
        pauses.arm(0, Duration::from_secs(60));
        let worker = {
            let pauses = pauses.clone();
            tokio::spawn(async move { pauses.checkpoint(0).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        pauses.thaw_all();
        tokio::time::timeout(Duration::from_secs(5), worker)
            .await
            .unwrap()
            .unwrap();
    }
}
