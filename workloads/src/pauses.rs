//! Client pauses: the zombie maker. A paused client stops dead inside its critical section
//! (and any lease watchdog it runs stops with it), then carries on as if no time had passed.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// Held while a worker claims an armed pause, so that only one freezes.
    claim: Arc<Mutex<()>>,
    /// When each worker last came out of a freeze: the end of the pause as it acted, which
    /// the nemesis records, as its stop comes later.
    thawed: Arc<Vec<Mutex<Option<Instant>>>>,
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
            claim: Arc::default(),
            thawed: Arc::new((0..workers).map(|_| Mutex::new(None)).collect()),
        }
    }

    pub fn workers(&self) -> usize {
        self.slots.len()
    }

    /// Arms every worker: the first to enter a critical section (the next holder of a lock)
    /// freezes there for `pause`, and the others are disarmed. A pause aimed at a worker chosen
    /// in advance mostly lands on one that holds nothing, and makes no zombie.
    pub fn arm_next_holder(&self, pause: Duration) {
        for slot in self.slots.iter() {
            slot.send_replace(State::Armed(pause));
        }
    }

    /// Waits (at most `patience`) for an armed pause to freeze a worker; returns which one.
    /// If none froze by then, every worker is disarmed.
    pub async fn wait_frozen(&self, patience: Duration) -> Option<usize> {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            let frozen = (0..self.slots.len()).find(|&w| *self.slots[w].borrow() == State::Frozen);
            if frozen.is_some() {
                return frozen;
            }
            if tokio::time::Instant::now() >= deadline {
                let _claim = self.claim.lock().unwrap_or_else(|e| e.into_inner());
                for slot in self.slots.iter() {
                    slot.send_if_modified(disarm);
                }
                // A worker may have frozen just before the deadline.
                return (0..self.slots.len()).find(|&w| *self.slots[w].borrow() == State::Frozen);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
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
        let disarmed = slot.send_if_modified(disarm);
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
        for worker in 0..self.slots.len() {
            self.thaw(worker);
        }
    }

    /// When worker `w` last came out of a freeze, if it ever froze.
    pub fn thawed_at(&self, worker: usize) -> Option<Instant> {
        let thawed = self.thawed.get(worker)?;
        *thawed.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn thaw(&self, worker: usize) {
        if self.slots[worker].send_replace(State::Running) == State::Frozen {
            *self.thawed[worker]
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
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
        {
            let _claim = self.claim.lock().unwrap_or_else(|e| e.into_inner());
            slot.send_if_modified(|s| match *s {
                State::Armed(d) => {
                    pause = Some(d);
                    *s = State::Frozen;
                    true
                }
                _ => false,
            });
            if pause.is_some() {
                for (other, slot) in self.slots.iter().enumerate() {
                    if other != worker {
                        slot.send_if_modified(disarm);
                    }
                }
            }
        }
        let Some(pause) = pause else {
            return Duration::ZERO;
        };
        let frozen_at = tokio::time::Instant::now();
        let mut state = slot.subscribe();
        let _ = tokio::time::timeout(pause, state.wait_for(|s| *s != State::Frozen)).await;
        self.thaw(worker);
        frozen_at.elapsed()
    }
}

/// Disarms a switch that is armed; says whether it was.
fn disarm(state: &mut State) -> bool {
    let armed = matches!(state, State::Armed(_));
    if armed {
        *state = State::Running;
    }
    armed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn the_next_worker_to_hold_a_lock_freezes_and_no_other() {
        let pauses = ClientPauses::new(3);
        pauses.arm_next_holder(Duration::from_millis(100));
        let started = Instant::now();
        let first = {
            let pauses = pauses.clone();
            tokio::spawn(async move { pauses.checkpoint(1).await })
        };
        assert_eq!(pauses.wait_frozen(Duration::from_secs(5)).await, Some(1));
        assert_eq!(pauses.held(), [1], "the others are disarmed");
        // Another worker entering its critical section now passes straight through.
        assert_eq!(pauses.checkpoint(2).await, Duration::ZERO);
        assert!(pauses.settle(1, Duration::from_secs(5)).await, "it froze");
        assert!(first.await.unwrap() >= Duration::from_millis(100));
        assert!(started.elapsed() >= Duration::from_millis(100));
        let thawed = pauses.thawed_at(1).expect("worker 1 thawed");
        assert!(thawed >= started + Duration::from_millis(100));
        assert!(thawed <= Instant::now());
        assert_eq!(pauses.thawed_at(2), None, "worker 2 never froze");
        assert!(pauses.held().is_empty());
    }

    #[tokio::test]
    async fn with_no_holder_in_time_every_worker_is_disarmed() {
        let pauses = ClientPauses::new(2);
        pauses.arm_next_holder(Duration::from_secs(60));
        assert_eq!(pauses.wait_frozen(Duration::from_millis(10)).await, None);
        assert!(pauses.held().is_empty());
        assert_eq!(pauses.checkpoint(0).await, Duration::ZERO);
    }

    #[tokio::test]
    async fn thaw_all_wakes_a_frozen_worker_early() {
        let pauses = ClientPauses::new(1);
        pauses.arm_next_holder(Duration::from_secs(60));
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
