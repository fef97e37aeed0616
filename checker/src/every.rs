//! Every checker of a lock history at once, fed one stream of events: what `splitbrain check`
//! and the end of a run compute, but the linearizability search, which needs the history
//! whole.

use crate::coverage::RunFacts;
use crate::stream::{Checker, Event, Outline};
use crate::{acquisition_stats, coverage, fencing, lock_safety, lost_writes, stats, stuck_lock};

/// Every checker's result.
pub struct Verdicts {
    pub stats: stats::Stats,
    pub coverage: coverage::Coverage,
    pub lock_safety: lock_safety::LockSafety,
    pub lost_writes: lost_writes::LostWrites,
    pub fencing: fencing::Fencing,
    pub stuck_lock: stuck_lock::StuckLock,
    pub acquisition: acquisition_stats::AcquisitionStats,
}

/// Every checker, fed one stream of events.
pub struct EveryChecker {
    stats: stats::StatsChecker,
    coverage: coverage::CoverageChecker,
    lock_safety: lock_safety::LockSafetyChecker,
    lost_writes: lost_writes::LostWritesChecker,
    fencing: fencing::FencingChecker,
    stuck_lock: stuck_lock::StuckLockChecker,
    acquisition: acquisition_stats::AcquisitionChecker,
}

impl EveryChecker {
    pub fn new(outline: &Outline, facts: RunFacts) -> EveryChecker {
        let mut outline = outline.clone();
        outline.known_workers = facts.concurrency.filter(|&c| c > 0);
        let outline = &outline;
        EveryChecker {
            stats: stats::StatsChecker::new(&stats::needed(outline)),
            coverage: coverage::CoverageChecker::new(outline, facts),
            lock_safety: lock_safety::LockSafetyChecker::new(outline),
            lost_writes: lost_writes::LostWritesChecker::new(outline),
            fencing: fencing::FencingChecker::new(outline),
            stuck_lock: stuck_lock::StuckLockChecker::new(
                outline,
                stuck_bound(outline),
                facts.elections(),
            ),
            acquisition: acquisition_stats::AcquisitionChecker::default(),
        }
    }
}

impl Checker for EveryChecker {
    type Output = Verdicts;

    fn observe(&mut self, event: Event<'_>) {
        self.stats.observe(event);
        self.coverage.observe(event);
        self.lock_safety.observe(event);
        self.lost_writes.observe(event);
        self.fencing.observe(event);
        self.stuck_lock.observe(event);
        self.acquisition.observe(event);
    }

    fn finish(self) -> Verdicts {
        Verdicts {
            stats: self.stats.finish(),
            coverage: self.coverage.finish(),
            lock_safety: self.lock_safety.finish(),
            lost_writes: self.lost_writes.finish(),
            fencing: self.fencing.finish(),
            stuck_lock: self.stuck_lock.finish(),
            acquisition: self.acquisition.finish(),
        }
    }
}

/// How long a lock key may refuse everyone past its last lease before it counts as stuck:
/// one more TTL (the longest asked for), so that retry and clock noise never count.
pub fn stuck_bound(outline: &Outline) -> std::time::Duration {
    std::time::Duration::from_millis(outline.longest_ttl_ms.unwrap_or(1_000))
}
