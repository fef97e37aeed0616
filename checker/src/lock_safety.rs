//! The `lock-safety` checker: no two processes may hold one lock at the same time.
//!
//! Rules, each with a unit test below:
//!
//! 1. A process holds a lock from its acquire's `ok` until it invokes `release` on that key
//!    (or, if it never does, until its lease ends). Its **lease**, the exclusivity the lock
//!    promised, ends at the acquire's invoke time plus `validity_ms` (or plus the requested
//!    `ttl_ms` where no validity was given). A lease watchdog's `renew` that returns `ok`
//!    extends the lease to the renewal's invoke plus its `ttl_ms`; one that times out extends
//!    nothing, and one refused (`fail`: the lock was no longer its own) ends the lease when it
//!    comes back, if it had not ended already: the server had let the key go, whatever the
//!    renewals before promised (a reported renewal is dated when its report arrives, a little
//!    after the server renewed). A grant marked `renewal: reported` comes from a library that renews in
//!    the background and records each renewal as such a `renew`. One marked `renewal: silent`
//!    renews without telling anybody, so its lease is what it promised at the grant (invoke
//!    plus validity) and no more: an overlap past it is a `stale` double grant, never a `lease`
//!    one. The library may well have renewed, but a holder whose renewals kept the key alive
//!    keeps everyone else out, so a second grant means its renewals had stopped (it may have
//!    been frozen), and only fencing protects against that.
//! 2. A release that fails or times out ends the hold at its invoke all the same: the client
//!    stopped acting under the lock when it began to release, and a lost release never extends
//!    a hold.
//!    A grant marked `ends_with_write` is a lock in the holder's storage transaction, which its
//!    write (`add`) commits: that write's invoke ends the hold, as a release's would.
//! 3. A `fail` acquire holds nothing.
//! 4. An `info` acquire (or one never completed) may or may not have been granted. Its process
//!    retired without acting, but the lock service may have handed it the lock, from its invoke
//!    for `ttl_ms`. Where that window overlaps another process's hold, the checker reports a
//!    *possible* double grant: it can make the verdict unknown, never invalid. The possible
//!    double grants of one unknown acquire are one finding, [`PossibleDoubleGrants`], with
//!    the number of holds it could overlap: a failover that leaves a few acquires unknown
//!    would otherwise bury the certain double grants under dozens of possible ones.
//! 5. A **double grant** is two different processes whose holds on one key overlap by more
//!    than zero time. It is a `lease` double grant when the holds overlap while both leases
//!    were live (the lock handed out two leases at once), and a `stale` one when one holder had
//!    outlived its lease without knowing, a zombie (a paused client, a slow release): the lock
//!    kept its promise, the client did not, and only fencing stops the damage. Both make the
//!    history invalid. Each is reported with both acquires, the overlap, and the faults active
//!    from the first grant to the end of the overlap.
//! 6. Fencing stops it: a stale double grant is **fenced** (reported, but harmless to the
//!    verdict) when every zombie in it held a grant with a fencing token, made storage accesses
//!    (`read`, `add`) in the run, and had every one it began after its lease ended refused
//!    (`fail`) by the storage. A `lease` double grant is never excused: two live leases are the
//!    lock's own failure.
//!
//! The check reads the history as a stream ([`crate::stream`]): a hold is compared with the
//! holds on its key once both have ended, and forgotten once no hold still to come can begin
//! before it ended. It runs in O(n) for a history of n ops when holds rarely overlap, in
//! memory bounded by the holds and acquires open at a time.

use foldhash::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::every::{read_as, Registration, Role};
use crate::explain::cause::{Cause, Explanation};
use crate::explain::context::{Context, Release};
use crate::explain::double_grant::double_grant;
use crate::holds::{Candidate, DoubleGrant, Hold, HoldTracker};
use crate::operation::ms;
use crate::stream::{replay, Checker, Event, Outline, Smallest, FORGET_EVERY};
use crate::timeline::Timeline;
use crate::verdict::{Checked, REPORTED_VIOLATIONS};
use crate::words::{and_more, count, seconds};
use crate::windows::Window;
use crate::{Op, OpType, Process, Valid};

/// The result of the lock-safety check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LockSafety {
    pub valid: Valid,
    /// Definite holds found (acquires that returned `ok`).
    pub holds: usize,
    /// Acquires whose outcome is unknown.
    pub unknown_acquires: usize,
    pub double_grant_count: usize,
    /// How many of the double grants were `stale` (a holder had outlived its lease).
    pub stale_double_grant_count: usize,
    /// The first [`REPORTED_VIOLATIONS`] double grants, in time order.
    pub double_grants: Vec<DoubleGrant>,
    /// Stale double grants whose zombie the storage fenced off (rule 6); not violations.
    pub fenced_double_grant_count: usize,
    pub fenced_double_grants: Vec<DoubleGrant>,
    /// Overlaps of an unknown acquire with another process's hold (rule 4), each counted.
    pub possible_double_grant_count: usize,
    /// How many unknown acquires those overlaps come from: the number of groups.
    #[serde(default)]
    pub possible_double_grant_acquires: usize,
    /// The first [`REPORTED_VIOLATIONS`] groups, one per unknown acquire, in time order of
    /// their first overlap. Listed after the certain double grants, which they never outrank.
    #[serde(default)]
    pub possible_double_grant_groups: Vec<PossibleDoubleGrants>,
}

/// The possible double grants of one acquire of unknown outcome (rule 4), as one finding.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PossibleDoubleGrants {
    pub key: String,
    /// The unknown acquire, as the hold it may have been: from its invoke for its `ttl_ms`.
    pub unknown_acquire: Hold,
    /// How many holds of other processes its window overlaps; at least 1.
    pub overlapped_holds: usize,
    /// The earliest of those overlaps, with the faults active, as a double grant is reported.
    pub first: DoubleGrant,
}

/// Checks a history for double grants.
/// Its line in the list of every checker.
pub const CHECKER: Registration = Registration {
    name: "lock-safety",
    role: Role::Verdict,
    start: |outline, _| Box::new(LockSafetyChecker::new(outline)),
    read: read_as::<LockSafety>,
};

pub fn check(history: &[Op]) -> LockSafety {
    replay(history, LockSafetyChecker::new(&Outline::of(history)))
}

