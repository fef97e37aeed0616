//! The `lock-safety` checker: no two processes may hold one lock at the same time.
//!
//! Rules, each with a unit test below:
//!
//! 1. A process holds a lock from its acquire's `ok` until it invokes `release` on that key
//!    (or, if it never does, until its lease ends). Its **lease**, the exclusivity the lock
//!    promised, ends at the acquire's invoke time plus `validity_ms` (or plus the requested
//!    `ttl_ms` where no validity was given). A lease watchdog's `renew` that returns `ok`
//!    extends the lease to the renewal's invoke plus its `ttl_ms`; one that fails or times out
//!    extends nothing. A grant marked `renewal: reported` comes from a library that renews in
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
//! The check is a sweep over holds sorted by start, so it runs in O(n log n) for a history of
//! n ops when holds rarely overlap.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::operation::ms;
use crate::verdict::{count, seconds, Checked};
use crate::{Op, OpType, Process, Renewal, Valid};

/// How many violations of each kind the result lists in full; the counts are always exact.
pub const REPORTED_VIOLATIONS: usize = 100;

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

/// One process's hold on a lock, as the checker derived it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hold {
    pub process: Process,
    pub key: String,
    /// `index` of the acquire's invoke.
    pub acquire_index: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    pub start_ms: f64,
    pub end_ms: f64,
    /// When the lease ended: the acquire's invoke plus its validity.
    pub lease_end_ms: f64,
    /// Why the hold ended: `release`, `validity`, or `unknown-outcome` for a possible hold.
    pub ended_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<String>>,
}

/// Two holders of one lock at once.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DoubleGrant {
    pub key: String,
    /// `lease` (both leases live), `stale` (a holder had outlived its lease), or `fenced` (a
    /// stale one whose zombie the storage refused).
    pub kind: String,
    /// The hold that began first.
    pub first: Hold,
    pub second: Hold,
    pub overlap_ms: f64,
    pub faults: Vec<FaultWindow>,
}

impl DoubleGrant {
    /// One line: who, when, how long, under which faults.
    pub fn line(&self) -> String {
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|f| {
                let stop = f.stop_ms.map_or("end".to_string(), seconds);
                let on = if f.nodes.is_empty() {
                    String::new()
                } else {
                    format!(" {}", f.nodes.join(","))
                };
                format!("{}{on} {}-{}", f.fault, seconds(f.start_ms), stop)
            })
            .collect();
        let nodes = |n: &Option<Vec<String>>| {
            n.as_ref()
                .filter(|n| !n.is_empty())
                .map(|n| format!(" on {}", n.join(",")))
                .unwrap_or_default()
        };
        let stale = if self.kind == "stale" {
            "[stale: a holder outlived its lease] "
        } else {
            ""
        };
        format!(
            "{stale}key {}: process {} held it from {}{} and process {} from {}{}, overlapping \
             {:.1} ms; faults: {}",
            self.key,
            self.first.process,
            seconds(self.first.start_ms),
            nodes(&self.first.nodes),
            self.second.process,
            seconds(self.second.start_ms),
            nodes(&self.second.nodes),
            self.overlap_ms,
            if faults.is_empty() {
                "none".to_string()
            } else {
                faults.join("; ")
            }
        )
    }
}

/// A fault from its nemesis `start` to its `stop` (or the end of the history).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultWindow {
    pub fault: String,
    pub nodes: Vec<String>,
    pub start_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_ms: Option<f64>,
}

/// Every hold the checker derives from a history, in order of start: the definite ones and,
/// with `ended_by` `unknown-outcome`, the possible ones (rule 4). For drawing a history; the
/// verdict is [`check`]'s.
pub fn holds(history: &[Op]) -> Vec<Hold> {
    let (mut holds, _) = derive_holds(history, history_end(history));
    holds.sort_by_key(|h| (h.start, h.acquire_index));
    holds.iter().map(Candidate::to_hold).collect()
}

/// The faults a history records, from each nemesis `start` to the next `stop` of that fault,
/// as [`DoubleGrant::faults`] names them.
pub fn faults(history: &[Op]) -> Vec<FaultWindow> {
    fault_windows(history)
        .iter()
        .map(Window::to_window)
        .collect()
}

