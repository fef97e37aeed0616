//! Holds: who held which lock when, as the checkers derive it from a history (rules 1 to 4 of
//! [`crate::lock_safety`]), and two holds at once, a [`DoubleGrant`].

use foldhash::HashMap;
use serde::{Deserialize, Serialize};

use crate::explain::cause::Explanation;
use crate::operation::ms;
use crate::stream::{replay, Checker, Event, Outline};
use crate::windows::FaultWindow;
use crate::words::seconds;
use crate::{Op, OpType, Process, Renewal};

/// One process's hold on a lock, as the checker derived it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hold {
    pub process: Process,
    pub key: String,
    /// `index` of the acquire's invoke.
    pub acquire_index: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// When its acquire was invoked: a node may have set its key any time from then.
    #[serde(default)]
    pub asked_ms: f64,
    pub start_ms: f64,
    pub end_ms: f64,
    /// When the lease ended: the acquire's invoke plus its validity, or the grant where that
    /// came later.
    pub lease_end_ms: f64,
    /// The lease the holder was told (its validity, else the TTL it asked for), where known:
    /// a session's timeout, where the lock lives with a session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity_ms: Option<f64>,
    /// Why the hold ended: `release`, `validity`, or `unknown-outcome` for a possible hold.
    pub ended_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<String>>,
    /// Its client renews the lease (a watchdog, or a library that reports its renewals).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub renews: bool,
    /// Granted with `renewal: silent`: its library kept the lock alive past `lease_end_ms`
    /// for as long as it reached the servers (a ZooKeeper session, an etcd keep-alive).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub renews_silently: bool,
    /// Granted with `renewal: connection`: the lock lives with the holder's connection (a
    /// PostgreSQL or MariaDB session lock), and ends the moment that connection does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lives_with_connection: bool,
    /// Where its last renewal did not succeed (`fail` or unknown) and none was tried after:
    /// when that renewal came back, and its error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renewal_failed: Option<FailedRenewal>,
    /// Its first renewal that came back with no answer (`info`): a client that gets none may
    /// give its connection up, and a lock that lives with the connection with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renewal_unanswered: Option<FailedRenewal>,
    /// The last time the holder asked its library whether it still held the lock (a `held`
    /// op) and was told yes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub told_held: Option<ToldHeld>,
}

/// A holder's question to its library, whether it still held the lock, answered yes: asked
/// at `asked_ms`, answered at `at_ms`; `times` yes answers in the hold in all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToldHeld {
    pub asked_ms: f64,
    pub at_ms: f64,
    pub times: u64,
}

/// A holder's last renewal, which did not succeed: asked at `asked_ms`, back at `at_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedRenewal {
    pub asked_ms: f64,
    pub at_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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
    /// Its mechanism; `None` for a possible double grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
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

/// Every hold the checker derives from a history, in order of start: the definite ones and,
/// with `ended_by` `unknown-outcome`, the possible ones (rule 4). For drawing a history; the
/// verdict is [`crate::lock_safety::check`]'s.
pub fn holds(history: &[Op]) -> Vec<Hold> {
    struct Every(HoldTracker, Vec<Candidate>);
    impl Checker for Every {
        type Output = Vec<Candidate>;
        fn observe(&mut self, event: Event<'_>) {
            self.0.observe(event, &mut self.1);
        }
        fn finish(mut self) -> Vec<Candidate> {
            self.0.finish(&mut self.1);
            self.1
        }
    }
    let tracker = HoldTracker::new(&Outline::of(history));
    let mut holds = replay(history, Every(tracker, Vec::new()));
    holds.sort_by_key(|h| (h.start, h.acquire_index));
    holds.iter().map(Candidate::to_hold).collect()
}

/// A definite or possible hold, in nanoseconds.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub(crate) process: Process,
    pub(crate) key: String,
    pub(crate) acquire_index: u64,
    pub(crate) token: Option<String>,
    /// The nodes the grant came from, when the client named them.
    pub(crate) nodes: Option<Vec<String>>,
    /// The acquire's invoke.
    pub(crate) asked: u64,
    /// The acquire's `ok` (its invoke, for a possible hold).
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) lease_end: u64,
    /// The lease it was told, in milliseconds.
    pub(crate) validity_ms: Option<u64>,
    pub(crate) ended_by: &'static str,
    /// A definite hold: the acquire returned `ok`.
    pub(crate) certain: bool,
    pub(crate) fence: Option<u64>,
    /// Granted with `renewal: silent`: no recorded renewal extends its lease (rule 1).
    pub(crate) renews_silently: bool,
    /// Granted with `renewal: connection`.
    pub(crate) lives_with_connection: bool,
    /// Its client renews the lease: granted with `renewal: reported`, or a `renew` recorded.
    pub(crate) renews: bool,
    /// Its last renewal, where that did not succeed.
    pub(crate) renewal_failed: Option<FailedRenewal>,
    /// Its first renewal that came back `info`.
    pub(crate) renewal_unanswered: Option<FailedRenewal>,
    /// Its library's last yes to whether it still held the lock.
    pub(crate) told_held: Option<ToldHeld>,
    /// Granted with `ends_with_write`: the holder's write releases it (rule 2).
    pub(crate) ends_with_write: bool,
    /// The order the holds were derived in, which breaks ties in time.
    pub(crate) seq: u64,
}

