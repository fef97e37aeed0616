//! Client crashes: a client process that dies in the middle of taking a lock, between two
//! commands that should have been one (SETNX, then EXPIRE), or just after the lock command,
//! without ever releasing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One crash switch per client worker, shared by the nemesis (which arms) and the clients
/// (which crash at their next crash point). Cloning shares the switches.
#[derive(Clone, Default)]
pub struct ClientCrashes {
    armed: Arc<Vec<AtomicBool>>,
    /// Whether each worker's client crashed since the worker last asked
    /// ([`ClientCrashes::took_crash`]).
    crashed: Arc<Vec<AtomicBool>>,
}

impl ClientCrashes {
    /// Switches for `workers` client workers, none armed.
    pub fn new(workers: usize) -> ClientCrashes {
        let switches = || Arc::new((0..workers).map(|_| AtomicBool::new(false)).collect());
        ClientCrashes {
            armed: switches(),
            crashed: switches(),
        }
    }

    /// Worker `w` crashes at its next crash point.
    pub fn arm(&self, worker: usize) {
        if let Some(armed) = self.armed.get(worker) {
            armed.store(true, Ordering::SeqCst);
        }
    }

    /// Disarms worker `w`; returns whether it was still armed (it never reached a crash point).
    pub fn disarm(&self, worker: usize) -> bool {
        self.armed
            .get(worker)
            .is_some_and(|armed| armed.swap(false, Ordering::SeqCst))
    }

    /// Whether worker `w`'s client crashed at a crash point since the last time this was
    /// asked. Every crash point comes after the servers granted the lock (SETNX answered 1,
    /// the lock command answered), so such a client died holding it.
    pub fn took_crash(&self, worker: usize) -> bool {
        self.crashed
            .get(worker)
            .is_some_and(|crashed| crashed.swap(false, Ordering::SeqCst))
    }

    /// Workers still armed.
    pub fn armed(&self) -> Vec<usize> {
        (0..self.armed.len())
            .filter(|&w| self.armed[w].load(Ordering::SeqCst))
            .collect()
    }

    /// The crash point worker `w`'s client consults.
    pub fn point(&self, worker: usize) -> CrashPoint {
        CrashPoint {
            crashes: self.clone(),
            worker,
        }
    }
}

/// Where one client may crash: a client that has such a moment asks [`CrashPoint::crash_now`]
/// there, and if it says yes, gives up the attempt as a dead process would, without cleaning up.
#[derive(Clone, Default)]
pub struct CrashPoint {
    crashes: ClientCrashes,
    worker: usize,
}

impl CrashPoint {
    /// Whether the client crashes here; the crash happens once per arming.
    pub fn crash_now(&self) -> bool {
        let crashes = self.crashes.disarm(self.worker);
        if let (true, Some(crashed)) = (crashes, self.crashes.crashed.get(self.worker)) {
            crashed.store(true, Ordering::SeqCst);
        }
        crashes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_armed_worker_crashes_once_at_its_next_crash_point() {
        let crashes = ClientCrashes::new(2);
        let (zero, one) = (crashes.point(0), crashes.point(1));
        assert!(!one.crash_now());
        crashes.arm(1);
        assert_eq!(crashes.armed(), [1]);
        assert!(!zero.crash_now());
        assert!(one.crash_now());
        assert!(!one.crash_now(), "one crash per arming");
        assert!(crashes.took_crash(1), "the worker learns of the crash");
        assert!(!crashes.took_crash(1), "once");
        assert!(!crashes.took_crash(0));
        assert!(!crashes.disarm(1));
        assert!(!CrashPoint::default().crash_now());
    }
}