/// The lock-safety check as a stream: each hold is compared with the holds on its key that
/// could still overlap it once both have ended (their ends can still move until then), and a
/// hold is forgotten once no hold still to come can begin before it ended.
pub struct LockSafetyChecker {
    tracker: HoldTracker,
    faults: Vec<Window>,
    /// What the faults did to each node and client, for the explanations.
    timeline: Timeline,
    workers: usize,
    /// The run's client groups, where known.
    groups: Option<u64>,
    /// Holds ended by a release that has not come back yet.
    releasing: HashMap<Process, Release>,
    /// Releases answered `ok`, for as long as a double grant still to be found may have one
    /// between its grants: a release that checks no token deletes whoever holds the key.
    releases: Vec<Release>,
    /// Whether ops come in time order, so that what ended before "now" can be forgotten.
    forgets: bool,
    now: u64,
    /// Holds just ended, from the tracker.
    ended: Vec<Candidate>,
    /// Per key, the ended holds a hold still to come may overlap.
    retained: HashMap<String, Vec<Candidate>>,
    /// Each process's storage accesses that a fenced hold's lease end may still come before:
    /// invoke time, and whether the storage refused it (rule 6).
    accesses: HashMap<Process, Vec<(u64, bool)>>,
    /// Processes that made a storage access; rule 6 asks a zombie to have made one.
    accessed: HashSet<Process>,
    /// When each process's storage access still pending was invoked.
    pending_access: HashMap<Process, u64>,
    /// Stale overlaps whose zombies all had fencing tokens: fenced or not is known once the
    /// zombies' accesses after their leases have all come back.
    undecided: Vec<Undecided>,
    since_forgetting: usize,
    /// How many events pass between two looks for what can be forgotten: fewer cost time,
    /// more cost memory.
    pub(crate) forget_every: usize,
    tally: Tally,
}

/// The overlaps found, by kind: exact counts and the first few of each.
struct Tally {
    definite: usize,
    stale: usize,
    fenced: usize,
    possible: usize,
    first_definite: Smallest<PairOrder, Pair>,
    first_fenced: Smallest<PairOrder, Pair>,
    /// Per unknown acquire whose hold a later hold may still overlap, its possible double
    /// grants: how many, and the first.
    possible_groups: HashMap<u64, (usize, PairOrder, Pair)>,
    /// The groups of unknown acquires no later hold can overlap: how many, and the first.
    groups_done: usize,
    first_groups: Smallest<PairOrder, (usize, Pair)>,
}

/// Time order of overlaps: the second hold's start, then the first's; the rest only breaks
/// ties the same way on every run.
type PairOrder = (u64, u64, String, u64, u64, u64, u64);

/// Two overlapping holds, the earlier first, with the kind and length of their overlap.
struct Pair {
    first: Candidate,
    second: Candidate,
    kind: &'static str,
    overlap: u64,
    /// Made when the pair is recorded among the first few, while the releases between its
    /// grants are still known.
    explanation: Option<Explanation>,
}

impl Pair {
    fn order(&self) -> PairOrder {
        let (a, b) = (&self.first, &self.second);
        (b.start, a.start, a.key.clone(), b.end, b.seq, a.end, a.seq)
    }
}

/// A stale overlap waiting for its zombies' storage accesses (rule 6).
struct Undecided {
    pair: Pair,
    /// Each zombie's process, and whether every access it began after its lease ended was
    /// refused so far.
    zombies: Vec<Zombie>,
}

struct Zombie {
    process: Process,
    lease_end: u64,
    end: u64,
    refused: bool,
}

impl Zombie {
    fn covers(&self, invoked: u64) -> bool {
        (self.lease_end..=self.end).contains(&invoked)
    }
}

impl LockSafetyChecker {
    pub fn new(outline: &Outline) -> LockSafetyChecker {
        LockSafetyChecker {
            tracker: HoldTracker::new(outline),
            faults: outline.windows(),
            timeline: Timeline::of(&outline.nemesis),
            workers: outline.workers(),
            groups: outline.groups(),
            releasing: HashMap::default(),
            releases: Vec::new(),
            forgets: outline.in_time_order,
            now: 0,
            ended: Vec::new(),
            retained: HashMap::default(),
            accesses: HashMap::default(),
            accessed: HashSet::default(),
            pending_access: HashMap::default(),
            undecided: Vec::new(),
            since_forgetting: 0,
            forget_every: FORGET_EVERY,
            tally: Tally::new(),
        }
    }

    fn storage_access(&mut self, invoke: &Op, outcome: OpType) {
        self.accessed.insert(invoke.process);
        let invoked = invoke.time;
        // A refusal is the fence's only where the access carried one: a write its holder
        // skipped, its lease run out, never reached the storage.
        let refused = outcome == OpType::Fail && invoke.fence.is_some();
        for undecided in &mut self.undecided {
            for zombie in &mut undecided.zombies {
                if zombie.process == invoke.process && zombie.covers(invoked) {
                    zombie.refused &= refused;
                }
            }
        }
        self.accesses
            .entry(invoke.process)
            .or_default()
            .push((invoked, refused));
    }

    /// Keeps a release for the explanations, unless no double grant still to be reported can
    /// come after it.
    fn released(&mut self, mut release: Release, completed: u64) {
        let reported_until = self.tally.first_definite.bound().map(|order| ms(order.0));
        if reported_until.is_some_and(|until| release.released_ms > until) {
            return;
        }
        release.completed_ms = ms(completed);
        self.releases.push(release);
    }

    /// Compares a hold that just ended with the ended holds on its key, then keeps it.
    fn compare(&mut self, hold: Candidate) {
        let on_key = self.retained.entry(hold.key.clone()).or_default();
        let mut found = Vec::new();
        for other in on_key.iter() {
            if other.process == hold.process || (!other.certain && !hold.certain) {
                continue;
            }
            let (earlier, later) =
                if (other.start, other.end, other.seq) <= (hold.start, hold.end, hold.seq) {
                    (other, &hold)
                } else {
                    (&hold, other)
                };
            let live = |c: &Candidate| c.end.min(c.lease_end);
            let lease_overlap = live(earlier).min(live(later)).saturating_sub(later.start);
            let overlap = earlier.end.min(later.end).saturating_sub(later.start);
            let (kind, overlap) = match (lease_overlap, overlap) {
                (0, 0) => continue,
                (0, stale) => ("stale", stale),
                (live, _) => ("lease", live),
            };
            let pair = Pair {
                first: earlier.clone(),
                second: later.clone(),
                kind,
                overlap,
                explanation: None,
            };
            if kind == "lease" {
                found.push(pair);
                continue;
            }
            let zombies: Vec<&Candidate> = [earlier, later]
                .into_iter()
                .filter(|c| c.end.min(c.lease_end) <= later.start)
                .collect();
            if zombies.iter().any(|z| z.fence.is_none()) {
                found.push(pair);
                continue;
            }
            let zombies = zombies
                .into_iter()
                .map(|z| Zombie {
                    process: z.process,
                    lease_end: z.lease_end,
                    end: z.end,
                    refused: self.accesses.get(&z.process).is_none_or(|list| {
                        list.iter()
                            .filter(|(invoked, _)| (z.lease_end..=z.end).contains(invoked))
                            .all(|(_, refused)| *refused)
                    }),
                })
                .collect();
            self.undecided.push(Undecided { pair, zombies });
        }
        on_key.push(hold);
        for pair in found {
            self.record(pair);
        }
    }

