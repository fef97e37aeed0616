//! The `stuck-lock` checker, for liveness: a lock key that outlives every lease that could
//! explain it, refusing everyone (the `SETNX` + `EXPIRE` deadlock: a client that dies between
//! the two leaves a key that never expires).
//!
//! Rules, each with a unit test below, per lock key:
//!
//! 1. The key may legitimately exist until **`held_until`**: the latest end of every lease that
//!    may have set or extended it so far. A lease comes from every `acquire` or `renew` that
//!    did not fail, and runs from its invoke (the earliest the server may have set the key) to
//!    the latest the key it set may live, with the op's TTL: the `ttl_ms` its invoke asked
//!    for, or the grant's `validity_ms` if longer (the key's lifetime in Redis, not the
//!    client's shorter validity). An op without either may have set a key that never
//!    expires: its lease never ends. A `fail`ed acquire or renew set nothing, but see below.
//!    - An `ok` op was carried out somewhere between its invoke and its `ok`: the key may live
//!      until the `ok` plus the TTL (an acquire that took seconds, a client program starting
//!      up, is not dated from its invoke).
//!    - A grant marked `renewal: silent` comes from a library that keeps renewing it without
//!      recording it: the key may live until the TTL after the holder's next `release`
//!      invoke on the key (the last renewal may have come just before it), or, with no
//!      release, until the history ends. So may one marked `renewal: connection`, a lock the
//!      server keeps while the holder's connection lives (a frozen holder's kernel keeps it).
//!    - A grant marked `renewal: unexpiring` set a key with no expiry at all: it may live until
//!      a release of it by its holder comes back `ok` (taken away) or `fail` (its library
//!      says it was not the holder's), and for good where none does (a release lost on the
//!      way leaves it, and no history tells whether it arrived).
//!    - An `info` op may be carried out by the server after the client gave up on it (a paused
//!      node answers when it wakes, a partitioned one when the partition heals): the key may
//!      live until the TTL after its `info`, or after the stop of every fault active at its
//!      `info` if later (the end of the history for a fault never stopped). When the history
//!      has any silently renewed grant, its library may have won an unknown acquire too and
//!      kept renewing it: such an acquire may keep the key until the history ends.
//!    - An op never completed may take effect at any time: until the history ends.
//!    - Where a consensus group keeps the leases (etcd), leader elections lengthen them: no
//!      lease expires while there is no leader, and a new leader extends every lease to its TTL
//!      plus an election timeout. A fault on the servers (not one on clients or their links
//!      alone) brings elections while it lasts and one more after it stops (a member cut off
//!      with a higher term forces one when it rejoins; etcd 3.4 runs without pre-vote). So a
//!      lease running while a fault was active, or within an election after it stopped, may
//!      live until the fault's stop plus two elections (the one it forces, and the
//!      extension) plus the TTL; measured: an etcd lock key whose release found no leader
//!      outlived its TTL by 7 s across such elections, queueing every later `Lock`.
//!    - An `acquire` that failed for want of nodes (neither held nor a split vote: Redlock's
//!      "no quorum" after timeouts) counts as an `info` op here: the nodes that never answered
//!      may carry out its request when they wake (measured: every node paused for 1.8 s, each
//!      queued `SET NX PX` ran at the resume and kept the key 2 s more). For lock safety it
//!      stays a failure: its client never took itself for the holder.
//! 2. An acquire refused because the lock is held ([`Cause::Held`]) is **stuck** when it was
//!    invoked after `held_until` and refused more than `bound` after it. Leases are counted up
//!    to the refusal, so an acquire running concurrently with the refused one explains it. A
//!    split vote says only that contenders collided (their failed attempts set keys too, then
//!    removed them), and unavailability says nothing about the key: neither counts. Nor does a
//!    refusal of an acquire that ran while a fault was on the servers (a kill, a pause, a
//!    partition, until its stop was recorded, once the nodes answered again): it may have
//!    found too few servers, which a library that answers only yes or no reports as held
//!    (pottery's Redlock, with three of five masters killed).
//! 3. A **stuck period** begins with the first stuck refusal and lasts until the next acquire
//!    on the key returns `ok` (recovered) or the history ends (not recovered). It is reported
//!    from `free_from`, the `held_until` of its first refusal: for `stuck_ms` the key kept out
//!    everyone though nobody should have held it. Its later stuck refusals are counted in it.
//!
//! A stuck period is explained (`explanation`, below) as a release of a key with no expiry
//! that the holder's own library refused (it had forgotten the lock), a key set without its
//! expiry in a run with no fault, a client crashed while it held or was taking the lock, or an
//! attempt that failed under a link fault before the key's last lease ran out and left its
//! place in the lock's queue behind.
//!
//! Each key is one sweep over its events in time order: O(n log n) for n ops. The events wait
//! in a queue until nothing still pending can come before them, so memory is bounded by the
//! ops in flight, not the history's length.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use foldhash::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::acquisition::Cause;
use crate::every::{read_as, Registration, Role};
use crate::explain::cause::{Cause as Mechanism, Explanation};
use crate::explain::context::{client_group, Context};
use crate::operation::ms;
use crate::stream::{replay, Checker, Outline, Smallest, FORGET_EVERY};
use crate::timeline::{Spell, State, Timeline};
use crate::verdict::{Checked, REPORTED_VIOLATIONS};
use crate::words::{and_more, count, seconds};
use crate::windows::{Reach, Window};
use crate::{Op, OpType, Process, Renewal, Valid};

/// The result of the stuck-lock check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StuckLock {
    pub valid: Valid,
    /// How long past `held_until` a refusal must come to be stuck.
    pub bound_ms: f64,
    /// Acquires refused because the lock was held, all of which were checked.
    pub held_refusals: usize,
    /// Refusals that came inside a stuck period.
    pub stuck_refusals: usize,
    pub stuck_period_count: usize,
    /// Stuck periods the history ended in.
    pub unrecovered_count: usize,
    /// The first [`REPORTED_VIOLATIONS`] stuck periods, in order of their first refusal.
    pub stuck_periods: Vec<StuckPeriod>,
}

/// A time during which a lock key refused everyone though no lease could explain it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StuckPeriod {
    pub key: String,
    /// When the last lease that could explain the key ran out.
    pub free_from_ms: f64,
    /// When the op whose lease that was was invoked.
    #[serde(default)]
    pub last_lease_from_ms: f64,
    /// When the first stuck refusal came back.
    pub first_refused_ms: f64,
    /// When an acquire next succeeded, or the end of the history.
    pub until_ms: f64,
    /// `until_ms - free_from_ms`.
    pub stuck_ms: f64,
    pub refused_attempts: usize,
    pub recovered: bool,
    /// The acquires since the grant before it that failed while faults were on their
    /// clients' links, before its key's last lease ran out: what its explanation may blame.
    #[serde(skip)]
    pub faulted_attempts: Option<FaultedAttempts>,
    /// The last release since the grant before it that was refused while the key it would
    /// have taken away had no expiry: what its explanation may blame.
    #[serde(skip)]
    pub refused_release: Option<RefusedRelease>,
    /// Its mechanism.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
}

/// Acquires refused, or left unknown, while faults were on their clients' links.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultedAttempts {
    pub first: FaultedAttempt,
    pub last: FaultedAttempt,
    pub count: usize,
}

/// An acquire refused, or left unknown, while a fault was on its client's links.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultedAttempt {
    /// Its invoke and its completion.
    pub asked_ms: f64,
    pub at_ms: f64,
    pub process: u64,
}

/// A holder's release of a key with no expiry ([`Renewal::Unexpiring`]) that came back
/// `fail`: its library said the lock was not the holder's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefusedRelease {
    /// Its invoke and its completion.
    pub asked_ms: f64,
    pub at_ms: f64,
    pub process: u64,
}

/// Its line in the list of every checker.
pub const CHECKER: Registration = Registration {
    name: "stuck-lock",
    role: Role::Verdict,
    start: |outline, facts| {
        Box::new(
            StuckLockChecker::new(outline, bound(outline), facts.elections())
                .in_client_groups(facts.client_groups),
        )
    },
    read: read_as::<StuckLock>,
};

