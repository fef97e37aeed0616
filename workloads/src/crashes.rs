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
}

impl ClientCrashes {
    /// Switches for `workers` client workers, none armed.
    pub fn new(workers: usize) -> ClientCrashes {
        ClientCrashes {
            armed: Arc::new((0..workers).map(|_| AtomicBool::new(false)).collect()),
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
        self.crashes.disarm(self.worker)
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
        assert!(!crashes.disarm(1));
        assert!(!CrashPoint::default().crash_now());
    }
}