pub(crate) fn history_end(history: &[Op]) -> u64 {
    history.iter().map(|op| op.time).max().unwrap_or(0)
}

/// Checks a history for double grants.
pub fn check(history: &[Op]) -> LockSafety {
    let (holds, unknown_acquires) = derive_holds(history, history_end(history));
    let accesses = storage_accesses(history);
    let faults = fault_windows(history);

    let mut by_key: HashMap<&str, Vec<&Candidate>> = HashMap::new();
    for hold in &holds {
        by_key.entry(hold.key.as_str()).or_default().push(hold);
    }
    let mut keys: Vec<_> = by_key.keys().copied().collect();
    keys.sort_unstable();

    let mut definite = Vec::new();
    let mut possible = Vec::new();
    let mut fenced = Vec::new();
    for key in keys {
        let mut on_key = by_key.remove(key).unwrap_or_default();
        on_key.sort_by_key(|h| (h.start, h.end));
        let mut active: Vec<&Candidate> = Vec::new();
        for hold in on_key {
            active.retain(|a| a.end > hold.start);
            for earlier in &active {
                if earlier.process == hold.process || (!earlier.certain && !hold.certain) {
                    continue;
                }
                let live = |c: &Candidate| c.end.min(c.lease_end);
                let lease_overlap = live(earlier).min(live(hold)).saturating_sub(hold.start);
                let overlap = earlier.end.min(hold.end).saturating_sub(hold.start);
                let (kind, overlap) = match (lease_overlap, overlap) {
                    (0, 0) => continue,
                    (0, stale) => ("stale", stale),
                    (live, _) => ("lease", live),
                };
                let zombies = [*earlier, hold]
                    .into_iter()
                    .filter(|c| c.end.min(c.lease_end) <= hold.start);
                let kind =
                    if kind == "stale" && zombies.into_iter().all(|z| z.fenced_off(&accesses)) {
                        "fenced"
                    } else {
                        kind
                    };
                let pair = (*earlier, hold, kind, overlap);
                if kind == "fenced" {
                    fenced.push(pair);
                } else if earlier.certain && hold.certain {
                    definite.push(pair);
                } else {
                    possible.push(pair);
                }
            }
            active.push(hold);
        }
    }

    let by_time = |a: &Pair, b: &Pair| (a.1.start, a.0.start).cmp(&(b.1.start, b.0.start));
    definite.sort_by(by_time);
    possible.sort_by(by_time);
    fenced.sort_by(by_time);
    let to_double_grant = |&(first, second, kind, overlap): &Pair| DoubleGrant {
        key: first.key.clone(),
        kind: kind.to_string(),
        first: first.to_hold(),
        second: second.to_hold(),
        overlap_ms: ms(overlap),
        faults: faults
            .iter()
            .filter(|w| w.start < second.start + overlap && w.stop > first.start)
            .map(|w| w.to_window())
            .collect(),
    };
    let report = |pairs: &[Pair]| -> Vec<DoubleGrant> {
        pairs
            .iter()
            .take(REPORTED_VIOLATIONS)
            .map(to_double_grant)
            .collect()
    };
    let possible_groups = group_by_unknown_acquire(&possible);

    let valid = if !definite.is_empty() {
        Valid::False
    } else if !possible.is_empty() {
        Valid::Unknown
    } else {
        Valid::True
    };
    LockSafety {
        valid,
        holds: holds.iter().filter(|h| h.certain).count(),
        unknown_acquires,
        double_grant_count: definite.len(),
        stale_double_grant_count: definite.iter().filter(|p| p.2 == "stale").count(),
        double_grants: report(&definite),
        possible_double_grant_count: possible.len(),
        possible_double_grant_acquires: possible_groups.len(),
        possible_double_grant_groups: possible_groups
            .iter()
            .take(REPORTED_VIOLATIONS)
            .map(|pairs| {
                let unknown = unknown_side(pairs[0]);
                PossibleDoubleGrants {
                    key: unknown.key.clone(),
                    unknown_acquire: unknown.to_hold(),
                    overlapped_holds: pairs.len(),
                    first: to_double_grant(pairs[0]),
                }
            })
            .collect(),
        fenced_double_grant_count: fenced.len(),
        fenced_double_grants: report(&fenced),
    }
}