    /// Counts an overlap whose kind is settled, explaining it first if it is among the first
    /// few to be reported.
    fn record(&mut self, mut pair: Pair) {
        let order = pair.order();
        let reported = match pair.kind {
            "fenced" => self.tally.first_fenced.would_keep(&order),
            _ => pair.certain() && self.tally.first_definite.would_keep(&order),
        };
        if reported {
            let context = Context {
                timeline: &self.timeline,
                workers: self.workers,
            groups: self.groups,
            };
            let on_key: Vec<Release> = self
                .releases
                .iter()
                .filter(|r| r.key == pair.first.key)
                .cloned()
                .collect();
            let grant = self.double_grant(&pair);
            pair.explanation = Some(double_grant(&grant, &on_key, &context));
        }
        self.tally.record(pair);
    }

    /// A pair as the result reports it.
    fn double_grant(&self, pair: &Pair) -> DoubleGrant {
        DoubleGrant {
            key: pair.first.key.clone(),
            kind: pair.kind.to_string(),
            first: pair.first.to_hold(),
            second: pair.second.to_hold(),
            overlap_ms: ms(pair.overlap),
            faults: self
                .faults
                .iter()
                .filter(|w| w.start < pair.second.start + pair.overlap && w.stop > pair.first.start)
                .map(|w| w.to_window())
                .collect(),
            explanation: pair.explanation.clone(),
        }
    }

    /// Forgets the ended holds no hold still to come can overlap, and the accesses no fenced
    /// hold's window can hold.
    fn forget(&mut self) {
        self.since_forgetting = 0;
        if !self.forgets {
            return;
        }
        let horizon = self
            .tracker
            .earliest_start()
            .unwrap_or(self.now)
            .min(self.now);
        let mut unknown_forgotten = Vec::new();
        for on_key in self.retained.values_mut() {
            on_key.retain(|hold| {
                let kept = hold.end > horizon;
                if !kept && !hold.certain {
                    unknown_forgotten.push(hold.acquire_index);
                }
                kept
            });
        }
        // An unknown acquire's group is complete once its hold is forgotten, unless an overlap
        // of it still waits for a zombie's accesses.
        for acquire in unknown_forgotten {
            let waiting = self
                .undecided
                .iter()
                .any(|u| !u.pair.certain() && u.pair.unknown_side().acquire_index == acquire);
            if !waiting {
                self.tally.close_group(acquire);
            }
        }
        self.retained.retain(|_, on_key| !on_key.is_empty());
        // A double grant still to be found is between holds retained or still to end: a
        // release that came back before all of them began lies between the grants of none.
        let earliest_retained = self.retained.values().flatten().map(|hold| hold.start);
        let floor = ms(earliest_retained.fold(horizon, u64::min));
        let reported_until = self.tally.first_definite.bound().map(|order| ms(order.0));
        self.releases.retain(|release| {
            release.completed_ms >= floor
                && reported_until.is_none_or(|until| release.released_ms <= until)
        });
        let mut floors: HashMap<Process, u64> = HashMap::default();
        let fenced = self
            .retained
            .values()
            .flatten()
            .chain(self.tracker.open.values())
            .filter(|hold| hold.fence.is_some());
        for hold in fenced {
            let floor = floors.entry(hold.process).or_insert(hold.lease_end);
            *floor = (*floor).min(hold.lease_end);
        }
        for (process, list) in self.accesses.iter_mut() {
            let floor = floors.get(process).copied().unwrap_or(u64::MAX);
            list.retain(|(invoked, _)| *invoked >= floor);
        }
        self.accesses.retain(|_, list| !list.is_empty());
        self.settle_stale_overlaps();
    }

    /// Settles the stale overlaps whose zombies can make no more accesses inside their
    /// windows: each zombie's process made an access (rule 6), its window ended before now,
    /// and it has no access pending that began inside it.
    fn settle_stale_overlaps(&mut self) {
        let settled = |zombie: &Zombie| {
            self.accessed.contains(&zombie.process)
                && zombie.end < self.now
                && self
                    .pending_access
                    .get(&zombie.process)
                    .is_none_or(|&invoked| !zombie.covers(invoked))
        };
        let (done, waiting): (Vec<Undecided>, Vec<Undecided>) = std::mem::take(&mut self.undecided)
            .into_iter()
            .partition(|undecided| undecided.zombies.iter().all(settled));
        self.undecided = waiting;
        for Undecided { mut pair, zombies } in done {
            if zombies.iter().all(|z| z.refused) {
                pair.kind = "fenced";
            }
            self.record(pair);
        }
    }
}

impl Checker for LockSafetyChecker {
    type Output = LockSafety;

    fn observe(&mut self, event: Event<'_>) {
        let is_access = |op: &Op| op.f == "read" || op.f == "add";
        match event {
            Event::Invoke(op) if is_access(op) => {
                self.pending_access.insert(op.process, op.time);
            }
            Event::Abandoned(op) if is_access(op) => {
                self.pending_access.remove(&op.process);
            }
            Event::Complete { invoke, completion } if is_access(invoke) => {
                self.pending_access.remove(&invoke.process);
                self.storage_access(invoke, completion.kind);
            }
            Event::Complete { invoke, completion } if invoke.f == "release" => {
                let released = self.releasing.remove(&invoke.process);
                if let Some(mut release) = released.filter(|_| completion.kind != OpType::Fail) {
                    release.answered = completion.kind == OpType::Ok;
                    self.released(release, completion.time);
                }
            }
            _ => {}
        }
        let time = match event {
            Event::Nemesis(op) | Event::Invoke(op) | Event::Abandoned(op) => op.time,
            Event::Complete { completion, .. } => completion.time,
        };
        self.now = self.now.max(time);
        self.tracker.observe(event, &mut self.ended);
        for hold in std::mem::take(&mut self.ended) {
            if hold.ended_by == "release" {
                let release = Release {
                    process: hold.process,
                    key: hold.key.clone(),
                    acquire_index: hold.acquire_index,
                    granted_ms: ms(hold.start),
                    released_ms: ms(hold.end),
                    completed_ms: ms(hold.end),
                    answered: false,
                    lease_end_ms: ms(hold.lease_end),
                    nodes: hold.nodes.clone(),
                };
                self.releasing.insert(hold.process, release);
            }
            self.compare(hold);
        }
        self.since_forgetting += 1;
        if self.since_forgetting >= self.forget_every {
            self.forget();
        }
    }