impl Candidate {
    pub(crate) fn to_hold(&self) -> Hold {
        Hold {
            process: self.process,
            key: self.key.clone(),
            acquire_index: self.acquire_index,
            token: self.token.clone(),
            asked_ms: ms(self.asked),
            start_ms: ms(self.start),
            end_ms: ms(self.end),
            lease_end_ms: ms(self.lease_end),
            validity_ms: self.validity_ms.map(|v| v as f64),
            ended_by: self.ended_by.to_string(),
            nodes: self.nodes.clone(),
            renews: self.renews,
            renews_silently: self.renews_silently,
            lives_with_connection: self.lives_with_connection,
            renewal_failed: self.renewal_failed.clone(),
            renewal_unanswered: self.renewal_unanswered.clone(),
            told_held: self.told_held.clone(),
        }
    }
}

/// Turns acquires into holds as their ops come (rules 1 to 4), and hands each one over once
/// its end can no longer move.
pub(crate) struct HoldTracker {
    end_of_history: u64,
    /// Each process's definite hold per key, open until its process releases the key,
    /// acquires it again, or the history ends: a renewal may extend it until then.
    pub(crate) open: HashMap<(Process, String), Candidate>,
    /// The invoke time of each process's acquire still pending: a possible hold may begin
    /// there.
    pending_acquires: HashMap<Process, u64>,
    /// Definite holds made.
    pub(crate) certain: usize,
    /// Acquires whose outcome is unknown.
    pub(crate) unknown: usize,
    made: u64,
}

impl HoldTracker {
    pub(crate) fn new(outline: &Outline) -> HoldTracker {
        HoldTracker {
            end_of_history: outline.end,
            open: HashMap::default(),
            pending_acquires: HashMap::default(),
            certain: 0,
            unknown: 0,
            made: 0,
        }
    }

    /// The earliest a hold not yet handed over may begin: a hold still open, or a possible
    /// hold of an acquire still pending. A definite hold still to come begins later than any
    /// op seen so far.
    pub(crate) fn earliest_start(&self) -> Option<u64> {
        let open = self.open.values().map(|hold| hold.start);
        open.chain(self.pending_acquires.values().copied()).min()
    }

    fn next_seq(&mut self) -> u64 {
        self.made += 1;
        self.made
    }

    fn possible_hold(&mut self, invoke: &Op) -> Candidate {
        self.unknown += 1;
        let lease_end = invoke
            .ttl_ms
            .map_or(self.end_of_history, |ttl| invoke.time + ttl * 1_000_000);
        Candidate {
            process: invoke.process,
            key: invoke.key.clone().unwrap_or_default(),
            acquire_index: invoke.index,
            token: invoke.token.clone(),
            nodes: None,
            asked: invoke.time,
            start: invoke.time,
            end: lease_end,
            lease_end,
            validity_ms: invoke.ttl_ms,
            ended_by: "unknown-outcome",
            certain: false,
            fence: None,
            renews_silently: false,
            lives_with_connection: false,
            renews: false,
            renewal_failed: None,
            renewal_unanswered: None,
            told_held: None,
            ends_with_write: false,
            seq: self.next_seq(),
        }
    }

    /// Takes in one event; the holds whose end it settled are pushed onto `ended`.
    pub(crate) fn observe(&mut self, event: Event<'_>, ended: &mut Vec<Candidate>) {
        match event {
            Event::Nemesis(_) => {}
            Event::Abandoned(invoke) => {
                if invoke.f == "acquire" {
                    self.pending_acquires.remove(&invoke.process);
                    let hold = self.possible_hold(invoke);
                    ended.push(hold);
                }
            }
            Event::Invoke(op) => self.invoked(op, ended),
            Event::Complete { invoke, completion } => {
                self.told_or_renewed(invoke, completion);
                if invoke.f == "acquire" {
                    self.acquired(invoke, completion, ended);
                }
            }
        }
    }

    /// An op asked: an acquire ends its process's hold of the key (a hold never released
    /// ended with its lease), a release ends it, and a write ends a hold that ends with it.
    fn invoked(&mut self, op: &Op, ended: &mut Vec<Candidate>) {
        let held = || (op.process, op.key.clone().unwrap_or_default());
        match op.f.as_str() {
            // A hold never released ended with its lease; a later release is not its.
            "acquire" => {
                self.pending_acquires.insert(op.process, op.time);
                ended.extend(self.open.remove(&held()));
            }
            "release" => {
                if let Some(mut hold) = self.open.remove(&held()) {
                    hold.end = op.time.max(hold.start);
                    hold.ended_by = "release";
                    ended.push(hold);
                }
            }
            "add" => {
                let committing = self
                    .open
                    .iter()
                    .find(|((process, _), hold)| *process == op.process && hold.ends_with_write)
                    .map(|(held, _)| held.clone());
                if let Some(mut hold) = committing.and_then(|held| self.open.remove(&held)) {
                    hold.end = op.time.max(hold.start);
                    hold.ended_by = "write";
                    ended.push(hold);
                }
            }
            _ => {}
        }
    }