/// Possible double grants (time-ordered; each pairs one unknown acquire with a definite
/// hold) grouped by their unknown acquire, groups in order of their first pair.
fn group_by_unknown_acquire<'a, 'p>(possible: &'p [Pair<'a>]) -> Vec<Vec<&'p Pair<'a>>> {
    let mut groups: Vec<Vec<&Pair>> = Vec::new();
    let mut group_of: HashMap<u64, usize> = HashMap::new();
    for pair in possible {
        let unknown = unknown_side(pair);
        let next = groups.len();
        let group = *group_of.entry(unknown.acquire_index).or_insert(next);
        if group == next {
            groups.push(Vec::new());
        }
        groups[group].push(pair);
    }
    groups
}

/// The hold of a possible double grant that is an unknown acquire.
fn unknown_side<'a>(pair: &Pair<'a>) -> &'a Candidate {
    if pair.0.certain {
        pair.1
    } else {
        pair.0
    }
}

/// Each process's storage accesses (`read` and `add`): invoke time and how each ended.
type Accesses = HashMap<Process, Vec<(u64, OpType)>>;

fn storage_accesses(history: &[Op]) -> Accesses {
    let mut pending: HashMap<Process, u64> = HashMap::new();
    let mut accesses: Accesses = HashMap::new();
    let is_access = |op: &Op| !op.process.is_nemesis() && (op.f == "read" || op.f == "add");
    for op in history.iter().filter(|op| is_access(op)) {
        if op.kind == OpType::Invoke {
            pending.insert(op.process, op.time);
        } else if let Some(invoked) = pending.remove(&op.process) {
            accesses
                .entry(op.process)
                .or_default()
                .push((invoked, op.kind));
        }
    }
    accesses
}

/// Two overlapping holds, the earlier first, with the kind and length of their overlap.
type Pair<'a> = (&'a Candidate, &'a Candidate, &'static str, u64);

/// A definite or possible hold, in nanoseconds.
pub(crate) struct Candidate {
    pub(crate) process: Process,
    key: String,
    acquire_index: u64,
    token: Option<String>,
    /// The nodes the grant came from, when the client named them.
    pub(crate) nodes: Option<Vec<String>>,
    /// The acquire's `ok` (its invoke, for a possible hold).
    pub(crate) start: u64,
    pub(crate) end: u64,
    lease_end: u64,
    ended_by: &'static str,
    /// A definite hold: the acquire returned `ok`.
    pub(crate) certain: bool,
    fence: Option<u64>,
    /// Granted with `renewal: silent`: no recorded renewal extends its lease (rule 1).
    renews_silently: bool,
    /// Granted with `ends_with_write`: the holder's write releases it (rule 2).
    ends_with_write: bool,
}

impl Candidate {
    /// Rule 6: this zombie's grant was fenced, and the storage refused everything it tried
    /// once its lease had ended.
    fn fenced_off(&self, accesses: &Accesses) -> bool {
        self.fence.is_some()
            && accesses.get(&self.process).is_some_and(|list| {
                list.iter()
                    .filter(|(invoked, _)| (self.lease_end..=self.end).contains(invoked))
                    .all(|(_, outcome)| *outcome == OpType::Fail)
            })
    }

    fn to_hold(&self) -> Hold {
        Hold {
            process: self.process,
            key: self.key.clone(),
            acquire_index: self.acquire_index,
            token: self.token.clone(),
            start_ms: ms(self.start),
            end_ms: ms(self.end),
            lease_end_ms: ms(self.lease_end),
            ended_by: self.ended_by.to_string(),
            nodes: self.nodes.clone(),
        }
    }
}