    fn finish(mut self) -> LockSafety {
        self.tracker.finish(&mut self.ended);
        for hold in std::mem::take(&mut self.ended) {
            self.compare(hold);
        }
        for Undecided { mut pair, zombies } in std::mem::take(&mut self.undecided) {
            if zombies
                .iter()
                .all(|z| z.refused && self.accessed.contains(&z.process))
            {
                pair.kind = "fenced";
            }
            self.record(pair);
        }
        let mut tally = std::mem::replace(&mut self.tally, Tally::new());
        let open: Vec<u64> = tally.possible_groups.keys().copied().collect();
        for acquire in open {
            tally.close_group(acquire);
        }
        let valid = if tally.definite > 0 {
            Valid::False
        } else if tally.possible > 0 {
            Valid::Unknown
        } else {
            Valid::True
        };
        LockSafety {
            valid,
            holds: self.tracker.certain,
            unknown_acquires: self.tracker.unknown,
            double_grant_count: tally.definite,
            stale_double_grant_count: tally.stale,
            double_grants: tally
                .first_definite
                .into_sorted()
                .iter()
                .map(|pair| self.double_grant(pair))
                .collect(),
            possible_double_grant_count: tally.possible,
            possible_double_grant_acquires: tally.groups_done,
            possible_double_grant_groups: tally
                .first_groups
                .into_sorted()
                .iter()
                .map(|(overlapped_holds, first)| {
                    let unknown = first.unknown_side();
                    PossibleDoubleGrants {
                        key: unknown.key.clone(),
                        unknown_acquire: unknown.to_hold(),
                        overlapped_holds: *overlapped_holds,
                        first: self.double_grant(first),
                    }
                })
                .collect(),
            fenced_double_grant_count: tally.fenced,
            fenced_double_grants: tally
                .first_fenced
                .into_sorted()
                .iter()
                .map(|pair| self.double_grant(pair))
                .collect(),
        }
    }
}

impl Tally {
    fn new() -> Tally {
        Tally {
            definite: 0,
            stale: 0,
            fenced: 0,
            possible: 0,
            first_definite: Smallest::new(REPORTED_VIOLATIONS),
            first_fenced: Smallest::new(REPORTED_VIOLATIONS),
            possible_groups: HashMap::default(),
            groups_done: 0,
            first_groups: Smallest::new(REPORTED_VIOLATIONS),
        }
    }

    /// Counts the group of an unknown acquire that no overlap can join any more, and keeps it
    /// if it is among the first.
    fn close_group(&mut self, acquire: u64) {
        if let Some((count, order, first)) = self.possible_groups.remove(&acquire) {
            self.groups_done += 1;
            self.first_groups.push(order, (count, first));
        }
    }

    /// Counts an overlap whose kind is settled, and keeps it if it is among the first.
    fn record(&mut self, pair: Pair) {
        let order = pair.order();
        if pair.kind == "fenced" {
            self.fenced += 1;
            self.first_fenced.push(order, pair);
        } else if pair.certain() {
            self.definite += 1;
            if pair.kind == "stale" {
                self.stale += 1;
            }
            self.first_definite.push(order, pair);
        } else {
            self.possible += 1;
            let group = self
                .possible_groups
                .entry(pair.unknown_side().acquire_index);
            match group {
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert((1, order, pair));
                }
                std::collections::hash_map::Entry::Occupied(mut slot) => {
                    let (count, first_order, first) = slot.get_mut();
                    *count += 1;
                    if order < *first_order {
                        (*first_order, *first) = (order, pair);
                    }
                }
            }
        }
    }
}

impl Pair {
    /// Both holds are definite.
    fn certain(&self) -> bool {
        self.first.certain && self.second.certain
    }

    /// The hold of a possible double grant that is an unknown acquire.
    fn unknown_side(&self) -> &Candidate {
        if self.first.certain {
            &self.second
        } else {
            &self.first
        }
    }
}

impl LockSafety {
    /// The double grants with both leases live: the lock's own failures, without the zombies.
    pub fn lease_double_grant_count(&self) -> usize {
        self.double_grant_count - self.stale_double_grant_count
    }
}