/// How long a lock key may refuse everyone past its last lease before it counts as stuck:
/// one more TTL (the longest asked for), so that retry and clock noise never count.
pub fn bound(outline: &Outline) -> Duration {
    Duration::from_millis(outline.longest_ttl_ms.unwrap_or(1_000))
}

/// Checks a history for lock keys that outlived every holder by more than `bound`.
/// `elections`: where a consensus group keeps the leases, how much a leader election may add
/// to a lease past its TTL (at least the election timeout); `None` where leases run out on the
/// server's clock alone (Redis).
pub fn check(history: &[Op], bound: Duration, elections: Option<Duration>) -> StuckLock {
    replay(
        history,
        StuckLockChecker::new(&Outline::of(history), bound, elections),
    )
}

/// The stuck-lock check as a stream. Each key's events are swept in time order (rule 3), but
/// they become known out of it: a lease counts from its op's invoke and is known at its
/// completion, or, for a grant kept until its release, at that release. So each key's events
/// wait in a queue until nothing still pending can come before them.
pub struct StuckLockChecker {
    bound: u64,
    end_of_history: u64,
    lifetimes: KeyLifetimes,
    /// Whether ops come in time order, so that a key's events can be swept before the end.
    sweeps_early: bool,
    now: u64,
    keys: HashMap<String, KeyState>,
    /// The invoke time of each process's acquire or renew still pending: its lease counts
    /// from there.
    pending: HashMap<Process, u64>,
    /// Grants kept until their holder's release, waiting for it, per holder and key.
    until_release: HashMap<(Process, String), Vec<KeptLease>>,
    since_sweeping: usize,
    /// How many events pass between two sweeps: fewer cost time, more cost memory.
    pub(crate) sweep_every: usize,
    held_refusals: usize,
    stuck_refusals: usize,
    periods: usize,
    unrecovered: usize,
    first_periods: Smallest<(u64, String), StuckPeriod>,
    /// What the faults did to each node and client, for the explanations.
    timeline: Timeline,
    workers: usize,
    /// How many client groups reach the nodes through links of their own (worker `w` in
    /// group `w % groups`); `None` where unknown: then a link fault may be any client's.
    client_groups: Option<u64>,
}

/// A grant whose key may live until a TTL after its holder's release, or, for a key with no
/// expiry, until a release comes back `ok` or `fail`.
struct KeptLease {
    invoked: u64,
    granted: u64,
    ttl_ms: Option<u64>,
    unexpiring: bool,
}

/// One key's sweep: the events not yet swept, and where the sweep stands.
#[derive(Default)]
struct KeyState {
    /// `(at, kind, value, process)`: kind orders events at one instant (module doc).
    queued: BinaryHeap<Reverse<(u64, u8, u64, u64)>>,
    held_until: u64,
    /// When the op whose lease ends at `held_until` was invoked.
    held_since: u64,
    /// The attempts since the last grant that failed while their clients' links were faulted.
    faulted_attempts: Option<FaultedAttempts>,
    /// The last release of a key with no expiry refused since the last grant.
    refused_release: Option<RefusedRelease>,
    open: Option<Open>,
}

impl StuckLockChecker {
    pub fn new(outline: &Outline, bound: Duration, elections: Option<Duration>) -> Self {
        StuckLockChecker {
            bound: u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX),
            end_of_history: outline.end,
            lifetimes: KeyLifetimes {
                faults: outline.windows(),
                silent_library: outline.silent_library,
                elections_ns: elections.map(|e| u64::try_from(e.as_nanos()).unwrap_or(u64::MAX)),
            },
            sweeps_early: outline.in_time_order,
            timeline: Timeline::of(&outline.nemesis),
            workers: outline.workers(),
            client_groups: None,
            now: 0,
            keys: HashMap::default(),
            pending: HashMap::default(),
            until_release: HashMap::default(),
            since_sweeping: 0,
            sweep_every: FORGET_EVERY,
            held_refusals: 0,
            stuck_refusals: 0,
            periods: 0,
            unrecovered: 0,
            first_periods: Smallest::new(REPORTED_VIOLATIONS),
        }
    }

    /// The run's client groups, where known (the explanations then blame a link fault only
    /// on the groups it reached).
    pub fn in_client_groups(mut self, groups: Option<usize>) -> Self {
        self.client_groups = groups.filter(|&g| g > 0).map(|g| g as u64);
        self
    }

    /// Whether a fault on the servers (a kill, a pause, a partition: not one on clients or
    /// their links alone) was on at some time between `from` and `to` (ns), until it was
    /// recorded stopped: an acquire refused then may have found too few servers, which a
    /// library that answers only yes or no (pottery's Redlock) reports as the lock held.
    fn servers_faulted(&self, from: u64, to: u64) -> bool {
        self.lifetimes
            .faults
            .iter()
            .any(|w| !Reach::of(&w.fault).spares_servers() && w.start <= to && w.stop >= from)
    }

    /// Whether a link fault reached `process`'s client group between `from` and `to` (ns).
    fn links_faulted(&self, process: Process, from: u64, to: u64) -> bool {
        let Process::Client(process) = process else {
            return false;
        };
        let groups = self.client_groups;
        links_of(&self.timeline, self.workers, groups, process, ms(from), ms(to))
            .next()
            .is_some()
    }

    fn queue(&mut self, key: &str, event: Event) {
        let queued = match event {
            Event::Lease { at, ends } => (at, 0, ends, 0),
            Event::Grant { at } => (at, 1, 0, 0),
            Event::FaultedAttempt { at, asked, process } => (at, 2, asked, process),
            Event::Refusal { at, invoked } => (at, 3, invoked, 0),
            Event::ReleaseRefused { at, asked, process } => (at, 4, asked, process),
        };
        let state = match self.keys.get_mut(key) {
            Some(state) => state,
            None => self.keys.entry(key.to_string()).or_default(),
        };
        state.queued.push(Reverse(queued));
    }

    /// Sweeps every key's events that nothing still unknown can come before.
    fn sweep(&mut self, until: u64) {
        self.since_sweeping = 0;
        for (key, state) in self.keys.iter_mut() {
            while let Some(&Reverse((at, kind, value, process))) = state.queued.peek() {
                if at >= until {
                    break;
                }
                state.queued.pop();
                let event = match kind {
                    0 => Event::Lease { at, ends: value },
                    1 => Event::Grant { at },
                    2 => Event::FaultedAttempt {
                        at,
                        asked: value,
                        process,
                    },
                    3 => Event::Refusal { at, invoked: value },
                    _ => Event::ReleaseRefused {
                        at,
                        asked: value,
                        process,
                    },
                };
                if let Some((period, recovered)) = state.step(event, self.bound) {
                    let until = if recovered { at } else { self.end_of_history };
                    self.stuck_refusals += period.refused_attempts;
                    self.periods += 1;
                    self.first_periods.push(
                        (period.first_refused, key.clone()),
                        period.to_period(key, until, recovered),
                    );
                }
            }
        }
    }

    /// A release that came back ends the grants of a key with no expiry that it came after:
    /// `ok`, the key is gone; `fail`, the library says it was not the holder's. One that did
    /// not come back may have left the key for good: those wait for another release or the
    /// end of the history.
    fn released(&mut self, invoke: &Op, completion: &Op) {
        if !matches!(completion.kind, OpType::Ok | OpType::Fail) {
            return;
        }
        let holder = (invoke.process, invoke.key.clone().unwrap_or_default());
        let Some(kept) = self.until_release.remove(&holder) else {
            return;
        };
        let (ended, waiting): (Vec<_>, Vec<_>) = kept
            .into_iter()
            .partition(|lease| lease.unexpiring && lease.granted <= invoke.time);
        if !waiting.is_empty() {
            self.until_release.insert(holder.clone(), waiting);
        }
        if ended.is_empty() {
            return;
        }
        for lease in ended {
            let ends = completion.time;
            self.queue(&holder.1, Event::Lease { at: lease.invoked, ends });
        }
        if let (OpType::Fail, Process::Client(process)) = (completion.kind, invoke.process) {
            let (at, asked) = (completion.time, invoke.time);
            self.queue(&holder.1, Event::ReleaseRefused { at, asked, process });
        }
    }

    /// The earliest time an event still to be queued may have.
    fn horizon(&self) -> u64 {
        let pending = self.pending.values().copied();
        let kept = self.until_release.values().flatten().map(|k| k.invoked);
        pending.chain(kept).fold(self.now, u64::min)
    }
}