    /// A `held` answered yes, or a renewal answered, on a hold still open.
    fn told_or_renewed(&mut self, invoke: &Op, op: &Op) {
        let key = invoke.key.as_deref().unwrap_or_default();
        let told_yes = op.kind == OpType::Ok && op.value == Some(true.into());
        if invoke.f == "held" && told_yes {
            if let Some(hold) = self.open.get_mut(&(op.process, key.to_string())) {
                let times = hold.told_held.as_ref().map_or(0, |told| told.times);
                hold.told_held = Some(ToldHeld {
                    asked_ms: ms(invoke.time),
                    at_ms: ms(op.time),
                    times: times + 1,
                });
            }
        }
        if invoke.f == "renew" {
            if let Some(hold) = self.open.get_mut(&(op.process, key.to_string())) {
                hold.renews = true;
                let failed = FailedRenewal {
                    asked_ms: ms(invoke.time),
                    at_ms: ms(op.time),
                    error: op.error.clone(),
                };
                if op.kind == OpType::Info && hold.renewal_unanswered.is_none() {
                    hold.renewal_unanswered = Some(failed.clone());
                }
                hold.renewal_failed = (op.kind != OpType::Ok).then_some(failed);
            }
        }
        // A renewal refused (`fail`: the lock was no longer its own) says the lease was
        // over by the time it came back, whatever the renewals before it promised: the
        // server had let the key go. A grant after it is to a holder that outlived its
        // lease, not two live leases.
        if invoke.f == "renew" && op.kind == OpType::Fail {
            if let Some(hold) = self.open.get_mut(&(op.process, key.to_string())) {
                hold.lease_end = hold.lease_end.min(op.time).max(hold.start);
                if hold.ended_by == "validity" {
                    hold.end = hold.lease_end;
                }
            }
        }
        if invoke.f == "renew" && op.kind == OpType::Ok {
            let open_hold = self
                .open
                .get_mut(&(op.process, key.to_string()))
                .filter(|hold| !hold.renews_silently);
            if let (Some(hold), Some(ttl)) = (open_hold, invoke.ttl_ms) {
                hold.lease_end = hold.lease_end.max(invoke.time + ttl * 1_000_000);
                if hold.ended_by == "validity" {
                    hold.end = hold.lease_end;
                }
            }
        }
    }

    /// An acquire answered: a grant opens a hold (ending the process's last one on the key),
    /// an unknown outcome is a possible hold. A client that died just after its grant held
    /// the lock from then on, certainly, and never released it.
    fn acquired(&mut self, invoke: &Op, op: &Op, ended: &mut Vec<Candidate>) {
        let key = invoke.key.as_deref().unwrap_or_default();
        self.pending_acquires.remove(&invoke.process);
        match (op.kind, op.died_holding) {
            (OpType::Ok, _) | (OpType::Info, true) => {
                let validity = op.validity_ms.or(invoke.ttl_ms);
                let mut lease_end = validity.map_or(self.end_of_history, |v| {
                    (invoke.time + v * 1_000_000).max(op.time)
                });
                // A dead client renews nothing; its connection closed with it, and a lock
                // that lives with its connection (a session lock) went with that.
                let renewal = match op.died_holding {
                    true if op.renewal == Some(Renewal::Connection) => {
                        lease_end = op.time;
                        None
                    }
                    true => None,
                    false => op.renewal,
                };
                self.certain += 1;
                let hold = Candidate {
                    process: op.process,
                    key: key.to_string(),
                    acquire_index: invoke.index,
                    token: op.token.clone().or_else(|| invoke.token.clone()),
                    nodes: op.node.clone(),
                    asked: invoke.time,
                    start: op.time,
                    end: lease_end,
                    lease_end,
                    validity_ms: validity,
                    ended_by: "validity",
                    certain: true,
                    fence: op.fence.or(invoke.fence),
                    renews_silently: renewal == Some(Renewal::Silent),
                    lives_with_connection: renewal == Some(Renewal::Connection),
                    renews: renewal == Some(Renewal::Reported),
                    renewal_failed: None,
                    renewal_unanswered: None,
                    told_held: None,
                    ends_with_write: op.ends_with_write,
                    seq: self.next_seq(),
                };
                ended.extend(self.open.insert((op.process, key.to_string()), hold));
            }
            (OpType::Info, false) => {
                let hold = self.possible_hold(invoke);
                ended.push(hold);
            }
            (OpType::Fail | OpType::Invoke, _) => {}
        }
    }

    /// The end of the history: every hold still open ends as it stands.
    pub(crate) fn finish(&mut self, ended: &mut Vec<Candidate>) {
        let mut open: Vec<Candidate> = self.open.drain().map(|(_, hold)| hold).collect();
        open.sort_by_key(|hold| hold.seq);
        ended.extend(open);
    }
}