/// Pairs every client invoke with its completion and turns acquires into holds.
/// Returns the holds and the number of acquires whose outcome is unknown.
pub(crate) fn derive_holds(history: &[Op], end_of_history: u64) -> (Vec<Candidate>, usize) {
    let mut pending: HashMap<Process, &Op> = HashMap::new();
    // Index into `holds` of each process's open hold per key, waiting for its release.
    let mut open: HashMap<(Process, &str), usize> = HashMap::new();
    let mut holds: Vec<Candidate> = Vec::new();
    let mut unknown = 0;

    let possible_hold = |invoke: &Op| {
        let lease_end = invoke
            .ttl_ms
            .map_or(end_of_history, |ttl| invoke.time + ttl * 1_000_000);
        Candidate {
            process: invoke.process,
            key: invoke.key.clone().unwrap_or_default(),
            acquire_index: invoke.index,
            token: invoke.token.clone(),
            nodes: None,
            start: invoke.time,
            end: lease_end,
            lease_end,
            ended_by: "unknown-outcome",
            certain: false,
            fence: None,
            renews_silently: false,
            ends_with_write: false,
        }
    };

    for op in history.iter().filter(|op| !op.process.is_nemesis()) {
        if op.kind == OpType::Invoke {
            if let Some(earlier) = pending.insert(op.process, op) {
                // An invoke with no completion before the process's next invoke: unknown.
                if earlier.f == "acquire" {
                    holds.push(possible_hold(earlier));
                    unknown += 1;
                }
            }
            let key = op.key.as_deref().unwrap_or_default();
            if op.f == "acquire" {
                // A hold never released ended with its lease; a later release is not its.
                open.remove(&(op.process, key));
            }
            if op.f == "release" {
                if let Some(i) = open.remove(&(op.process, key)) {
                    holds[i].end = op.time.max(holds[i].start);
                    holds[i].ended_by = "release";
                }
            }
            if op.f == "add" {
                let committing = open
                    .iter()
                    .find(|(&(process, _), &i)| process == op.process && holds[i].ends_with_write)
                    .map(|(&held, &i)| (held, i));
                if let Some((held, i)) = committing {
                    open.remove(&held);
                    holds[i].end = op.time.max(holds[i].start);
                    holds[i].ended_by = "write";
                }
            }
            continue;
        }
        let Some(invoke) = pending.remove(&op.process) else {
            continue;
        };
        if invoke.f == "renew" && op.kind == OpType::Ok {
            let key = invoke.key.as_deref().unwrap_or_default();
            let open_hold = open
                .get(&(op.process, key))
                .filter(|&&i| !holds[i].renews_silently);
            if let (Some(&i), Some(ttl)) = (open_hold, invoke.ttl_ms) {
                let hold = &mut holds[i];
                hold.lease_end = hold.lease_end.max(invoke.time + ttl * 1_000_000);
                if hold.ended_by == "validity" {
                    hold.end = hold.lease_end;
                }
            }
        }
        if invoke.f != "acquire" {
            continue;
        }
        match op.kind {
            OpType::Ok => {
                let validity = op.validity_ms.or(invoke.ttl_ms);
                let key = invoke.key.clone().unwrap_or_default();
                let lease_end = validity.map_or(end_of_history, |v| {
                    (invoke.time + v * 1_000_000).max(op.time)
                });
                holds.push(Candidate {
                    process: op.process,
                    acquire_index: invoke.index,
                    token: op.token.clone().or_else(|| invoke.token.clone()),
                    nodes: op.node.clone(),
                    start: op.time,
                    end: lease_end,
                    lease_end,
                    ended_by: "validity",
                    certain: true,
                    fence: op.fence.or(invoke.fence),
                    renews_silently: op.renewal == Some(Renewal::Silent),
                    ends_with_write: op.ends_with_write,
                    key,
                });
                let key = invoke.key.as_deref().unwrap_or_default();
                open.insert((op.process, key), holds.len() - 1);
            }
            OpType::Info => {
                holds.push(possible_hold(invoke));
                unknown += 1;
            }
            OpType::Fail | OpType::Invoke => {}
        }
    }
    for invoke in pending.values().filter(|op| op.f == "acquire") {
        holds.push(possible_hold(invoke));
        unknown += 1;
    }
    (holds, unknown)
}

/// A fault's window in nanoseconds; `stop` is `u64::MAX` for a fault never stopped.
pub(crate) struct Window {
    pub(crate) fault: String,
    pub(crate) nodes: Vec<String>,
    pub(crate) start: u64,
    pub(crate) stop: u64,
    pub(crate) stopped: bool,
}