impl Checker for StuckLockChecker {
    type Output = StuckLock;

    fn observe(&mut self, event: crate::stream::Event<'_>) {
        use crate::stream::Event as Seen;
        let (invoke, completion) = match event {
            Seen::Nemesis(_) => return,
            Seen::Invoke(op) => {
                self.now = self.now.max(op.time);
                match op.f.as_str() {
                    "acquire" | "renew" => {
                        self.pending.insert(op.process, op.time);
                    }
                    "release" if !self.until_release.is_empty() => {
                        let holder = (op.process, op.key.clone().unwrap_or_default());
                        // The release ends the grants it came after; one it came before
                        // (a history out of time order) waits for a later release, and one
                        // whose key never expires waits for this release to come back.
                        let kept = self.until_release.remove(&holder).unwrap_or_default();
                        let (ended, waiting): (Vec<_>, Vec<_>) = kept
                            .into_iter()
                            .partition(|lease| lease.granted <= op.time && !lease.unexpiring);
                        for lease in ended {
                            let ends = self.lifetimes.after(lease.invoked, lease.ttl_ms, op.time);
                            self.queue(
                                &holder.1,
                                Event::Lease {
                                    at: lease.invoked,
                                    ends,
                                },
                            );
                        }
                        if !waiting.is_empty() {
                            self.until_release.insert(holder, waiting);
                        }
                    }
                    _ => {}
                }
                return;
            }
            Seen::Complete { invoke, completion } => {
                self.now = self.now.max(completion.time);
                (invoke, Some(completion))
            }
            Seen::Abandoned(invoke) => (invoke, None),
        };
        if invoke.f == "release" {
            if let Some(completion) = completion {
                self.released(invoke, completion);
            }
            return;
        }
        let is_acquire = match invoke.f.as_str() {
            "acquire" => true,
            "renew" => false,
            _ => return,
        };
        self.pending.remove(&invoke.process);
        let key = invoke
            .key
            .as_deref()
            .or_else(|| completion.and_then(|op| op.key.as_deref()))
            .unwrap_or_default();
        let kept = completion.filter(|c| c.kind == OpType::Ok && kept_until_release(invoke, c));
        if let Some(granted) = kept {
            self.until_release
                .entry((invoke.process, key.to_string()))
                .or_default()
                .push(KeptLease {
                    invoked: invoke.time,
                    granted: granted.time,
                    ttl_ms: lease_ttl(invoke, completion),
                    unexpiring: granted.renewal == Some(Renewal::Unexpiring),
                });
        } else if let Some(ends) = self.lifetimes.latest_end(invoke, completion) {
            self.queue(
                key,
                Event::Lease {
                    at: invoke.time,
                    ends,
                },
            );
        }
        if let Some(completion) = completion.filter(|_| is_acquire) {
            let failed = match completion.kind {
                OpType::Fail => Cause::of(completion.error.as_deref()) == Cause::Held,
                OpType::Info => true,
                OpType::Ok | OpType::Invoke => false,
            };
            if failed && self.links_faulted(invoke.process, invoke.time, completion.time) {
                if let Process::Client(process) = invoke.process {
                    let (at, asked) = (completion.time, invoke.time);
                    self.queue(key, Event::FaultedAttempt { at, asked, process });
                }
            }
            match completion.kind {
                OpType::Ok => self.queue(
                    key,
                    Event::Grant {
                        at: completion.time,
                    },
                ),
                OpType::Fail if Cause::of(completion.error.as_deref()) == Cause::Held => {
                    self.held_refusals += 1;
                    if self.servers_faulted(invoke.time, completion.time) {
                        return;
                    }
                    self.queue(
                        key,
                        Event::Refusal {
                            at: completion.time,
                            invoked: invoke.time,
                        },
                    );
                }
                _ => {}
            }
        }
        self.since_sweeping += 1;
        if self.sweeps_early && self.since_sweeping >= self.sweep_every {
            self.sweep(self.horizon());
        }
    }

    fn finish(mut self) -> StuckLock {
        // A grant kept until a release that never came may keep its key to the end and past.
        for ((_, key), kept) in std::mem::take(&mut self.until_release) {
            for lease in kept {
                self.queue(
                    &key,
                    Event::Lease {
                        at: lease.invoked,
                        ends: u64::MAX,
                    },
                );
            }
        }
        self.sweep(u64::MAX);
        let end = self.end_of_history;
        for (key, state) in self.keys.iter_mut() {
            if let Some(period) = state.open.take() {
                self.stuck_refusals += period.refused_attempts;
                self.periods += 1;
                self.unrecovered += 1;
                self.first_periods.push(
                    (period.first_refused, key.clone()),
                    period.to_period(key, end, false),
                );
            }
        }
        StuckLock {
            valid: if self.periods > 0 {
                Valid::False
            } else {
                Valid::True
            },
            bound_ms: ms(self.bound),
            held_refusals: self.held_refusals,
            stuck_refusals: self.stuck_refusals,
            stuck_period_count: self.periods,
            unrecovered_count: self.unrecovered,
            stuck_periods: self
                .first_periods
                .into_sorted()
                .into_iter()
                .map(|mut period| {
                    let context = Context {
                        timeline: &self.timeline,
                        workers: self.workers,
                        groups: self.client_groups,
                    };
                    period.explanation =
                        Some(explanation(&period, &context, self.client_groups));
                    period
                })
                .collect(),
        }
    }
}

/// What rule 1 needs to know of a history to say how long a key an op set may live.
struct KeyLifetimes {
    faults: Vec<Window>,
    /// Some grant in the history was marked `renewal: silent`.
    silent_library: bool,
    /// How much a leader election may add to a lease, where a consensus group keeps them.
    elections_ns: Option<u64>,
}

impl KeyLifetimes {
    /// A lease that would end at `end`, lengthened by the leader elections of the faults
    /// active while it ran (or an election after one stopped): each may keep it until two
    /// elections and the TTL after the fault stops, and a lengthened lease may meet the next
    /// fault. A fault on clients or their links alone brings no election: the servers go on
    /// expiring sessions and leases as before (a client whose link is reset every second
    /// would otherwise keep every lease alive to the end of the run, hiding a stuck lock).
    fn through_elections(&self, from: u64, end: u64, ttl_ns: u64) -> u64 {
        let Some(election) = self.elections_ns else {
            return end;
        };
        let mut end = end;
        loop {
            let longer = self
                .faults
                .iter()
                .filter(|w| !Reach::of(&w.fault).spares_servers())
                .filter(|w| w.start < end && w.stop.saturating_add(election) > from)
                .map(|w| {
                    w.stop
                        .saturating_add(ttl_ns)
                        .saturating_add(election.saturating_mul(2))
                })
                .max()
                .unwrap_or(end);
            if longer <= end {
                return end;
            }
            end = longer;
        }
    }

    /// The latest a key set by an op invoked at `invoked` with `ttl_ms` may live, counted
    /// from `from` (`u64::MAX` without a TTL: it may never expire).
    fn after(&self, invoked: u64, ttl_ms: Option<u64>, from: u64) -> u64 {
        ttl_ms.map_or(u64::MAX, |ttl| {
            let ttl_ns = ttl.saturating_mul(1_000_000);
            let end = from.saturating_add(ttl_ns);
            self.through_elections(invoked, end, ttl_ns)
        })
    }

