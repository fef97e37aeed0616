//! The time and memory all keys' searches share (rule 8 of the checker), and each search's
//! account of the memory it holds.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use super::Limits;

/// Memory is reserved from the shared budget in chunks of this many bytes.
const RESERVATION: usize = 64 << 10;

/// The time and memory that all keys' searches share, and the flag that stops them.
pub(crate) struct Budget {
    deadline: Option<Instant>,
    memory_bound: usize,
    reserved: AtomicUsize,
    peak: AtomicUsize,
    states: AtomicU64,
    cancelled: AtomicBool,
}

/// Why a search stopped before a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    TimeLimit,
    MemoryBound,
    /// Another key was found not linearizable.
    Cancelled,
}

impl Budget {
    pub fn new(limits: Limits) -> Budget {
        Budget {
            deadline: Instant::now().checked_add(limits.time),
            memory_bound: limits.memory_bytes,
            reserved: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            states: AtomicU64::new(0),
            cancelled: AtomicBool::new(false),
        }
    }

    /// Stops every search still running: the verdict is known.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Configurations entered, over all keys.
    pub fn states(&self) -> u64 {
        self.states.load(Ordering::Relaxed)
    }

    pub fn add_states(&self, states: u64) {
        self.states.fetch_add(states, Ordering::Relaxed);
    }

    /// The most memory reserved at once, over all keys.
    pub fn peak_bytes(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Why a search must stop now, if it must.
    pub fn stop(&self) -> Option<Stop> {
        if self.cancelled.load(Ordering::Relaxed) {
            Some(Stop::Cancelled)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stop::TimeLimit)
        } else {
            None
        }
    }

    /// Takes `bytes` from the memory bound, unless that would exceed it.
    fn reserve(&self, bytes: usize) -> bool {
        let granted =
            self.reserved
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |reserved| {
                    reserved
                        .checked_add(bytes)
                        .filter(|&total| total <= self.memory_bound)
                });
        match granted {
            Ok(before) => {
                self.peak.fetch_max(before + bytes, Ordering::Relaxed);
                true
            }
            Err(_) => false,
        }
    }

    fn release(&self, bytes: usize) {
        self.reserved.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// One search's memory: the bytes it holds, as estimated, and those it reserved from the
/// budget for them (given back when the account is dropped).
pub(crate) struct Memory<'b> {
    budget: &'b Budget,
    bytes: usize,
    reserved: usize,
}

impl<'b> Memory<'b> {
    pub fn new(budget: &'b Budget) -> Self {
        Memory {
            budget,
            bytes: 0,
            reserved: 0,
        }
    }

    /// Counts `bytes` more held, reserving from the budget as needed; call it before
    /// allocating.
    pub fn charge(&mut self, bytes: usize) -> Result<(), Stop> {
        self.bytes += bytes;
        if self.bytes > self.reserved {
            let needed = self.bytes - self.reserved;
            let granted = [needed + RESERVATION, needed]
                .into_iter()
                .find(|&bytes| self.budget.reserve(bytes));
            match granted {
                Some(granted) => self.reserved += granted,
                None => {
                    self.bytes -= bytes;
                    return Err(Stop::MemoryBound);
                }
            }
        }
        Ok(())
    }

    /// Counts `bytes` fewer held; the reservation stays, for the search's next growth.
    pub fn free(&mut self, bytes: usize) {
        self.bytes -= bytes;
    }
}

impl Drop for Memory<'_> {
    fn drop(&mut self) {
        self.budget.release(self.reserved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn memory_is_reserved_up_to_the_bound_and_given_back() {
        let budget = Budget::new(Limits {
            time: Duration::from_secs(1),
            memory_bytes: 100 << 10,
        });
        let mut first = Memory::new(&budget);
        first.charge(10 << 10).unwrap();
        let mut second = Memory::new(&budget);
        second.charge(20 << 10).unwrap();
        assert_eq!(second.charge(80 << 10), Err(Stop::MemoryBound));
        assert_eq!(second.bytes, 20 << 10);
        drop(first);
        second.charge(60 << 10).unwrap();
        assert!(budget.peak_bytes() <= 100 << 10);
        drop(second);
        assert_eq!(budget.reserved.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn cancelling_stops_every_search() {
        let budget = Budget::new(Limits::default());
        assert_eq!(budget.stop(), None);
        budget.cancel();
        assert_eq!(budget.stop(), Some(Stop::Cancelled));
        let expired = Budget::new(Limits {
            time: Duration::ZERO,
            memory_bytes: 0,
        });
        assert_eq!(expired.stop(), Some(Stop::TimeLimit));
    }
}