impl Window {
    fn to_window(&self) -> FaultWindow {
        FaultWindow {
            fault: self.fault.clone(),
            nodes: self.nodes.clone(),
            start_ms: ms(self.start),
            stop_ms: self.stopped.then(|| ms(self.stop)),
        }
    }
}

/// Pairs each nemesis `start` with the next `stop` of the same fault.
pub(crate) fn fault_windows(history: &[Op]) -> Vec<Window> {
    let mut windows: Vec<Window> = Vec::new();
    for op in history.iter().filter(|op| op.process.is_nemesis()) {
        let fault = op.fault.clone().unwrap_or_else(|| op.f.clone());
        match op.f.as_str() {
            "start" => windows.push(Window {
                fault,
                nodes: op.node.clone().unwrap_or_default(),
                start: op.time,
                stop: u64::MAX,
                stopped: false,
            }),
            "stop" => {
                if let Some(w) = windows.iter_mut().find(|w| !w.stopped && w.fault == fault) {
                    w.stop = op.time;
                    w.stopped = true;
                }
            }
            _ => {}
        }
    }
    windows
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
    fn valid(&self) -> Valid {
        self.valid
    }
    fn violations(&self) -> Vec<String> {
        (self.double_grant_count > 0)
            .then(|| count(self.double_grant_count, "double grant"))
            .into_iter()
            .collect()
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
        let mut lines: Vec<String> = self
            .double_grants
            .iter()
            .take(limit)
            .enumerate()
            .map(|(i, grant)| format!("#{} {}", i + 1, grant.line()))
            .collect();
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
    use crate::history::Op;

    /// Builds histories in order, times in milliseconds.
    #[derive(Default)]
    struct Script(Vec<Op>);

    impl Script {
        fn push(&mut self, ms: u64, op: Op) -> &mut Self {
            let index = self.0.len() as u64;
            self.0.push(op.at(index, ms * 1_000_000));
            self
        }
        fn invoke(&mut self, ms: u64, p: u64, f: &str) -> &mut Self {
            let mut op = Op::new(Process::Client(p), OpType::Invoke, f).key("lock");
            op.ttl_ms = (f == "acquire").then_some(1_000);
            self.push(ms, op)
        }
        fn complete(&mut self, ms: u64, p: u64, kind: OpType, f: &str) -> &mut Self {
            self.push(ms, Op::new(Process::Client(p), kind, f).key("lock"))
        }
        fn hold(&mut self, from: u64, to: u64, p: u64) -> &mut Self {
            self.invoke(from, p, "acquire")
                .complete(from + 1, p, OpType::Ok, "acquire")
                .invoke(to, p, "release")
                .complete(to + 1, p, OpType::Ok, "release")
        }
        fn nemesis(&mut self, ms: u64, f: &str, fault: &str) -> &mut Self {
            let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(vec!["n1".into()]);
            op.fault = Some(fault.into());
            self.push(ms, op)
        }
        fn check(&self) -> LockSafety {
            check(&self.0)
        }
    }

    #[test]
    fn sequential_holds_are_valid() {
        let r = Script::default()
            .hold(0, 100, 1)
            .hold(200, 300, 2)
            .hold(300, 400, 1)
            .check();
        assert_eq!(r.valid, Valid::True);
        assert_eq!(r.holds, 3);
    }

    #[test]
    fn rule_1_overlapping_holds_are_a_double_grant() {
        let mut s = Script::default();
        s.invoke(0, 1, "acquire")
            .complete(1, 1, OpType::Ok, "acquire")
            .invoke(50, 2, "acquire")
            .complete(51, 2, OpType::Ok, "acquire")
            .invoke(100, 1, "release")
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
        let mut s = Script::default();
        s.invoke(0, 1, "acquire")
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
        let mut s = Script::default();
        s.invoke(0, 1, "acquire");
        let mut ok = Op::new(Process::Client(1), OpType::Ok, "acquire").key("lock");
        ok.validity_ms = Some(500);
        s.push(5, ok).hold(600, 700, 2);
        assert_eq!(s.check().valid, Valid::True);
    }

    #[test]
    fn rule_5_a_holder_acting_past_its_lease_is_a_stale_double_grant() {
        // Process 1's lease ends at 1000 ms, but it releases only at 1500 (it was paused):
        // process 2, granted at 1100, shares the lock with a zombie.
        let mut s = Script::default();
        s.invoke(0, 1, "acquire")
            .complete(1, 1, OpType::Ok, "acquire")
            .invoke(1_100, 2, "acquire")
            .complete(1_101, 2, OpType::Ok, "acquire")
            .invoke(1_500, 1, "release")
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
        let zombie = |write: OpType| {
            let mut s = Script::default();
            s.invoke(0, 1, "acquire").push(
                1,
                Op::new(Process::Client(1), OpType::Ok, "acquire")
                    .key("lock")
                    .fence(Some(7)),
            );
            s.invoke(1_100, 2, "acquire").push(
                1_101,
                Op::new(Process::Client(2), OpType::Ok, "acquire")
                    .key("lock")
                    .fence(Some(8)),
            );
            s.push(
                1_400,
                Op::new(Process::Client(1), OpType::Invoke, "add").key("doc"),
            )
            .push(1_401, Op::new(Process::Client(1), write, "add").key("doc"))
            .invoke(1_500, 1, "release")
            .complete(1_501, 1, OpType::Fail, "release");
            s.check()
        };
        let refused = zombie(OpType::Fail);
        assert_eq!(refused.valid, Valid::True);
        assert_eq!(refused.double_grant_count, 0);
        assert_eq!(refused.fenced_double_grant_count, 1);
        assert_eq!(refused.fenced_double_grants[0].kind, "fenced");

        let accepted = zombie(OpType::Ok);
        assert_eq!(
            accepted.valid,
            Valid::False,
            "the zombie's write got through"
        );
        assert_eq!(accepted.stale_double_grant_count, 1);
        assert_eq!(accepted.fenced_double_grant_count, 0);
    }

    #[test]
    fn rule_6_never_excuses_two_live_leases_or_an_unfenced_zombie() {
        let r = Script::default().hold(0, 500, 1).hold(100, 200, 2).check();
        assert_eq!(r.fenced_double_grant_count, 0);
        // A zombie without a fence, even with no storage access at all, stays stale.
        let mut s = Script::default();
        s.invoke(0, 1, "acquire")
            .complete(1, 1, OpType::Ok, "acquire")
            .hold(1_100, 1_200, 2)
            .invoke(1_500, 1, "release")
            .complete(1_501, 1, OpType::Fail, "release");
        assert_eq!(s.check().stale_double_grant_count, 1);
    }

    #[test]
    fn rule_5_overlapping_live_leases_are_a_lease_double_grant() {
        let r = Script::default().hold(0, 500, 1).hold(100, 200, 2).check();
        assert_eq!(r.double_grants[0].kind, "lease");
        assert_eq!(r.stale_double_grant_count, 0);
    }

    #[test]
    fn rule_1_a_renewal_extends_the_lease_and_a_failed_one_does_not() {
        // Lease 1000 ms; renewed at 800 ms for 1000 ms more: held until 1800, released at 1500.
        let renewal = |s: &mut Script, outcome| {
            let mut renew = Op::new(Process::Client(1), OpType::Invoke, "renew").key("lock");
            renew.ttl_ms = Some(1_000);
            s.push(800, renew).push(
                801,
                Op::new(Process::Client(1), outcome, "renew").key("lock"),
            );
        };
        let mut s = Script::default();
        s.invoke(0, 1, "acquire")
            .complete(1, 1, OpType::Ok, "acquire");
        renewal(&mut s, OpType::Ok);
        s.invoke(1_500, 1, "release")
            .complete(1_501, 1, OpType::Ok, "release");
        s.hold(1_600, 1_700, 2);
        let r = s.check();
        assert_eq!(r.valid, Valid::True, "{:?}", r.double_grants);

        let mut s = Script::default();
        s.invoke(0, 1, "acquire")
            .complete(1, 1, OpType::Ok, "acquire");
        renewal(&mut s, OpType::Fail);
        s.invoke(1_500, 1, "release")
            .complete(1_501, 1, OpType::Ok, "release");
        s.hold(1_200, 1_300, 2);
        let r = s.check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(
            r.double_grants[0].kind, "stale",
            "the lease ended at 1000 ms"
        );
    }

    #[test]
    fn rule_1_a_silently_renewed_grant_overlapped_past_its_promise_is_stale() {
        // Process 1's library renews silently; its lease as promised ends at 1000 ms. Process
        // 2 is granted at 1200 while 1 still holds: stale, however 1's library renewed, and
        // a `renew` in the history, whoever wrote it, does not make it a lease double grant.
        let silent = |renew_recorded: bool| {
            let mut s = Script::default();
            s.invoke(0, 1, "acquire").push(
                1,
                Op::new(Process::Client(1), OpType::Ok, "acquire")
                    .key("lock")
                    .renewal(Renewal::Silent),
            );
            if renew_recorded {
                let mut renew = Op::new(Process::Client(1), OpType::Invoke, "renew").key("lock");
                renew.ttl_ms = Some(1_000);
                s.push(800, renew).push(
                    801,
                    Op::new(Process::Client(1), OpType::Ok, "renew").key("lock"),
                );
            }
            s.hold(1_200, 1_300, 2)
                .invoke(1_500, 1, "release")
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
        let mut s = Script::default();
        s.invoke(0, 1, "acquire").push(
            1,
            Op::new(Process::Client(1), OpType::Ok, "acquire")
                .key("lock")
                .renewal(Renewal::Reported),
        );
        let mut renew = Op::new(Process::Client(1), OpType::Invoke, "renew").key("lock");
        renew.ttl_ms = Some(1_000);
        s.push(800, renew)
            .push(
                801,
                Op::new(Process::Client(1), OpType::Ok, "renew").key("lock"),
            )
            .hold(1_200, 1_300, 2)
            .invoke(1_500, 1, "release")
            .complete(1_501, 1, OpType::Ok, "release");
        let r = s.check();
        assert_eq!(r.double_grants[0].kind, "lease");
        assert_eq!(r.double_grants[0].first.lease_end_ms, 1_800.0);
    }

    #[test]
    fn rule_2_a_failed_or_lost_release_does_not_extend_the_hold() {
        for outcome in [OpType::Fail, OpType::Info] {
            let mut s = Script::default();
            s.invoke(0, 1, "acquire")
                .complete(1, 1, OpType::Ok, "acquire")
                .invoke(100, 1, "release")
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
            let mut s = Script::default();
            s.invoke(0, 1, "acquire").push(
                1,
                Op::new(Process::Client(1), OpType::Ok, "acquire")
                    .key("lock")
                    .ends_with_write(marked),
            );
            s.push(
                100,
                Op::new(Process::Client(1), OpType::Invoke, "add").key("doc"),
            )
            .push(
                160,
                Op::new(Process::Client(1), OpType::Ok, "add").key("doc"),
            )
            .hold(150, 300, 2)
            .invoke(170, 1, "release")
            .complete(171, 1, OpType::Ok, "release");
            let r = s.check();
            let expected = if marked { Valid::True } else { Valid::False };
            assert_eq!(r.valid, expected, "marked: {marked}");
        }
    }

    #[test]
    fn rule_3_a_failed_acquire_holds_nothing() {
        let mut s = Script::default();
        s.invoke(0, 1, "acquire")
            .complete(1, 1, OpType::Fail, "acquire")
            .hold(0, 100, 2);
        let r = s.check();
        assert_eq!(r.valid, Valid::True);
        assert_eq!(r.holds, 1);
    }

    #[test]
    fn rule_4_an_unknown_acquire_makes_an_overlap_unknown_never_invalid() {
        let mut s = Script::default();
        s.invoke(0, 1, "acquire")
            .complete(500, 1, OpType::Info, "acquire")
            .hold(100, 200, 2);
        let r = s.check();
        assert_eq!(r.valid, Valid::Unknown);
        assert_eq!(r.double_grant_count, 0);
        assert_eq!(r.possible_double_grant_count, 1);
        assert_eq!(r.unknown_acquires, 1);
    }

    #[test]
    fn rule_4_the_possible_double_grants_of_one_unknown_acquire_are_one_finding() {
        // Process 9's acquire is unknown for 1000 ms and overlaps three holds; process 8's
        // overlaps one; a certain double grant beside them is still reported on its own.
        let mut s = Script::default();
        s.invoke(0, 9, "acquire")
            .complete(5, 9, OpType::Info, "acquire")
            .hold(100, 200, 1)
            .hold(300, 400, 2)
            .hold(500, 600, 3)
            .invoke(2_000, 8, "acquire")
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
        let mut s = Script::default();
        s.invoke(0, 1, "acquire")
            .complete(10, 1, OpType::Info, "acquire")
            .hold(1_001, 1_100, 2);
        assert_eq!(s.check().valid, Valid::True);
    }

    #[test]
    fn rule_4_an_acquire_never_completed_counts_as_unknown() {
        let mut s = Script::default();
        s.hold(100, 200, 2).invoke(150, 1, "acquire");
        let r = s.check();
        assert_eq!(r.valid, Valid::Unknown);
        assert_eq!(r.unknown_acquires, 1);
    }

    #[test]
    fn rule_4_two_unknown_acquires_never_conflict() {
        let mut s = Script::default();
        s.invoke(0, 1, "acquire")
            .invoke(1, 2, "acquire")
            .complete(5, 1, OpType::Info, "acquire")
            .complete(5, 2, OpType::Info, "acquire");
        assert_eq!(s.check().valid, Valid::True);
    }

    #[test]
    fn a_definite_double_grant_beats_a_possible_one() {
        let mut s = Script::default();
        s.invoke(0, 3, "acquire")
            .complete(1, 3, OpType::Info, "acquire")
            .invoke(10, 1, "acquire")
            .complete(11, 1, OpType::Ok, "acquire")
            .hold(20, 30, 2);
        let r = s.check();
        assert_eq!(r.valid, Valid::False);
        assert_eq!(r.double_grant_count, 1);
    }

    #[test]
    fn rule_5_touching_holds_and_other_keys_do_not_conflict() {
        let mut s = Script::default();
        s.hold(0, 100, 1);
        // Process 2 acquires exactly when process 1 invoked its release.
        s.invoke(99, 2, "acquire")
            .complete(100, 2, OpType::Ok, "acquire")
            .invoke(150, 2, "release");
        let other = Op::new(Process::Client(3), OpType::Invoke, "acquire").key("other");
        s.push(10, other).push(
            11,
            Op::new(Process::Client(3), OpType::Ok, "acquire").key("other"),
        );
        assert_eq!(s.check().valid, Valid::True);
    }

    #[test]
    fn rule_5_faults_between_the_first_grant_and_the_overlap_are_named() {
        let mut s = Script::default();
        s.nemesis(0, "start", "pause").nemesis(5, "stop", "pause");
        s.invoke(10, 1, "acquire")
            .complete(11, 1, OpType::Ok, "acquire");
        s.nemesis(20, "start", "kill").nemesis(30, "stop", "kill");
        s.hold(40, 60, 2);
        s.nemesis(500, "start", "pause");
        let r = s.check();
        assert_eq!(r.valid, Valid::False);
        let faults: Vec<_> = r.double_grants[0].faults.iter().map(|f| &f.fault).collect();
        assert_eq!(faults, ["kill"]);
        assert_eq!(r.double_grants[0].faults[0].stop_ms, Some(30.0));
    }

    #[test]
    fn holds_and_faults_are_the_ones_the_check_uses() {
        let mut s = Script::default();
        s.nemesis(0, "start", "kill").nemesis(30, "stop", "kill");
        s.hold(40, 60, 2);
        s.invoke(50, 1, "acquire")
            .complete(55, 1, OpType::Info, "acquire");
        s.nemesis(500, "start", "pause");
        let holds = holds(&s.0);
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
        let faults = faults(&s.0);
        assert_eq!(faults.len(), 2);
        assert_eq!((faults[0].start_ms, faults[0].stop_ms), (0.0, Some(30.0)));
        assert_eq!(
            (faults[1].fault.as_str(), faults[1].stop_ms),
            ("pause", None)
        );
    }
}