    /// Rule 1: the latest time the key an acquire or renew may have set could still exist, in
    /// nanoseconds (`u64::MAX`: it may never expire); `None` for an op that set nothing. A
    /// grant kept until its release is not this function's: its end waits for the release.
    fn latest_end(&self, invoke: &Op, completion: Option<&Op>) -> Option<u64> {
        let ttl = lease_ttl(invoke, completion);
        let Some(completion) = completion else {
            return Some(u64::MAX);
        };
        // A request to a frozen or cut-off node may be carried out when it wakes or the cut
        // heals, long after the client gave up: an info op, and an acquire that failed for
        // want of nodes (Redlock's "no quorum" after timeouts), which may have set the key on
        // the nodes that never answered.
        let late = |gave_up: u64| {
            let faults_end = self
                .faults
                .iter()
                .filter(|w| w.start <= gave_up && gave_up < w.stop)
                .map(|w| w.stop)
                .max()
                .unwrap_or(gave_up);
            // A fault never stopped has `stop` u64::MAX, and the sum saturates there.
            self.after(invoke.time, ttl, faults_end)
        };
        match completion.kind {
            OpType::Fail
                if invoke.f == "acquire"
                    && Cause::of(completion.error.as_deref()) == Cause::Unavailable =>
            {
                Some(late(completion.time))
            }
            OpType::Fail | OpType::Invoke => None,
            OpType::Ok => Some(self.after(invoke.time, ttl, completion.time)),
            OpType::Info if self.silent_library && invoke.f == "acquire" => Some(u64::MAX),
            OpType::Info => Some(late(completion.time)),
        }
    }
}

/// The TTL of the key an op set: the one its invoke asked for, or the grant's validity if
/// longer (the key's lifetime in Redis, not the client's shorter validity).
fn lease_ttl(invoke: &Op, completion: Option<&Op>) -> Option<u64> {
    invoke.ttl_ms.max(completion.and_then(|c| c.validity_ms))
}

/// A grant whose key may be kept until its holder releases it: renewed silently, kept by
/// the holder's connection, or set with no expiry.
fn kept_until_release(invoke: &Op, completion: &Op) -> bool {
    invoke.f == "acquire"
        && matches!(
            completion.renewal,
            Some(Renewal::Silent | Renewal::Connection | Renewal::Unexpiring)
        )
}

/// What happened to one key, in nanoseconds.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// An op that may have set or extended the key, from its invoke until `ends`.
    Lease { at: u64, ends: u64 },
    /// An acquire returned `ok`.
    Grant { at: u64 },
    /// An acquire by client `process` was refused, or its outcome left unknown, while a
    /// fault was on its client's links.
    FaultedAttempt { at: u64, asked: u64, process: u64 },
    /// An acquire invoked at `invoked` was refused because the lock was held.
    Refusal { at: u64, invoked: u64 },
    /// Client `process`'s release of a key with no expiry, invoked at `asked`, came back
    /// `fail`.
    ReleaseRefused { at: u64, asked: u64, process: u64 },
}

/// A stuck period still open, in nanoseconds.
struct Open {
    free_from: u64,
    last_lease_from: u64,
    faulted_attempts: Option<FaultedAttempts>,
    refused_release: Option<RefusedRelease>,
    first_refused: u64,
    refused_attempts: usize,
}

impl Open {
    fn to_period(&self, key: &str, until: u64, recovered: bool) -> StuckPeriod {
        StuckPeriod {
            key: key.to_string(),
            free_from_ms: ms(self.free_from),
            last_lease_from_ms: ms(self.last_lease_from),
            first_refused_ms: ms(self.first_refused),
            until_ms: ms(until),
            stuck_ms: ms(until - self.free_from),
            refused_attempts: self.refused_attempts,
            recovered,
            faulted_attempts: self.faulted_attempts,
            refused_release: self.refused_release,
            explanation: None,
        }
    }
}

impl KeyState {
    /// One step of the key's sweep, its events in time order (at one instant a lease counts
    /// first and a refusal last, so a tie never makes a refusal look stuck nor keeps a period
    /// open past a grant). Returns the period a grant closed.
    fn step(&mut self, event: Event, bound: u64) -> Option<(Open, bool)> {
        match event {
            Event::Lease { at, ends } => {
                if ends > self.held_until {
                    (self.held_until, self.held_since) = (ends, at);
                }
            }
            Event::Grant { .. } => {
                self.faulted_attempts = None;
                self.refused_release = None;
                return self.open.take().map(|period| (period, true));
            }
            // Only an attempt refused while a lease still explained the key can have left a
            // place in line before the key's last holder: one refused later is one of the
            // stuck period's own refusals.
            Event::FaultedAttempt { at, asked, process } if at <= self.held_until => {
                let attempt = FaultedAttempt {
                    asked_ms: ms(asked),
                    at_ms: ms(at),
                    process,
                };
                let seen = self.faulted_attempts.get_or_insert(FaultedAttempts {
                    first: attempt,
                    last: attempt,
                    count: 0,
                });
                seen.last = attempt;
                seen.count += 1;
            }
            Event::FaultedAttempt { .. } => {}
            Event::ReleaseRefused { at, asked, process } => {
                self.refused_release = Some(RefusedRelease {
                    asked_ms: ms(asked),
                    at_ms: ms(at),
                    process,
                });
            }
            Event::Refusal { at, invoked } => {
                let held_until = self.held_until;
                if invoked > held_until && at > held_until.saturating_add(bound) {
                    let period = self.open.get_or_insert(Open {
                        free_from: held_until,
                        last_lease_from: self.held_since,
                        faulted_attempts: self.faulted_attempts,
                        refused_release: self.refused_release,
                        first_refused: at,
                        refused_attempts: 0,
                    });
                    period.refused_attempts += 1;
                }
            }
        }
        None
    }
}

impl Checked for StuckLock {
    fn name(&self) -> &'static str {
        "stuck-lock"
    }
    fn explanations(&self) -> Vec<&Explanation> {
        let periods = self.stuck_periods.iter();
        periods.filter_map(|p| p.explanation.as_ref()).collect()
    }
    fn valid(&self) -> Valid {
        self.valid
    }
    fn violations(&self) -> Vec<String> {
        (self.stuck_period_count > 0)
            .then(|| format!("lock stuck {}", count(self.stuck_period_count, "time")))
            .into_iter()
            .collect()
    }
    fn findings(&self, limit: usize) -> Vec<String> {
        let mut lines = Vec::new();
        for period in self.stuck_periods.iter().take(limit) {
            let line = format!(
                "stuck {}: no lease explains the key after {}, yet {} attempts were refused for \
                 {:.1} s{}",
                period.key,
                seconds(period.free_from_ms),
                period.refused_attempts,
                period.stuck_ms / 1000.0,
                if period.recovered {
                    ""
                } else {
                    ", until the end of the run"
                }
            );
            match &period.explanation {
                Some(explained) => {
                    lines.push(explained.line());
                    lines.push(format!("   {line}"));
                }
                None => lines.push(line),
            }
        }
        lines.extend(and_more(self.stuck_periods.len(), limit, "stuck period"));
        lines
    }
}

/// Explains a stuck period (rule 7): a client crash on during the lease that ran out last,
/// from the op that set the key, is a [`Mechanism::CrashedClient`]: the key the crash left behind
/// outlived every lease (a `SETNX` whose `EXPIRE` never came, say). A crash fault arms the
/// next client to take the lock, so it may have begun before that op. In a run with no
/// fault at all, the key was set without its expiry by the library itself:
/// [`Mechanism::NoExpiry`] (sherlock's script runs `EXPIRE` with a fraction, which Redis
/// refuses after its `SETNX` has set the key).
fn explanation(period: &StuckPeriod, context: &Context, groups: Option<u64>) -> Explanation {
    let (since, until) = (period.last_lease_from_ms, period.free_from_ms);
    let crash = context
        .timeline
        .spells
        .iter()
        .find(|s| s.state == State::ClientCrashed && s.touches(since, until));
    let refused = format!(
        "no lease explains the key after {}, yet {} acquires were refused until {}",
        seconds(period.free_from_ms),
        period.refused_attempts,
        if period.recovered {
            seconds(period.until_ms)
        } else {
            format!("the end at {}", seconds(period.until_ms))
        }
    );
    if let Some(release) = period.refused_release {
        return release_lost(release, context, groups, &refused);
    }
    if context.no_fault() {
        let sentence = format!(
            "the run had no fault: the key set by the acquire asked at {} was left without the \
             expiry its lease promised; {refused}",
            seconds(period.last_lease_from_ms)
        );
        return Explanation::new(Mechanism::NoExpiry, sentence);
    }
    if let (None, Some(attempts)) = (crash, period.faulted_attempts) {
        return orphaned(attempts, context, groups, &refused);
    }
    let Some(crash) = crash else {
        let active: Vec<&Spell> = context
            .timeline
            .spells
            .iter()
            .filter(|s| s.touches(since, period.first_refused_ms))
            .collect();
        let phrases: Vec<String> = active.iter().map(|s| s.phrase()).collect();
        let sentence = format!(
            "no mechanism splitbrain knows explains it: {refused}; {}; look at this one",
            if phrases.is_empty() {
                "no fault was active".to_string()
            } else {
                format!("faults active: {}", phrases.join("; "))
            }
        );
        return Explanation::new(Mechanism::Unexplained, sentence).resting_on(&[], &active);
    };
    let sentence = format!(
        "{} while it held or was taking the lock; {refused}: the key the crash left behind {}",
        crash.phrase(),
        if period.recovered {
            format!("outlived every lease by {:.1} s", period.stuck_ms / 1000.0)
        } else {
            "never expired".to_string()
        }
    );
    Explanation::new(Mechanism::CrashedClient, sentence).resting_on(&[], &[crash])
}