impl Checked for LockSafety {
    fn name(&self) -> &'static str {
        "lock-safety"
    }
    fn explanations(&self) -> Vec<&Explanation> {
        let grants = self.double_grants.iter().chain(&self.fenced_double_grants);
        grants.filter_map(|g| g.explanation.as_ref()).collect()
    }
    fn valid(&self) -> Valid {
        self.valid
    }
    /// The double grants, and how many of those listed were a slow holder's: a client that
    /// held past its lease with no fault on it, which a busy machine does, not the system.
    fn violations(&self) -> Vec<String> {
        if self.double_grant_count == 0 {
            return Vec::new();
        }
        let slow = self
            .double_grants
            .iter()
            .filter(|g| {
                g.explanation
                    .as_ref()
                    .is_some_and(|e| e.cause == Cause::SlowHolder)
            })
            .count();
        let found = count(self.double_grant_count, "double grant");
        let which = match slow {
            0 => return vec![found],
            1 if self.double_grant_count == 1 => "a slow holder".to_string(),
            n if n == self.double_grant_count => "every one a slow holder".to_string(),
            n => format!("{n} of them slow holders"),
        };
        vec![format!(
            "{found} ({which}: a client held past its lease with no fault on it, which a busy \
             machine does, not the system)"
        )]
    }
    fn vouches(&self) -> Option<String> {
        if self.fenced_double_grant_count > 0 {
            Some("every holder that outlived its lease was fenced off by the storage".into())
        } else {
            (self.holds > 0).then(|| "no two processes held a lock at once".into())
        }
    }
    fn summary(&self) -> Vec<(&'static str, String)> {
        let fenced = match self.fenced_double_grant_count {
            0 => String::new(),
            n => format!("; {} fenced off by the storage", count(n, "zombie overlap")),
        };
        vec![(
            "holds",
            format!(
                "{} grants checked, {} acquires with unknown outcome{fenced}",
                self.holds, self.unknown_acquires
            ),
        )]
    }
    fn findings(&self, limit: usize) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        for (i, grant) in self.double_grants.iter().take(limit).enumerate() {
            match &grant.explanation {
                Some(explained) => {
                    lines.push(format!("#{} {}", i + 1, explained.line()));
                    lines.push(format!("   {}", grant.line()));
                }
                None => lines.push(format!("#{} {}", i + 1, grant.line())),
            }
        }
        lines.extend(and_more(self.double_grants.len(), limit, "double grant"));
        if self.possible_double_grant_count > 0 {
            lines.push(format!(
                "{} from {}",
                count(self.possible_double_grant_count, "possible double grant"),
                count(self.possible_double_grant_acquires, "unknown acquire")
            ));
        }
        lines.extend(
            self.possible_double_grant_groups
                .iter()
                .take(limit)
                .map(|group| {
                    format!(
                        "  process {}'s acquire at {} on {}, unknown, could overlap {}; first: {}",
                        group.unknown_acquire.process,
                        seconds(group.unknown_acquire.start_ms),
                        group.key,
                        count(group.overlapped_holds, "hold"),
                        group.first.line()
                    )
                }),
        );
        lines.extend(and_more(
            self.possible_double_grant_groups.len(),
            limit,
            "unknown acquire",
        ));
        lines
    }
    fn unknown_because(&self) -> Option<String> {
        (self.possible_double_grant_count > 0).then(|| {
            format!(
                "{} from {} whose outcome is unknown",
                count(self.possible_double_grant_count, "possible double grant"),
                count(self.possible_double_grant_acquires, "acquire")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::HistoryBuilder;
    use crate::history::Op;
    use crate::holds::holds;
    use crate::windows::faults;
    use crate::Renewal;

    /// Builds histories in order, times in milliseconds.
    trait LockSafetyScript {
        fn invoke_at(&mut self, ms: u64, p: u64, f: &str) -> &mut Self;
        fn complete(&mut self, ms: u64, p: u64, kind: OpType, f: &str) -> &mut Self;
        fn hold(&mut self, from: u64, to: u64, p: u64) -> &mut Self;
        fn nemesis_at(&mut self, ms: u64, f: &str, fault: &str) -> &mut Self;
        fn check(&self) -> LockSafety;
    }

    impl LockSafetyScript for HistoryBuilder {
        fn invoke_at(&mut self, ms: u64, p: u64, f: &str) -> &mut Self {
            let mut op = Op::new(Process::Client(p), OpType::Invoke, f).key("lock");
            op.ttl_ms = (f == "acquire").then_some(1_000);
            self.at(ms, op)
        }
        fn complete(&mut self, ms: u64, p: u64, kind: OpType, f: &str) -> &mut Self {
            self.at(ms, Op::new(Process::Client(p), kind, f).key("lock"))
        }
        fn hold(&mut self, from: u64, to: u64, p: u64) -> &mut Self {
            self.invoke_at(from, p, "acquire")
                .complete(from + 1, p, OpType::Ok, "acquire")
                .invoke_at(to, p, "release")
                .complete(to + 1, p, OpType::Ok, "release")
        }
        fn nemesis_at(&mut self, ms: u64, f: &str, fault: &str) -> &mut Self {
            let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(vec!["n1".into()]);
            op.fault = Some(fault.into());
            self.at(ms, op)
        }
        fn check(&self) -> LockSafety {
            check(&self.build())
        }
    }

    #[test]
    fn the_verdict_line_says_a_double_grant_was_a_slow_holders() {
        // Process 1's lease of 1 s ran out at 1.0 s with no fault on it; it held until 2.0 s.
        let r = HistoryBuilder::default().hold(0, 2_000, 1).hold(1_500, 1_600, 2).check();
        assert_eq!(r.double_grant_count, 1);
        assert_eq!(
            r.violations(),
            ["1 double grant (a slow holder: a client held past its lease with no fault on it, \
              which a busy machine does, not the system)"]
        );
        // Without the explanation's cause, the line is the count alone.
        let mut unexplained = r.clone();
        unexplained.double_grants[0].explanation = None;
        assert_eq!(unexplained.violations(), ["1 double grant"]);
    }

    #[test]
    fn sequential_holds_are_valid() {
        let r = HistoryBuilder::default()
            .hold(0, 100, 1)
            .hold(200, 300, 2)
            .hold(300, 400, 1)
            .check();
        assert_eq!(r.valid, Valid::True);
        assert_eq!(r.holds, 3);
    }

    #[test]
    fn rule_1_overlapping_holds_are_a_double_grant() {
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 1, "acquire")
            .complete(1, 1, OpType::Ok, "acquire")
            .invoke_at(50, 2, "acquire")
            .complete(51, 2, OpType::Ok, "acquire")
            .invoke_at(100, 1, "release")
            .complete(101, 1, OpType::Ok, "release");
        let r = s.check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.double_grant_count, 1);
        let g = &r.double_grants[0];
        assert_eq!(g.first.process, Process::Client(1));
        assert_eq!(g.second.process, Process::Client(2));
        assert_eq!(g.overlap_ms, 49.0);
        assert_eq!(g.first.ended_by, "release");
    }

    #[test]
    fn rule_1_a_hold_ends_at_its_validity() {
        // Process 1 never releases: its 1 s lease ends at 1000 ms, so process 2 at 1001 is fine
        // and process 3 at 900 is not.
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 1, "acquire")
            .complete(5, 1, OpType::Ok, "acquire")
            .hold(1001, 1100, 2);
        assert_eq!(s.check().valid, Valid::True);
        s.hold(900, 950, 3);
        let r = s.check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.double_grants[0].first.ended_by, "validity");
        assert_eq!(r.double_grants[0].first.end_ms, 1000.0);
    }

    #[test]
    fn rule_1_a_granted_validity_shorter_than_the_ttl_wins() {
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 1, "acquire");
        let mut ok = Op::new(Process::Client(1), OpType::Ok, "acquire").key("lock");
        ok.validity_ms = Some(500);
        s.at(5, ok).hold(600, 700, 2);
        assert_eq!(s.check().valid, Valid::True);
    }

    #[test]
    fn rule_5_a_holder_acting_past_its_lease_is_a_stale_double_grant() {
        // Process 1's lease ends at 1000 ms, but it releases only at 1500 (it was paused):
        // process 2, granted at 1100, shares the lock with a zombie.
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 1, "acquire")
            .complete(1, 1, OpType::Ok, "acquire")
            .invoke_at(1_100, 2, "acquire")
            .complete(1_101, 2, OpType::Ok, "acquire")
            .invoke_at(1_500, 1, "release")
            .complete(1_501, 1, OpType::Fail, "release");
        let r = s.check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!((r.double_grant_count, r.stale_double_grant_count), (1, 1));
        assert_eq!(r.lease_double_grant_count(), 0);
        let g = &r.double_grants[0];
        assert_eq!(g.kind, "stale");
        assert_eq!(g.overlap_ms, 399.0);
        assert_eq!(g.first.lease_end_ms, 1000.0);
        assert_eq!(g.first.end_ms, 1500.0);
    }

    #[test]
    fn rule_6_a_zombie_the_storage_refused_is_fenced_not_invalid() {
        // Process 1 (fence 7) is paused past its lease (1000 ms); process 2 (fence 8) takes the
        // lock at 1100; process 1 wakes and writes at 1400, and the storage refuses it.
        let zombie = |write: OpType, fence: Option<u64>| {
            let mut s = HistoryBuilder::default();
            s.invoke_at(0, 1, "acquire").at(
                1,
                Op::new(Process::Client(1), OpType::Ok, "acquire")
                    .key("lock")
                    .fence(Some(7)),
            );
            s.invoke_at(1_100, 2, "acquire").at(
                1_101,
                Op::new(Process::Client(2), OpType::Ok, "acquire")
                    .key("lock")
                    .fence(Some(8)),
            );
            s.at(
                1_400,
                Op::new(Process::Client(1), OpType::Invoke, "add")
                    .key("doc")
                    .fence(fence),
            )
            .at(1_401, Op::new(Process::Client(1), write, "add").key("doc"))
            .invoke_at(1_500, 1, "release")
            .complete(1_501, 1, OpType::Fail, "release");
            s.check()
        };
        let refused = zombie(OpType::Fail, Some(7));
        assert_eq!(refused.valid, Valid::True);
        assert_eq!(refused.double_grant_count, 0);
        assert_eq!(refused.fenced_double_grant_count, 1);
        assert_eq!(refused.fenced_double_grants[0].kind, "fenced");

        let accepted = zombie(OpType::Ok, Some(7));
        assert_eq!(
            accepted.valid,
            Valid::False,
            "the zombie's write got through"
        );
        assert_eq!(accepted.stale_double_grant_count, 1);
        assert_eq!(accepted.fenced_double_grant_count, 0);

        // A write its holder skipped carries no fence: no storage refused it.
        let skipped = zombie(OpType::Fail, None);
        assert_eq!(skipped.valid, Valid::False, "nothing fenced the zombie off: {skipped:?}");
        assert_eq!(skipped.fenced_double_grant_count, 0);
    }

    #[test]
    fn rule_6_never_excuses_two_live_leases_or_an_unfenced_zombie() {
        let r = HistoryBuilder::default().hold(0, 500, 1).hold(100, 200, 2).check();
        assert_eq!(r.fenced_double_grant_count, 0);
        // A zombie without a fence, even with no storage access at all, stays stale.
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 1, "acquire")
            .complete(1, 1, OpType::Ok, "acquire")
            .hold(1_100, 1_200, 2)
            .invoke_at(1_500, 1, "release")
            .complete(1_501, 1, OpType::Fail, "release");
        assert_eq!(s.check().stale_double_grant_count, 1);
    }

    #[test]
    fn rule_5_overlapping_live_leases_are_a_lease_double_grant() {
        let r = HistoryBuilder::default().hold(0, 500, 1).hold(100, 200, 2).check();
        assert_eq!(r.double_grants[0].kind, "lease");
        assert_eq!(r.stale_double_grant_count, 0);
    }

    #[test]
    fn rule_1_a_renewal_extends_the_lease_and_a_failed_one_does_not() {
        // Lease 1000 ms; renewed at 800 ms for 1000 ms more: held until 1800, released at 1500.
        let renewal = |s: &mut HistoryBuilder, outcome| {
            let mut renew = Op::new(Process::Client(1), OpType::Invoke, "renew").key("lock");
            renew.ttl_ms = Some(1_000);
            s.at(800, renew).at(
                801,
                Op::new(Process::Client(1), outcome, "renew").key("lock"),
            );
        };
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 1, "acquire")
            .complete(1, 1, OpType::Ok, "acquire");
        renewal(&mut s, OpType::Ok);
        s.invoke_at(1_500, 1, "release")
            .complete(1_501, 1, OpType::Ok, "release");
        s.hold(1_600, 1_700, 2);
        let r = s.check();
        assert_eq!(r.valid, Valid::True, "{:?}", r.double_grants);

        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 1, "acquire")
            .complete(1, 1, OpType::Ok, "acquire");
        renewal(&mut s, OpType::Fail);
        s.invoke_at(1_500, 1, "release")
            .complete(1_501, 1, OpType::Ok, "release");
        s.hold(1_200, 1_300, 2);
        let r = s.check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(
            r.double_grants[0].kind, "stale",
            "the lease ended at 1000 ms"
        );
    }

    /// From a busy run of `python-redis-lock-renewal-dies`: process 40's renewal reported at
    /// 25.4219 s promised the lease to 28.4219 s, but the server, paused, let the key run out
    /// (its renewal was processed a little before the report): the next renewal came back
    /// refused at 28.4198 s, and process 13 was granted at 28.4205 s. Not two live leases, a
    /// holder past its lease.
    #[test]
    fn rule_1_a_refused_renewal_ends_the_lease_when_it_comes_back() {
        // Renewed at 2000 for 3000 ms; the next renewal comes back at 4990 with `last`; process
        // 2 is granted at 4993 while process 1 still holds.
        let ending_with = |last| {
            let mut s = HistoryBuilder::default();
            s.invoke_at(0, 1, "acquire")
                .complete(1, 1, OpType::Ok, "acquire");
            for (at, outcome) in [(2_000, OpType::Ok), (4_990, last)] {
                let mut renew = Op::new(Process::Client(1), OpType::Invoke, "renew").key("lock");
                renew.ttl_ms = Some(3_000);
                s.at(at, renew)
                    .at(at, Op::new(Process::Client(1), outcome, "renew").key("lock"));
            }
            s.hold(4_992, 6_000, 2);
            s.invoke_at(8_000, 1, "release")
                .complete(8_001, 1, OpType::Fail, "release");
            s.check()
        };
        let r = ending_with(OpType::Fail);
        assert_eq!(r.double_grants[0].kind, "stale");
        assert_eq!(r.double_grants[0].first.lease_end_ms, 4_990.0);
        // A renewal whose outcome is unknown says nothing of the lease: still live at 4993.
        let r = ending_with(OpType::Info);
        assert_eq!(r.double_grants[0].kind, "lease");
    }

    #[test]
    fn rule_1_a_silently_renewed_grant_overlapped_past_its_promise_is_stale() {
        // Process 1's library renews silently; its lease as promised ends at 1000 ms. Process
        // 2 is granted at 1200 while 1 still holds: stale, however 1's library renewed, and
        // a `renew` in the history, whoever wrote it, does not make it a lease double grant.
        let silent = |renew_recorded: bool| {
            let mut s = HistoryBuilder::default();
            s.invoke_at(0, 1, "acquire").at(
                1,
                Op::new(Process::Client(1), OpType::Ok, "acquire")
                    .key("lock")
                    .renewal(Renewal::Silent),
            );
            if renew_recorded {
                let mut renew = Op::new(Process::Client(1), OpType::Invoke, "renew").key("lock");
                renew.ttl_ms = Some(1_000);
                s.at(800, renew).at(
                    801,
                    Op::new(Process::Client(1), OpType::Ok, "renew").key("lock"),
                );
            }
            s.hold(1_200, 1_300, 2)
                .invoke_at(1_500, 1, "release")
                .complete(1_501, 1, OpType::Ok, "release");
            s.check()
        };
        for renew_recorded in [false, true] {
            let r = silent(renew_recorded);
            assert_eq!(r.valid, Valid::False, "renew recorded: {renew_recorded}");
            assert_eq!(r.double_grants[0].kind, "stale");
            assert_eq!(r.double_grants[0].first.lease_end_ms, 1_000.0);
        }
    }

    #[test]
    fn rule_1_a_reported_renewal_extends_the_lease_like_the_watchdogs() {
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 1, "acquire").at(
            1,
            Op::new(Process::Client(1), OpType::Ok, "acquire")
                .key("lock")
                .renewal(Renewal::Reported),
        );
        let mut renew = Op::new(Process::Client(1), OpType::Invoke, "renew").key("lock");
        renew.ttl_ms = Some(1_000);
        s.at(800, renew)
            .at(
                801,
                Op::new(Process::Client(1), OpType::Ok, "renew").key("lock"),
            )
            .hold(1_200, 1_300, 2)
            .invoke_at(1_500, 1, "release")
            .complete(1_501, 1, OpType::Ok, "release");
        let r = s.check();
        assert_eq!(r.double_grants[0].kind, "lease");
        assert_eq!(r.double_grants[0].first.lease_end_ms, 1_800.0);
    }

    #[test]
    fn rule_2_a_failed_or_lost_release_does_not_extend_the_hold() {
        for outcome in [OpType::Fail, OpType::Info] {
            let mut s = HistoryBuilder::default();
            s.invoke_at(0, 1, "acquire")
                .complete(1, 1, OpType::Ok, "acquire")
                .invoke_at(100, 1, "release")
                .complete(900, 1, outcome, "release")
                .hold(200, 300, 2);
            let r = s.check();
            assert_eq!(r.valid, Valid::True, "release {outcome:?}");
        }
    }

    #[test]
    fn rule_2_a_lock_in_the_writes_transaction_ends_at_the_write() {
        // Process 1's lock is its transaction's: its write (invoked at 100, committed at 150)
        // releases it, and process 2, waiting on the server, is granted at 150, before 1
        // records its release. Marked `ends_with_write`, that is no double grant; unmarked,
        // the hold runs to the release and it is one.
        for marked in [true, false] {
            let mut s = HistoryBuilder::default();
            s.invoke_at(0, 1, "acquire").at(
                1,
                Op::new(Process::Client(1), OpType::Ok, "acquire")
                    .key("lock")
                    .ends_with_write(marked),
            );
            s.at(
                100,
                Op::new(Process::Client(1), OpType::Invoke, "add").key("doc"),
            )
            .at(
                160,
                Op::new(Process::Client(1), OpType::Ok, "add").key("doc"),
            )
            .hold(150, 300, 2)
            .invoke_at(170, 1, "release")
            .complete(171, 1, OpType::Ok, "release");
            let r = s.check();
            let expected = if marked { Valid::True } else { Valid::False };
            assert_eq!(r.valid, expected, "marked: {marked}");
        }
    }

    #[test]
    fn rule_3_a_failed_acquire_holds_nothing() {
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 1, "acquire")
            .complete(1, 1, OpType::Fail, "acquire")
            .hold(0, 100, 2);
        let r = s.check();
        assert_eq!(r.valid, Valid::True);
        assert_eq!(r.holds, 1);
    }

    #[test]
    fn rule_4_an_unknown_acquire_makes_an_overlap_unknown_never_invalid() {
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 1, "acquire")
            .complete(500, 1, OpType::Info, "acquire")
            .hold(100, 200, 2);
        let r = s.check();
        assert_eq!(r.valid, Valid::Unknown);
        assert_eq!(r.double_grant_count, 0);
        assert_eq!(r.possible_double_grant_count, 1);
        assert_eq!(r.unknown_acquires, 1);
    }

    #[test]
    fn rule_4_a_client_that_died_just_after_its_grant_held_from_its_death_certainly() {
        // Process 1 waits from 0 in a queue behind process 2 (100-300) and dies at 310, just
        // after its grant: no overlap, and no doubt about the grant.
        let died = |at: u64| {
            let mut s = HistoryBuilder::default();
            s.invoke_at(0, 1, "acquire")
                .at(
                    at,
                    Op::new(Process::Client(1), OpType::Info, "acquire")
                        .key("lock")
                        .error("crashed: the client died holding the lock")
                        .died_holding(true),
                )
                .hold(100, 300, 2);
            s.check()
        };
        let after = died(310);
        assert_eq!(after.valid, Valid::True, "{after:?}");
        assert_eq!(after.unknown_acquires, 0);
        assert_eq!(after.holds, 2, "its grant is a hold");
        // Granted while process 2 still held: a double grant, not a possible one.
        let during = died(200);
        assert_eq!(during.valid, Valid::False);
        assert_eq!(during.double_grant_count, 1);
        assert_eq!(during.possible_double_grant_count, 0);

        // A session lock dies with its client's connection: process 2, granted 5 ms after
        // process 1 died holding one, held it alone.
        let mut s = HistoryBuilder::default();
        let mut crashed = Op::new(Process::Client(1), OpType::Info, "acquire")
            .key("lock")
            .error("crashed: the client died holding the lock")
            .died_holding(true);
        crashed.renewal = Some(Renewal::Connection);
        s.invoke_at(0, 1, "acquire")
            .at(100, crashed)
            .hold(105, 300, 2);
        let session = s.check();
        assert_eq!(session.valid, Valid::True, "{session:?}");
        assert_eq!(session.holds, 2);
    }

    #[test]
    fn rule_4_the_possible_double_grants_of_one_unknown_acquire_are_one_finding() {
        // Process 9's acquire is unknown for 1000 ms and overlaps three holds; process 8's
        // overlaps one; a certain double grant beside them is still reported on its own.
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 9, "acquire")
            .complete(5, 9, OpType::Info, "acquire")
            .hold(100, 200, 1)
            .hold(300, 400, 2)
            .hold(500, 600, 3)
            .invoke_at(2_000, 8, "acquire")
            .complete(2_005, 8, OpType::Info, "acquire")
            .hold(2_100, 2_200, 4)
            .hold(5_000, 5_500, 5)
            .hold(5_100, 5_200, 6);
        let r = s.check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.double_grant_count, 1);
        assert_eq!(r.possible_double_grant_count, 4);
        assert_eq!(r.possible_double_grant_acquires, 2);
        let groups: Vec<_> = r
            .possible_double_grant_groups
            .iter()
            .map(|g| {
                (
                    g.unknown_acquire.process,
                    g.overlapped_holds,
                    g.first.second.process,
                )
            })
            .collect();
        assert_eq!(
            groups,
            [
                (Process::Client(9), 3, Process::Client(1)),
                (Process::Client(8), 1, Process::Client(4)),
            ]
        );
        assert_eq!(
            r.possible_double_grant_groups[0].unknown_acquire.ended_by,
            "unknown-outcome"
        );
    }

    #[test]
    fn rule_4_an_unknown_acquire_outside_every_hold_is_harmless() {
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 1, "acquire")
            .complete(10, 1, OpType::Info, "acquire")
            .hold(1_001, 1_100, 2);
        assert_eq!(s.check().valid, Valid::True);
    }

    #[test]
    fn rule_4_an_acquire_never_completed_counts_as_unknown() {
        let mut s = HistoryBuilder::default();
        s.hold(100, 200, 2).invoke_at(150, 1, "acquire");
        let r = s.check();
        assert_eq!(r.valid, Valid::Unknown);
        assert_eq!(r.unknown_acquires, 1);
    }

    #[test]
    fn rule_4_two_unknown_acquires_never_conflict() {
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 1, "acquire")
            .invoke_at(1, 2, "acquire")
            .complete(5, 1, OpType::Info, "acquire")
            .complete(5, 2, OpType::Info, "acquire");
        assert_eq!(s.check().valid, Valid::True);
    }

    #[test]
    fn a_definite_double_grant_beats_a_possible_one() {
        let mut s = HistoryBuilder::default();
        s.invoke_at(0, 3, "acquire")
            .complete(1, 3, OpType::Info, "acquire")
            .invoke_at(10, 1, "acquire")
            .complete(11, 1, OpType::Ok, "acquire")
            .hold(20, 30, 2);
        let r = s.check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.double_grant_count, 1);
    }

    #[test]
    fn rule_5_touching_holds_and_other_keys_do_not_conflict() {
        let mut s = HistoryBuilder::default();
        s.hold(0, 100, 1);
        // Process 2 acquires exactly when process 1 invoked its release.
        s.invoke_at(99, 2, "acquire")
            .complete(100, 2, OpType::Ok, "acquire")
            .invoke_at(150, 2, "release");
        let other = Op::new(Process::Client(3), OpType::Invoke, "acquire").key("other");
        s.at(10, other).at(
            11,
            Op::new(Process::Client(3), OpType::Ok, "acquire").key("other"),
        );
        assert_eq!(s.check().valid, Valid::True);
    }

    #[test]
    fn rule_5_faults_between_the_first_grant_and_the_overlap_are_named() {
        let mut s = HistoryBuilder::default();
        s.nemesis_at(0, "start", "pause").nemesis_at(5, "stop", "pause");
        s.invoke_at(10, 1, "acquire")
            .complete(11, 1, OpType::Ok, "acquire");
        s.nemesis_at(20, "start", "kill").nemesis_at(30, "stop", "kill");
        s.hold(40, 60, 2);
        s.nemesis_at(500, "start", "pause");
        let r = s.check();
        assert_eq!(r.valid, Valid::False);
        let faults: Vec<_> = r.double_grants[0].faults.iter().map(|f| &f.fault).collect();
        assert_eq!(faults, ["kill"]);
        assert_eq!(r.double_grants[0].faults[0].stop_ms, Some(30.0));
    }

    #[test]
    fn holds_and_faults_are_the_ones_the_check_uses() {
        let mut s = HistoryBuilder::default();
        s.nemesis_at(0, "start", "kill").nemesis_at(30, "stop", "kill");
        s.hold(40, 60, 2);
        s.invoke_at(50, 1, "acquire")
            .complete(55, 1, OpType::Info, "acquire");
        s.nemesis_at(500, "start", "pause");
        let holds = holds(&s.build());
        let summary: Vec<_> = holds
            .iter()
            .map(|h| (h.process, h.start_ms, h.end_ms, h.ended_by.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                (Process::Client(2), 41.0, 60.0, "release"),
                (Process::Client(1), 50.0, 1050.0, "unknown-outcome"),
            ]
        );
        let faults = faults(&s.build());
        assert_eq!(faults.len(), 2);
        assert_eq!((faults[0].start_ms, faults[0].stop_ms), (0.0, Some(30.0)));
        assert_eq!(
            (faults[1].fault.as_str(), faults[1].stop_ms),
            ("pause", None)
        );
    }
}
