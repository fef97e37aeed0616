//! What a violation's explanation is: its mechanism, a [`Cause`], and the evidence for it, an
//! [`Explanation`]. The rules that make one are beside: [`super::double_grant`],
//! [`super::lost_writes`], and the fencing and stuck-lock checkers' own.

use serde::{Deserialize, Serialize};

use crate::timeline::Spell;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// A node that granted the lock was restarted without the key and granted it again.
    RestartHazard,
    /// A node's clock jumped forward and expired the key early.
    ClockJump,
    /// The master holding the key went away and a replica without it was promoted.
    Failover,
    /// Two masters at once: a cut-off master went on granting while another was promoted.
    SplitBrain,
    /// A holder frozen inside its critical section outlived its lease.
    Zombie,
    /// A holder whose network was cut outlived its lease.
    CutOffHolder,
    /// A holder outlived its lease with no fault on it (its nodes, its client group's links): its
    /// work took longer than the lease.
    SlowHolder,
    /// A holder past its lease deleted the next holder's key.
    Hijack,
    /// A client crashed between taking the lock and giving it a lease.
    CrashedClient,
    /// A holder's library stopped renewing its lease after one renewal failed and told it
    /// nothing: the holder went on past its lease.
    RenewalStopped,
    /// The lock did not exclude: it was granted twice in a run with no fault anywhere and no
    /// release between, so the library set no key, one that did not last its lease, or let
    /// a client in without one.
    NoExclusion,
    /// A lock key outlived every lease with no fault anywhere: it was set without the expiry
    /// its lease promised.
    NoExpiry,
    /// A lock refused everyone after an attempt that failed while its client's links were
    /// faulted: the attempt had joined the lock's queue (a ZooKeeper contender node, in a
    /// session that lives on) and its library's cleanup met the fault and gave up unseen,
    /// leaving it first in line once the holder before it released.
    OrphanedAttempt,
    /// A holder past its lease asked its library whether it still held the lock, after
    /// another client had been granted it and with nothing cutting it off at that moment, and
    /// was told yes: the library answers from a flag of its own that losing the lock did not
    /// reset (kazoo's `Lock.is_acquired` after its session was lost).
    StaleOwnership,
    /// A lock refused everyone after its holder's release of a key that never expires was
    /// refused by the holder's own library, with no other lease to explain the key: the
    /// library had forgotten the lock (redis-py's `Lock.release()` drops its token before it
    /// asks Redis, so a release that met a fault cannot be tried again) and the key stayed.
    ReleaseLost,
    /// A holder whose lock lives with its session was cut off for longer than that session
    /// while its acquire waited, and granted after the cut: its library had given the session
    /// up and made a new one, then took the place the lost session had made in the lock's
    /// queue for its own (Curator's `InterProcessMutex`, CURATOR-604); the servers expire the
    /// lost session in their own time and delete that place with it, and grant the next.
    SessionLostInAcquire,
    /// A holder whose lock lives with its connection (a PostgreSQL or MariaDB session lock)
    /// had that connection reset, cut or slowed by a fault on its links during its hold: the
    /// session ended with the connection, and the lock with it, at once, while the holder
    /// could learn of it only at its next request to the server.
    ConnectionLost,
    /// No mechanism splitbrain knows explains it.
    Unexplained,
}

impl Cause {
    /// Every cause, in the order of the enum.
    pub const ALL: [Cause; 18] = [
        Cause::RestartHazard,
        Cause::ClockJump,
        Cause::Failover,
        Cause::SplitBrain,
        Cause::Zombie,
        Cause::CutOffHolder,
        Cause::SlowHolder,
        Cause::Hijack,
        Cause::CrashedClient,
        Cause::RenewalStopped,
        Cause::NoExclusion,
        Cause::NoExpiry,
        Cause::OrphanedAttempt,
        Cause::StaleOwnership,
        Cause::ReleaseLost,
        Cause::SessionLostInAcquire,
        Cause::ConnectionLost,
        Cause::Unexplained,
    ];

    /// The cause as files and flags write it (`renewal-stopped`), which is its label with
    /// hyphens for spaces and its serde name.
    pub fn key(self) -> String {
        self.label().replace(' ', "-")
    }

    /// The cause whose [`Cause::key`] is `key`.
    pub fn from_key(key: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|cause| cause.key() == key)
    }

    pub fn label(self) -> &'static str {
        match self {
            Cause::RestartHazard => "restart hazard",
            Cause::ClockJump => "clock jump",
            Cause::Failover => "failover",
            Cause::SplitBrain => "split brain",
            Cause::Zombie => "zombie",
            Cause::CutOffHolder => "cut-off holder",
            Cause::SlowHolder => "slow holder",
            Cause::Hijack => "hijack",
            Cause::CrashedClient => "crashed client",
            Cause::RenewalStopped => "renewal stopped",
            Cause::NoExclusion => "no exclusion",
            Cause::NoExpiry => "no expiry",
            Cause::OrphanedAttempt => "orphaned attempt",
            Cause::StaleOwnership => "stale ownership",
            Cause::ReleaseLost => "release lost",
            Cause::SessionLostInAcquire => "session lost in acquire",
            Cause::ConnectionLost => "connection lost",
            Cause::Unexplained => "unexplained",
        }
    }
}

/// A violation's mechanism and the evidence for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub cause: Cause,
    /// One sentence, from the history alone.
    pub sentence: String,
    /// `index` of the ops it rests on: the acquires' invokes, the nemesis starts and stops.
    pub ops: Vec<u64>,
    /// The nodes (and client workers) it names: a report highlights their lanes.
    pub nodes: Vec<String>,
    /// The node events it names.
    pub spells: Vec<Spell>,
}

impl Explanation {
    pub(crate) fn new(cause: Cause, sentence: String) -> Explanation {
        Explanation {
            cause,
            sentence,
            ops: Vec::new(),
            nodes: Vec::new(),
            spells: Vec::new(),
        }
    }

    /// `[restart hazard] n3 granted both: ...`: the sentence as a summary line shows it.
    pub fn line(&self) -> String {
        format!("[{}] {}", self.cause.label(), self.sentence)
    }
}

#[cfg(test)]
mod tests {
    use super::Cause;

    #[test]
    fn every_cause_is_listed_once_and_its_key_is_its_serde_name() {
        for (i, cause) in Cause::ALL.into_iter().enumerate() {
            assert_eq!(Cause::ALL.iter().position(|c| *c == cause), Some(i));
            let serde_name = serde_json::to_string(&cause).unwrap();
            assert_eq!(serde_name, format!("\"{}\"", cause.key()));
            assert_eq!(Cause::from_key(&cause.key()), Some(cause));
        }
        assert_eq!(
            Cause::from_key("renewal stopped"),
            None,
            "keys have hyphens"
        );
    }
}