/// A stuck period after a release of a key with no expiry that its holder's library refused
/// (rule 7): the key was the holder's, for no other lease explains it, so the library had
/// forgotten its own lock, as redis-py's `Lock` does when a release meets a fault (it drops its
/// token before it asks Redis, and refuses to try again). A [`Mechanism::ReleaseLost`].
fn release_lost(
    release: RefusedRelease,
    context: &Context,
    groups: Option<u64>,
    refused: &str,
) -> Explanation {
    let (workers, process) = (context.workers, release.process);
    let (from, to) = (release.asked_ms, release.at_ms);
    let links: Vec<&Spell> =
        links_of(context.timeline, workers, groups, process, from, to).collect();
    let phrases: Vec<String> = links.iter().map(|s| s.phrase()).collect();
    let sentence = format!(
        "process {process}'s release, asked at {}{}, was refused at {} by its library, which \
         said the lock was not its own, yet the key, which has no expiry, stayed: no other \
         lease explains it, so the library had forgotten a lock it held, and nothing will \
         take the key away; {refused}",
        seconds(from),
        if phrases.is_empty() {
            String::new()
        } else {
            format!(" while {}", phrases.join("; "))
        },
        seconds(to),
    );
    let mut explained =
        Explanation::new(Mechanism::ReleaseLost, sentence).resting_on(&[], &links);
    explained
        .nodes
        .push(format!("client-{}", process % workers.max(1) as u64));
    explained
}

/// A stuck period after an acquire that failed while its client's links were faulted (rule 7):
/// a lock whose attempts join a queue (a ZooKeeper contender node) needs a failed attempt to
/// take its place back out, and a library that does so as it leaves, swallowing the error a
/// fault gives it, leaves the place behind in a session that lives on: first in line once the
/// holder before it releases, and held by nobody. A [`Mechanism::OrphanedAttempt`].
fn orphaned(
    attempts: FaultedAttempts,
    context: &Context,
    groups: Option<u64>,
    refused: &str,
) -> Explanation {
    let (workers, first) = (context.workers, attempts.first);
    let process = first.process;
    let worker = format!("client-{}", process % workers.max(1) as u64);
    let (from, to) = (first.asked_ms, first.at_ms);
    let links: Vec<&Spell> =
        links_of(context.timeline, workers, groups, process, from, to).collect();
    let phrases: Vec<String> = links.iter().map(|s| s.phrase()).collect();
    let others = match attempts.count {
        1 => String::new(),
        n => format!(
            " ({} more until {})",
            count(n - 1, "attempt"),
            seconds(attempts.last.at_ms)
        ),
    };
    let sentence = format!(
        "process {process}'s acquire failed at {} while {}{others}, before the key's last lease \
         ran out: an attempt that joins the lock's queue takes its place back out as it \
         leaves, and a cleanup the fault cut off leaves the place behind, first in line once \
         the holder before it releases, held by nobody; {refused}",
        seconds(first.at_ms),
        phrases.join("; ")
    );
    let mut explained =
        Explanation::new(Mechanism::OrphanedAttempt, sentence).resting_on(&[], &links);
    explained.nodes.push(worker);
    explained
}

/// The link faults on client `process`'s group between `from_ms` and `to_ms`; any group's
/// where the groups are not known.
fn links_of(
    timeline: &Timeline,
    workers: usize,
    groups: Option<u64>,
    process: u64,
    from_ms: f64,
    to_ms: f64,
) -> impl Iterator<Item = &Spell> {
    let group = groups.map(|groups| client_group(process, workers, groups));
    timeline.spells.iter().filter(move |spell| {
        spell.state == State::Links
            && spell.touches(from_ms, to_ms)
            && group
                .as_ref()
                .is_none_or(|group| spell.peers.contains(group))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::HistoryBuilder;

    const BOUND: Duration = Duration::from_millis(100);

    /// Builds histories, times in milliseconds, every lease 1000 ms; `in_time_order` sorts.
    trait StuckLockScript {
        /// Process `p` runs `f` on "lock" from `from` to `to`, completing with `outcome`.
        fn op(
            &mut self,
            f: &str,
            from_to: (u64, u64),
            p: u64,
            outcome: Option<(OpType, &str)>,
        ) -> &mut Self;
        fn acquire(&mut self, from: u64, to: u64, p: u64, outcome: OpType) -> &mut Self;
        fn refused(&mut self, from: u64, to: u64, p: u64) -> &mut Self;
        fn check(&self) -> StuckLock;
    }

    impl StuckLockScript for HistoryBuilder {
        /// Process `p` runs `f` on "lock" from `from` to `to`, completing with `outcome`.
        fn op(
            &mut self,
            f: &str,
            (from, to): (u64, u64),
            p: u64,
            outcome: Option<(OpType, &str)>,
        ) -> &mut Self {
            let op = |kind| Op::new(Process::Client(p), kind, f).key("lock");
            let mut invoke = op(OpType::Invoke);
            invoke.ttl_ms = Some(1_000);
            self.at(from, invoke);
            if let Some((kind, error)) = outcome {
                let mut completion = op(kind);
                completion.error = (!error.is_empty()).then(|| error.to_string());
                self.at(to, completion);
            }
            self
        }
        fn acquire(&mut self, from: u64, to: u64, p: u64, outcome: OpType) -> &mut Self {
            self.op("acquire", (from, to), p, Some((outcome, "")))
        }
        fn refused(&mut self, from: u64, to: u64, p: u64) -> &mut Self {
            self.op(
                "acquire",
                (from, to),
                p,
                Some((OpType::Fail, "held: by another client")),
            )
        }
        fn check(&self) -> StuckLock {
            check(&self.build_in_time_order(), BOUND, None)
        }
    }

    #[test]
    fn refusals_while_a_lease_may_be_live_are_fine() {
        let r = HistoryBuilder::default()
            .acquire(0, 1, 1, OpType::Ok)
            .refused(500, 501, 2)
            // Within the bound of the lease's end at 1000 ms.
            .refused(1_050, 1_060, 3)
            .check();
        assert_eq!(r.valid, Valid::True);
        assert_eq!((r.held_refusals, r.stuck_period_count), (2, 0));
        assert_eq!(r.bound_ms, 100.0);
    }

    #[test]
    fn rule_1_an_unknown_acquire_may_have_set_the_key_until_a_ttl_after_its_info() {
        let r = HistoryBuilder::default()
            .op("acquire", (0, 300), 1, Some((OpType::Info, "timeout")))
            .refused(1_200, 1_201, 2)
            .refused(1_500, 1_501, 3)
            .check();
        assert_eq!(r.stuck_period_count, 1);
        assert_eq!(r.stuck_periods[0].free_from_ms, 1_300.0);
        assert_eq!(r.stuck_periods[0].refused_attempts, 1);
    }

    /// sherlock with a fractional `expire`: its acquire raised once `SETNX` had set the key,
    /// and nothing else happened in the run.
    #[test]
    fn a_key_stuck_in_a_run_with_no_fault_was_set_without_its_expiry() {
        let r = HistoryBuilder::default()
            .op("acquire", (0, 300), 1, Some((OpType::Info, "ResponseError")))
            .refused(1_200, 1_201, 2)
            .refused(1_500, 1_501, 3)
            .check();
        let explained = r.stuck_periods[0].explanation.as_ref().unwrap();
        assert_eq!(explained.cause, Mechanism::NoExpiry);
        assert_eq!(
            explained.sentence,
            "the run had no fault: the key set by the acquire asked at 0.000s was left without \
             the expiry its lease promised; no lease explains the key after 1.300s, yet 1 \
             acquires were refused until the end at 1.501s"
        );
    }

    #[test]
    fn a_client_crashed_during_the_lease_that_ran_out_last_explains_a_stuck_key() {
        let crash = |f: &str| {
            let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(vec!["client-1".into()]);
            op.fault = Some("client-crash".into());
            op
        };
        for (crashed_at, cause) in [
            (100, Mechanism::CrashedClient),
            (1_400, Mechanism::Unexplained),
        ] {
            let r = HistoryBuilder::default()
                .op("acquire", (0, 300), 1, Some((OpType::Info, "crashed")))
                .at(crashed_at, crash("start"))
                .at(crashed_at + 50, crash("stop"))
                .refused(1_200, 1_201, 2)
                .refused(1_500, 1_501, 3)
                .check();
            let explained = r.stuck_periods[0].explanation.as_ref().unwrap();
            assert_eq!(explained.cause, cause, "crash at {crashed_at}");
            if cause == Mechanism::CrashedClient {
                assert_eq!(
                    explained.sentence,
                    "client-1 crashed at 0.100s while it held or was taking the lock; no lease \
                     explains the key after 1.300s, yet 1 acquires were refused until the end at \
                     1.501s: the key the crash left behind never expired"
                );
            } else {
                assert!(explained
                    .sentence
                    .contains("faults active: client-1 crashed at 1.400s"));
            }
        }
    }

    /// kazoo under `link-reset` (seed 2 of its finding, cut down): an attempt refused while its
    /// group's links were reset left its node in the queue; once the holder's lease was over,
    /// everyone was refused.
    #[test]
    fn a_stuck_key_after_an_attempt_refused_under_a_link_fault_is_an_orphaned_attempt() {
        let reset = |f: &str, link: &str| {
            let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(vec![link.into()]);
            op.fault = Some("link-reset".into());
            op
        };
        // Processes 0 to 3 on four workers in two groups: process 3 is in g1.
        for (link, cause) in [
            ("g1->n2", Mechanism::OrphanedAttempt),
            ("g0->n2", Mechanism::Unexplained),
        ] {
            let mut s = HistoryBuilder::default();
            s.acquire(0, 100, 0, OpType::Ok)
                .at(200, reset("start", link))
                .refused(250, 300, 3)
                .at(400, reset("stop", link))
                .refused(1_300, 1_301, 1)
                .refused(1_500, 1_501, 2);
            s.check();
            let outline = Outline::of(&s.build());
            assert_eq!(outline.workers(), 4);
            let checker = StuckLockChecker::new(&outline, BOUND, None).in_client_groups(Some(2));
            let r = replay(&s.build(), checker);
            let explained = r.stuck_periods[0].explanation.as_ref().unwrap();
            assert_eq!(explained.cause, cause, "a reset on {link}");
            if cause == Mechanism::OrphanedAttempt {
                assert_eq!(
                    explained.sentence,
                    "process 3's acquire failed at 0.300s while the links to n2 from client \
                     group g1 were reset at 0.200s, restored at 0.400s, before the key's last \
                     lease ran out: an attempt that joins the lock's queue takes its place back \
                     out as it leaves, and a cleanup the fault cut off leaves the place behind, \
                     first in line once the holder before it releases, held by nobody; no lease \
                     explains the key after 1.100s, yet 2 acquires were refused until the end at \
                     1.501s"
                );
                assert_eq!(explained.nodes, ["n2", "client-3"]);
            }
        }
    }

    #[test]
    fn rule_1_an_acquire_never_completed_may_set_the_key_until_the_history_ends() {
        let r = HistoryBuilder::default()
            .op("acquire", (0, 1), 1, None)
            .refused(5_000, 5_001, 2)
            .check();
        assert_eq!((r.valid, r.held_refusals), (Valid::True, 1));
    }

    /// pottery-redlock's card, busy, seed 9: three of five masters killed past the lease;
    /// acquires that ran while they were down were refused as `held` (pottery cannot tell no
    /// quorum from a lock held), which says nothing of the key. A refusal after the nodes
    /// answered again, or under a fault on clients alone, still counts.
    #[test]
    fn rule_2_a_refusal_while_servers_were_down_says_nothing_of_the_key() {
        let fault = |f: &str, fault: &str| {
            let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(vec!["n1".into()]);
            op.fault = Some(fault.into());
            op
        };
        for (fault_name, refused_from, stuck) in [
            ("kill-holder", 5_555, 0),
            ("kill-holder", 6_300, 1),
            ("client-pause", 5_555, 1),
        ] {
            let r = HistoryBuilder::default()
                .acquire(0, 100, 1, OpType::Ok)
                .at(2_382, fault("start", fault_name))
                .at(6_239, fault("stop", fault_name))
                .refused(refused_from, refused_from + 685, 2)
                .check();
            assert_eq!(
                r.stuck_period_count, stuck,
                "{fault_name}, refused from {refused_from}"
            );
            assert_eq!(r.held_refusals, 1, "counted among the refusals all the same");
        }
    }

    #[test]
    fn rule_1_a_leader_election_lengthens_a_consensus_groups_leases() {
        // Granted at 100 ms for 1000 ms; a partition from 500 to 3000 ms makes the group
        // elect leaders (400 ms each here), and one more after it heals.
        let nemesis = |f: &str| {
            let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(vec!["n1".into()]);
            op.fault = Some("partition".into());
            op
        };
        let mut s = HistoryBuilder::default();
        s.acquire(0, 100, 1, OpType::Ok)
            .at(500, nemesis("start"))
            .at(3_000, nemesis("stop"))
            .refused(4_300, 4_301, 2);
        let redis = s.check();
        assert_eq!(
            redis.stuck_period_count, 1,
            "Redis keys expire on the clock"
        );
        assert_eq!(redis.stuck_periods[0].free_from_ms, 1_100.0);
        let elected = check(&s.build_in_time_order(), BOUND, Some(Duration::from_millis(400)));
        assert_eq!(
            elected.valid,
            Valid::True,
            "live until 3000 + 1000 + 2 x 400 ms"
        );
        s.refused(5_000, 5_001, 3);
        let late = check(&s.build_in_time_order(), BOUND, Some(Duration::from_millis(400)));
        assert_eq!(late.stuck_period_count, 1);
        assert_eq!(late.stuck_periods[0].free_from_ms, 4_800.0);
    }

    #[test]
    fn rule_1_a_fault_on_client_links_alone_brings_no_election() {
        // Granted at 100 ms for 1000 ms on ZooKeeper, while one client group's links are reset
        // from 500 to 3000 ms: the ensemble is untouched and expires the session on time.
        let nemesis = |f: &str| {
            let mut op =
                Op::new(Process::NEMESIS, OpType::Info, f).nodes(vec!["g1->n1".into()]);
            op.fault = Some("link-reset".into());
            op
        };
        let mut s = HistoryBuilder::default();
        s.acquire(0, 100, 1, OpType::Ok)
            .at(500, nemesis("start"))
            .at(3_000, nemesis("stop"))
            .refused(2_300, 2_301, 2);
        let r = check(&s.build_in_time_order(), BOUND, Some(Duration::from_millis(400)));
        assert_eq!(r.stuck_period_count, 1);
        assert_eq!(r.stuck_periods[0].free_from_ms, 1_100.0);
    }

    #[test]
    fn rule_1_an_unknown_acquire_may_be_carried_out_when_the_fault_it_met_stops() {
        // The acquire timed out at 500 ms while a node was paused from 100 to 3000 ms: the
        // node may set the key when it wakes, for 1000 ms.
        let nemesis = |f: &str| {
            let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(vec!["n1".into()]);
            op.fault = Some("pause".into());
            op
        };
        let mut s = HistoryBuilder::default();
        s.at(100, nemesis("start"))
            .op("acquire", (0, 500), 1, Some((OpType::Info, "timeout")))
            .at(3_000, nemesis("stop"))
            .refused(3_500, 3_501, 2);
        assert_eq!(s.check().valid, Valid::True);
        s.refused(4_200, 4_201, 3);
        let r = s.check();
        assert_eq!(r.stuck_period_count, 1);
        assert_eq!(r.stuck_periods[0].free_from_ms, 4_000.0);
    }

    #[test]
    fn rule_1_an_acquire_failed_for_want_of_nodes_may_set_the_key_when_they_wake() {
        // Redlock under a pause of every node (100 to 3000 ms): the attempt at 500 ms found no
        // quorum, but each frozen node ran its SET when it woke and kept the key 1000 ms more.
        let nemesis = |f: &str| {
            let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(vec!["n1".into()]);
            op.fault = Some("pause".into());
            op
        };
        let no_quorum = "no quorum: 0/5 granted, 5 unreachable or timed out";
        let mut s = HistoryBuilder::default();
        s.at(100, nemesis("start"))
            .op("acquire", (400, 500), 1, Some((OpType::Fail, no_quorum)))
            .at(3_000, nemesis("stop"))
            .refused(3_500, 3_501, 2);
        assert_eq!(s.check().valid, Valid::True);
        s.refused(4_200, 4_201, 3);
        assert_eq!(
            s.check().stuck_period_count,
            1,
            "not past its TTL after the wake"
        );

        let mut held = HistoryBuilder::default();
        held.at(100, nemesis("start"))
            .op(
                "acquire",
                (400, 500),
                1,
                Some((OpType::Fail, "held: by another client")),
            )
            .at(3_000, nemesis("stop"))
            .refused(3_500, 3_501, 2);
        assert_eq!(
            held.check().stuck_period_count,
            1,
            "a refusal because the lock was held set nothing"
        );
    }

    #[test]
    fn rule_1_a_slow_grant_is_dated_from_its_ok_not_its_invoke() {
        // An external client took 2.1 s to acquire: the server set the key with its 1 s TTL
        // somewhere in there, so it may live until 3.1 s, not 1.0 s.
        let mut s = HistoryBuilder::default();
        s.acquire(0, 2_100, 1, OpType::Ok).refused(2_400, 2_500, 2);
        let r = s.check();
        assert_eq!(r.valid, Valid::True, "{:?}", r.stuck_periods);
        s.refused(3_250, 3_300, 3);
        let r = s.check();
        assert_eq!(r.stuck_period_count, 1);
        assert_eq!(r.stuck_periods[0].free_from_ms, 3_100.0);
    }

    #[test]
    fn rule_1_a_granted_validity_longer_than_the_ttl_counts() {
        let mut s = HistoryBuilder::default();
        s.op("acquire", (0, 1), 1, None);
        let mut granted = Op::new(Process::Client(1), OpType::Ok, "acquire").key("lock");
        granted.validity_ms = Some(3_000);
        s.at(1, granted).refused(2_500, 2_501, 2);
        assert_eq!(s.check().valid, Valid::True);
        s.refused(3_200, 3_201, 3);
        assert_eq!(s.check().stuck_periods[0].free_from_ms, 3_001.0);
    }

    #[test]
    fn rule_1_a_renewal_is_dated_from_its_ok() {
        let mut s = HistoryBuilder::default();
        s.acquire(0, 1, 1, OpType::Ok)
            .op("renew", (800, 1_500), 1, Some((OpType::Ok, "")))
            .refused(2_300, 2_301, 2);
        assert_eq!(s.check().valid, Valid::True);
        s.refused(2_700, 2_701, 3);
        assert_eq!(s.check().stuck_periods[0].free_from_ms, 2_500.0);
    }

    #[test]
    fn rule_1_a_silently_renewed_grant_may_keep_the_key_until_its_release() {
        let silent_grant = |s: &mut HistoryBuilder| {
            s.op("acquire", (0, 1), 1, None);
            s.at(
                1,
                Op::new(Process::Client(1), OpType::Ok, "acquire")
                    .key("lock")
                    .renewal(Renewal::Silent),
            );
        };
        // Never released: nothing after it is stuck.
        let mut s = HistoryBuilder::default();
        silent_grant(&mut s);
        s.refused(9_000, 9_001, 2);
        assert_eq!(s.check().valid, Valid::True);

        // Released at 3000 ms: the last renewal may have come just before, for 1000 ms.
        let mut s = HistoryBuilder::default();
        silent_grant(&mut s);
        s.op("release", (3_000, 3_001), 1, Some((OpType::Ok, "")))
            .refused(3_900, 3_901, 2);
        assert_eq!(s.check().valid, Valid::True);
        s.refused(4_200, 4_201, 3);
        assert_eq!(s.check().stuck_periods[0].free_from_ms, 4_000.0);
    }

    #[test]
    fn rule_1_a_lock_kept_by_its_holders_connection_may_keep_the_key_until_its_release() {
        // PostgreSQL's session lock: a holder frozen past its last ping keeps its connection,
        // and with it the lock, until it wakes and releases.
        let grant = |renewal| {
            let mut s = HistoryBuilder::default();
            s.op("acquire", (0, 1), 1, None);
            let mut ok = Op::new(Process::Client(1), OpType::Ok, "acquire").key("lock");
            ok.renewal = renewal;
            s.at(1, ok)
                .op("release", (5_000, 5_001), 1, Some((OpType::Ok, "")))
                .refused(4_000, 4_001, 2);
            s.check()
        };
        assert_eq!(grant(Some(Renewal::Connection)).valid, Valid::True);
        assert_eq!(
            grant(None).valid,
            Valid::False,
            "a plain lease ran out at 1001 ms"
        );
    }

    /// redis-py's `Lock` with `timeout=None`: a key with no expiry, held by process 1 from
    /// 1 ms, whose release is asked at 5000 ms and comes back at 20000 ms as `release`
    /// says; process 2 is refused from 4000 ms to 30000 ms.
    fn unexpiring(release: Option<(OpType, &str)>) -> StuckLock {
        let mut s = HistoryBuilder::default();
        s.op("acquire", (0, 1), 1, None);
        let mut ok = Op::new(Process::Client(1), OpType::Ok, "acquire").key("lock");
        ok.renewal = Some(Renewal::Unexpiring);
        s.at(1, ok).op("release", (5_000, 20_000), 1, release);
        for at in (4_000..30_000).step_by(1_000) {
            s.refused(at, at + 1, 2);
        }
        s.check()
    }

    #[test]
    fn rule_1_a_key_with_no_expiry_may_live_until_a_release_comes_back() {
        // Taken away at 20000 ms: every refusal before is the holder's key, every one after
        // is stuck.
        let taken = unexpiring(Some((OpType::Ok, "")));
        assert_eq!(taken.stuck_period_count, 1);
        assert_eq!(taken.stuck_periods[0].free_from_ms, 20_000.0);
        assert_eq!(taken.stuck_periods[0].first_refused_ms, 21_001.0);
        // A release that never came back, or whose outcome is unknown, may have left the key
        // for good: nothing is stuck.
        for release in [None, Some((OpType::Info, "TimeoutError"))] {
            let r = unexpiring(release);
            assert_eq!(r.valid, Valid::True, "{release:?}");
            assert_eq!(r.held_refusals, 26);
        }
    }

    /// redis-py 8.1.0: `release()` dropped its token before a release that met a fault, so
    /// asked again it answers `LockError` without asking Redis, and the key stays.
    #[test]
    fn a_key_with_no_expiry_whose_release_its_library_refused_is_a_release_lost() {
        let r = unexpiring(Some((OpType::Fail, "LockError: Cannot release an unlocked lock")));
        assert_eq!(r.stuck_period_count, 1);
        let period = &r.stuck_periods[0];
        assert_eq!((period.free_from_ms, period.recovered), (20_000.0, false));
        let explained = period.explanation.as_ref().unwrap();
        assert_eq!(explained.cause, Mechanism::ReleaseLost);
        assert_eq!(
            explained.sentence,
            "process 1's release, asked at 5.000s, was refused at 20.000s by its library, which \
             said the lock was not its own, yet the key, which has no expiry, stayed: no other \
             lease explains it, so the library had forgotten a lock it held, and nothing will \
             take the key away; no lease explains the key after 20.000s, yet 9 acquires were \
             refused until the end at 29.001s"
        );
        // A grant after the refused release is a new holder's: a period after it is not
        // blamed on the release.
        let mut s = HistoryBuilder::default();
        s.op("acquire", (0, 1), 1, None);
        let mut ok = Op::new(Process::Client(1), OpType::Ok, "acquire").key("lock");
        ok.renewal = Some(Renewal::Unexpiring);
        s.at(1, ok)
            .op("release", (500, 600), 1, Some((OpType::Fail, "LockError")))
            .acquire(700, 701, 3, OpType::Ok)
            .refused(2_000, 2_001, 2)
            .refused(3_000, 3_001, 2);
        let later = s.check();
        assert_eq!(later.stuck_period_count, 1);
        let cause = later.stuck_periods[0].explanation.as_ref().unwrap().cause;
        assert_ne!(cause, Mechanism::ReleaseLost);
    }

    #[test]
    fn rule_1_with_a_silently_renewing_library_an_unknown_acquire_may_hold_to_the_end() {
        let mut s = HistoryBuilder::default();
        s.op("acquire", (0, 1), 1, None);
        s.at(
            1,
            Op::new(Process::Client(1), OpType::Ok, "acquire")
                .key("lock")
                .renewal(Renewal::Silent),
        )
        .op("release", (100, 101), 1, Some((OpType::Ok, "")))
        .op("acquire", (200, 300), 2, Some((OpType::Info, "timeout")))
        .refused(9_000, 9_001, 3);
        assert_eq!(s.check().valid, Valid::True);
    }

    #[test]
    fn rule_1_an_acquire_refused_by_the_nodes_sets_nothing() {
        let r = HistoryBuilder::default()
            .op(
                "acquire",
                (0, 1),
                1,
                Some((OpType::Fail, "split vote: 2/5")),
            )
            .refused(200, 201, 2)
            .check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.stuck_periods[0].free_from_ms, 0.0);
    }

    #[test]
    fn rule_1_a_renewal_extends_the_lease_unless_it_failed() {
        let mut renewed = HistoryBuilder::default();
        renewed
            .acquire(0, 1, 1, OpType::Ok)
            .op("renew", (800, 801), 1, Some((OpType::Ok, "")))
            .refused(1_500, 1_501, 2);
        assert_eq!(renewed.check().valid, Valid::True);

        let mut refused = HistoryBuilder::default();
        refused
            .acquire(0, 1, 1, OpType::Ok)
            .op(
                "renew",
                (800, 801),
                1,
                Some((OpType::Fail, "not the holder")),
            )
            .refused(1_500, 1_501, 2);
        assert_eq!(refused.check().valid, Valid::False);
    }

    #[test]
    fn rule_1_an_acquire_without_a_ttl_may_hold_forever() {
        let mut s = HistoryBuilder::default();
        s.at(
            0,
            Op::new(Process::Client(1), OpType::Invoke, "acquire").key("lock"),
        )
        .at(
            1,
            Op::new(Process::Client(1), OpType::Ok, "acquire").key("lock"),
        )
        .refused(100_000, 100_001, 2);
        assert_eq!(s.check().valid, Valid::True);
    }

    #[test]
    fn rule_2_a_refusal_long_after_every_lease_is_stuck() {
        let r = HistoryBuilder::default()
            .acquire(0, 1, 1, OpType::Ok)
            .refused(1_200, 1_201, 2)
            .check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.stuck_periods[0].first_refused_ms, 1_201.0);
    }

    #[test]
    fn rule_2_only_a_held_refusal_counts_not_a_split_vote_or_unavailability() {
        let mut split = HistoryBuilder::default();
        split.acquire(0, 1, 1, OpType::Ok).op(
            "acquire",
            (1_200, 1_201),
            2,
            Some((OpType::Fail, "split vote: 2/5")),
        );
        let r = split.check();
        assert_eq!((r.valid, r.held_refusals), (Valid::True, 0));

        let mut down = HistoryBuilder::default();
        down.acquire(0, 1, 1, OpType::Ok).op(
            "acquire",
            (1_200, 1_201),
            2,
            Some((OpType::Fail, "n1: not connected")),
        );
        let r = down.check();
        assert_eq!((r.valid, r.held_refusals), (Valid::True, 0));
    }

    #[test]
    fn rule_2_a_refusal_invoked_before_the_lease_ended_is_not_stuck() {
        // Invoked at 990 ms while the lease was live; it came back late, at 1500 ms.
        let r = HistoryBuilder::default()
            .acquire(0, 1, 1, OpType::Ok)
            .refused(990, 1_500, 2)
            .check();
        assert_eq!(r.valid, Valid::True);
    }

    #[test]
    fn rule_2_a_concurrent_acquire_explains_a_refusal() {
        // Process 3's acquire, invoked after process 2's, may have set the key first.
        let r = HistoryBuilder::default()
            .acquire(0, 1, 1, OpType::Ok)
            .refused(1_200, 1_300, 2)
            .acquire(1_250, 1_400, 3, OpType::Info)
            .check();
        assert_eq!(r.valid, Valid::True);
    }

    #[test]
    fn rule_3_a_period_ends_at_the_next_grant() {
        let r = HistoryBuilder::default()
            .acquire(0, 1, 1, OpType::Ok)
            .refused(1_200, 1_201, 2)
            .refused(1_300, 1_301, 3)
            .acquire(2_000, 2_001, 4, OpType::Ok)
            .refused(2_050, 2_051, 5)
            .check();
        assert_eq!(r.stuck_period_count, 1);
        let period = &r.stuck_periods[0];
        assert_eq!(period.key, "lock");
        assert_eq!(
            (
                period.free_from_ms,
                period.first_refused_ms,
                period.until_ms
            ),
            (1_001.0, 1_201.0, 2_001.0)
        );
        assert_eq!((period.stuck_ms, period.refused_attempts), (1_000.0, 2));
        assert!(period.recovered);
        assert_eq!((r.stuck_refusals, r.unrecovered_count), (2, 0));
    }

    #[test]
    fn rule_3_a_period_the_history_ends_in_is_not_recovered() {
        let r = HistoryBuilder::default()
            .acquire(0, 1, 1, OpType::Ok)
            .refused(1_200, 1_201, 2)
            .at(5_000, Op::new(Process::NEMESIS, OpType::Info, "stop"))
            .check();
        let period = &r.stuck_periods[0];
        assert!(!period.recovered);
        assert_eq!((period.until_ms, period.stuck_ms), (5_000.0, 3_999.0));
        assert_eq!(r.unrecovered_count, 1);
    }

    #[test]
    fn rule_3_each_stuck_spell_is_its_own_period() {
        let r = HistoryBuilder::default()
            .refused(200, 201, 1)
            .acquire(300, 301, 2, OpType::Ok)
            .refused(1_500, 1_501, 3)
            .check();
        let spells: Vec<_> = r
            .stuck_periods
            .iter()
            .map(|p| (p.free_from_ms, p.until_ms, p.recovered))
            .collect();
        assert_eq!(spells, [(0.0, 301.0, true), (1_301.0, 1_501.0, false)]);
    }

    #[test]
    fn keys_are_separate() {
        let mut s = HistoryBuilder::default();
        s.acquire(0, 1, 1, OpType::Ok);
        let other = |kind| Op::new(Process::Client(2), kind, "acquire").key("other");
        s.at(500, other(OpType::Invoke))
            .at(501, other(OpType::Fail).error("held: by another client"));
        let r = s.check();
        assert_eq!(r.stuck_periods[0].key, "other");
    }
}
