//! Why a violation happened, by its mechanism: the faults and node events that explain it, a
//! named [`Cause`], and one sentence built from the history alone.
//!
//! A double grant is explained from its two holds, the nodes each grant names, the
//! [`Timeline`] of the faults and the deployment's masters, and the releases on its key. Rules,
//! in order, each with a unit test below:
//!
//! 1. A `stale` (or `fenced`) double grant has a **zombie**: the holder whose lease had ended
//!    when the other was granted. It is a [`Cause::Zombie`] where its client worker
//!    (`client-<process % workers>`) was frozen during its hold; a [`Cause::CutOffHolder`]
//!    where a fault aimed at the holder cut its links; a [`Cause::RestartHazard`] where it
//!    renews its lease and its node was killed during its hold (it came back without the key,
//!    so the renewals failed); otherwise, where no fault touched its client or its nodes
//!    during its hold, a [`Cause::SlowHolder`] (the work outlasted the lease); otherwise
//!    [`Cause::Unexplained`].
//! 2. A `lease` double grant (both leases live) that rule 3 finds no node story for is a
//!    [`Cause::Hijack`] where another process than the first holder released the key,
//!    successfully, on a node the first grant came from, between the two grants: a release
//!    that does not check its token deletes whoever holds the key then (one that does cannot
//!    succeed while the first holder's key is there).
//! 3. Where both grants name their nodes and share some, each shared node granted both, so it
//!    lost the first key while that lease was live: a [`Cause::RestartHazard`] where it was
//!    killed and came back between the grants, a [`Cause::ClockJump`] where its clock was set
//!    forward (or strobed, or drifted) between them. A shared node with neither is rule 2's,
//!    or leaves the double grant unexplained.
//! 4. Where they share no node, the lock moved to another master: a [`Cause::SplitBrain`]
//!    where the first holder's node was cut off when it granted (a master on the minority
//!    side), or where either node granted while the deployment named other nodes master and
//!    not it (a master left behind by a failover, or not yet demoted after a heal): two
//!    masters at once. A [`Cause::Failover`] where the first node was cut off, killed or
//!    paused after its grant and before the second, or a failover of either node was under way
//!    between them.
//! 5. Where the grants name no nodes (a library behind `exec:` that does not say), the
//!    deployment's own events between them come before rule 2 (most libraries release with a
//!    token check, which cannot hijack): a failover, promotion or two masters at once where
//!    masters are recorded, else a restart (of a master, where recorded), else a clock set
//!    forward ([`from_events`]). Rule 2 never names a release whose own grant came after the
//!    first on the same nodes, or after a restart or clock jump that lost the first key: the
//!    first key was gone already, and the release deleted only its own.
//! 6. Anything else is [`Cause::Unexplained`], with the faults active named: that is the case
//!    a user must look at.
//!
//! A stuck lock is explained by rule 7 ([`stuck`]), lost writes by rule 8 ([`lost_writes`]),
//! a fencing violation by rule 9 ([`fencing`]).

use serde::{Deserialize, Serialize};

use crate::fencing::{FencePair, FencedOp};
use crate::lock_safety::{DoubleGrant, Hold};
use crate::stuck_lock::StuckPeriod;
use crate::timeline::{Spell, State, Timeline};
use crate::verdict::seconds;
use crate::Process;

/// The mechanism behind a violation.
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
    /// A holder outlived its lease with no fault on it: its work took longer than the lease.
    SlowHolder,
    /// A holder past its lease deleted the next holder's key.
    Hijack,
    /// A client crashed between taking the lock and giving it a lease.
    CrashedClient,
    /// No mechanism splitbrain knows explains it.
    Unexplained,
}

impl Cause {
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
    fn new(cause: Cause, sentence: String) -> Explanation {
        Explanation {
            cause,
            sentence,
            ops: Vec::new(),
            nodes: Vec::new(),
            spells: Vec::new(),
        }
    }

    /// Adds the holds' acquires and the spells to the evidence.
    fn resting_on(mut self, holds: &[&Hold], spells: &[&Spell]) -> Explanation {
        self.ops.extend(holds.iter().map(|h| h.acquire_index));
        for spell in spells {
            self.ops.push(spell.start_index);
            self.ops.extend(spell.stop_index);
            if !self.nodes.contains(&spell.node) {
                self.nodes.push(spell.node.clone());
            }
            self.spells.push((*spell).clone());
        }
        self.ops.sort_unstable();
        self.ops.dedup();
        self
    }

    /// `[restart hazard] n3 granted both: ...`: the sentence as a summary line shows it.
    pub fn line(&self) -> String {
        format!("[{}] {}", self.cause.label(), self.sentence)
    }
}

/// A release answered `ok`: one that checks no token deletes whoever holds the key by then
/// (rule 2).
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    pub process: Process,
    pub key: String,
    /// `index` of the releasing hold's acquire.
    pub acquire_index: u64,
    /// When the releasing hold was granted.
    pub granted_ms: f64,
    /// Its invoke and its `ok`: the key was deleted in between.
    pub released_ms: f64,
    pub completed_ms: f64,
    /// When the releasing hold's lease ended.
    pub lease_end_ms: f64,
    /// The nodes its grant came from, where named.
    pub nodes: Option<Vec<String>>,
}

/// What the explanations know of a run beyond the finding itself.
pub struct Context<'a> {
    pub timeline: &'a Timeline,
    /// How many client workers ran: process `p` ran on worker `p % workers`, the
    /// `client-<worker>` a client fault names.
    pub workers: usize,
}

impl Context<'_> {
    fn worker(&self, process: Process) -> Option<String> {
        match process {
            Process::Client(p) => Some(format!("client-{}", p % self.workers.max(1) as u64)),
            Process::Nemesis(_) => None,
        }
    }

    /// The nodes the deployment named master around `at_ms`, allowing for the nemesis's
    /// polling; `None` where the history records no master at all.
    fn masters_around(&self, at_ms: f64) -> Option<Vec<&Spell>> {
        let masters = self
            .timeline
            .spells
            .iter()
            .filter(|s| s.state == State::Master);
        let mut masters = masters.peekable();
        masters.peek()?;
        Some(
            masters
                .filter(|s| s.touches(at_ms - MASTER_POLL_MS, at_ms + MASTER_POLL_MS))
                .collect(),
        )
    }

    /// What made `process` a zombie, among the spells `pick` keeps: its client worker frozen
    /// ([`Cause::Zombie`]) before a fault aimed at it as holder cutting it off
    /// ([`Cause::CutOffHolder`]); the latest of each.
    fn outlived_by(
        &self,
        process: Process,
        pick: impl Fn(&Spell) -> bool,
    ) -> Option<(Cause, &Spell)> {
        let client = self.worker(process);
        let latest = |cause: Cause| {
            self.timeline
                .spells
                .iter()
                .filter(|s| pick(s))
                .filter(|s| match cause {
                    Cause::Zombie => {
                        s.state == State::ClientPaused && client.as_deref() == Some(&*s.node)
                    }
                    _ => {
                        matches!(s.state, State::Links | State::CutOff)
                            && s.holder.map(Process::Client) == Some(process)
                    }
                })
                .last()
                .map(|s| (cause, s))
        };
        latest(Cause::Zombie).or_else(|| latest(Cause::CutOffHolder))
    }

    /// A restart, or a clock set forward, begun in `[from, to]` on one of `nodes` (on any node
    /// where they are not named): either loses a key set before it.
    fn key_lost(&self, nodes: Option<&[String]>, from: f64, to: f64) -> Option<&Spell> {
        let nodes = nodes.filter(|nodes| !nodes.is_empty());
        self.timeline.spells.iter().find(|s| {
            let loses = match s.state {
                State::Down => true,
                State::Clock => s.offset_ms.is_none_or(|offset| offset > 0.0),
                _ => false,
            };
            loses
                && s.start_ms >= from
                && s.earliest_ms() <= to
                && nodes.is_none_or(|nodes| nodes.contains(&s.node))
        })
    }

    /// Every spell on `nodes` (or the holder's client) on at some time in `[from, to]`.
    fn spells_near<'a>(&'a self, hold: &Hold, from: f64, to: f64) -> Vec<&'a Spell> {
        let client = self.worker(hold.process);
        let nodes = hold.nodes.clone().unwrap_or_default();
        self.timeline
            .spells
            .iter()
            .filter(|s| s.touches(from, to))
            .filter(|s| {
                nodes.contains(&s.node)
                    || client.as_deref() == Some(s.node.as_str())
                    || s.holder.map(Process::Client) == Some(hold.process)
            })
            .collect()
    }
}

/// Explains a double grant (rules 1 to 5); `releases` are those on its key.
pub fn double_grant(grant: &DoubleGrant, releases: &[Release], context: &Context) -> Explanation {
    if grant.kind != "lease" {
        return zombie(grant, context);
    }
    let (first, second) = (&grant.first, &grant.second);
    let named = |hold: &Hold| hold.nodes.clone().filter(|nodes| !nodes.is_empty());
    let (Some(first_nodes), Some(second_nodes)) = (named(first), named(second)) else {
        return from_events(grant, context)
            .or_else(|| hijack(grant, releases, context))
            .unwrap_or_else(|| {
                unexplained(
                    grant,
                    context,
                    "the grants do not name the nodes that gave them",
                )
            });
    };
    let shared: Vec<&String> = first_nodes
        .iter()
        .filter(|n| second_nodes.contains(n))
        .collect();
    if shared.is_empty() {
        moved(grant, &first_nodes, &second_nodes, context)
    } else {
        forgotten(grant, &shared, releases, context)
    }
}

/// Rule 2: a release of another process than the first holder, on a node the first holder's
/// grant came from, between the two grants, with the first holder's key still there: a release
/// whose own grant came after the first on the same nodes (the first key was gone by then), or
/// that came after a restart or a clock jump that lost that key, deleted only its own (the
/// redis-py adapter granted on a node that came back empty, then released its own key).
fn hijack(grant: &DoubleGrant, releases: &[Release], context: &Context) -> Option<Explanation> {
    let (first, second) = (&grant.first, &grant.second);
    let same_node = |release: &Release| match (&release.nodes, &first.nodes) {
        (Some(theirs), Some(ours)) if !theirs.is_empty() && !ours.is_empty() => {
            theirs.iter().any(|n| ours.contains(n))
        }
        _ => true,
    };
    let release = releases.iter().find(|r| {
        r.key == grant.key
            && r.process != first.process
            && r.completed_ms >= first.start_ms
            && r.released_ms <= second.start_ms
            && same_node(r)
            && !granted_over(r, first)
            && context
                .key_lost(first.nodes.as_deref(), first.start_ms, r.released_ms)
                .is_none()
    })?;
    let why = if release.released_ms > release.lease_end_ms {
        format!(
            ", after its own lease had ended at {},",
            seconds(release.lease_end_ms)
        )
    } else {
        " when its own key was gone already (a release that checks no token deletes whoever \
         holds the key),"
            .to_string()
    };
    let mut explained = Explanation::new(
        Cause::Hijack,
        format!(
            "process {} released the key at {}{why} and so deleted process {}'s key: process {} \
             was granted at {} while process {}'s lease ran until {}",
            release.process,
            seconds(release.released_ms),
            first.process,
            second.process,
            seconds(second.start_ms),
            first.process,
            seconds(first.lease_end_ms),
        ),
    )
    .resting_on(&[first, second], &[]);
    explained.ops.push(release.acquire_index);
    explained.ops.sort_unstable();
    explained.ops.dedup();
    Some(explained)
}

/// Whether `release`'s own hold was granted after `first`, on every node `first` came from
/// (or on nodes unnamed): the first key was gone from there already, and the release deleted
/// only its own (as after a failover to a replica without the key).
fn granted_over(release: &Release, first: &Hold) -> bool {
    let covers = match (&release.nodes, &first.nodes) {
        (Some(theirs), Some(ours)) if !theirs.is_empty() && !ours.is_empty() => {
            ours.iter().all(|n| theirs.contains(n))
        }
        _ => true,
    };
    release.granted_ms > first.start_ms && covers
}

/// Rule 5: grants that name no nodes (a library behind `exec:` that does not say which nodes
/// granted), explained from the deployment's own events between them. Where the deployment
/// records its masters, a failover asked for, a promotion or two masters named at the first
/// grant is a [`Cause::Failover`], and only
/// a master's restart counts; otherwise a restart of any node is a [`Cause::RestartHazard`]
/// and a clock set forward a [`Cause::ClockJump`]: some node granted both (a single server,
/// or two majorities of the same masters), and each of these loses the first key on the node
/// it hits.
fn from_events(grant: &DoubleGrant, context: &Context) -> Option<Explanation> {
    let (first, second) = (&grant.first, &grant.second);
    let (from, to) = (first.start_ms, second.start_ms);
    let spells = &context.timeline.spells;
    let masters = context.masters_around(from);
    // A failover asked for or under way, a promotion, or two masters named at the first
    // grant (the one being replaced had not stepped down), allowing for the polling; or a
    // master replaced shortly before: a client still connected to it is granted there until
    // the Sentinels make it a replica, which on a busy machine takes seconds.
    let failover = masters.as_ref().and_then(|named| {
        spells
            .iter()
            .find(|s| {
                (s.state == State::Failover && s.touches(from - MASTER_POLL_MS, to))
                    || (s.state == State::Master
                        && s.promoted_by.is_some()
                        && s.start_ms >= from - MASTER_POLL_MS
                        && s.start_ms <= to + MASTER_POLL_MS)
            })
            .or_else(|| (named.len() > 1).then(|| named[named.len() - 1]))
            .map(|s| (s, s.phrase_until(to)))
            .or_else(|| {
                let replaced = spells.iter().rev().find(|s| {
                    s.state == State::Master
                        && s.stop_ms
                            .is_some_and(|stop| stop >= from - RECONFIGURED_MS && stop <= to)
                })?;
                let story = format!(
                    "{} was master until {}, and a client still connected to it could be \
                     granted there until it was made a replica",
                    replaced.node,
                    seconds(replaced.stop_ms.unwrap_or(from))
                );
                Some((replaced, story))
            })
    });
    let master_nodes: Option<Vec<String>> = masters
        .as_ref()
        .map(|named| named.iter().map(|m| m.node.clone()).collect());
    let (cause, spell, story, consequence) = if let Some((spell, story)) = failover {
        (
            Cause::Failover,
            spell,
            story,
            format!(
                "the master that granted process {} had not received process {}'s key",
                second.process, first.process
            ),
        )
    } else {
        let lost = context.key_lost(master_nodes.as_deref(), from, to)?;
        let consequence = if lost.state == State::Down {
            format!("it came back without process {}'s key", first.process)
        } else {
            format!(
                "the clock set forward expired process {}'s key early",
                first.process
            )
        };
        let cause = if lost.state == State::Down {
            Cause::RestartHazard
        } else {
            Cause::ClockJump
        };
        (cause, lost, lost.phrase_until(to), consequence)
    };
    let sentence = format!(
        "the grants do not name their nodes; process {} was granted at {} and process {} at \
         {}, while process {}'s lease ran until {}, across this: {}; {consequence}",
        first.process,
        seconds(first.start_ms),
        second.process,
        seconds(second.start_ms),
        first.process,
        seconds(first.lease_end_ms),
        story,
    );
    Some(Explanation::new(cause, sentence).resting_on(&[first, second], &[spell]))
}

/// How much later than a client met it the nemesis may record a change of master: it asks the
/// deployment who is master every 200 ms, and asking takes time of its own.
const MASTER_POLL_MS: f64 = 500.0;

/// How long after the Sentinels name a new master the old one may still grant to clients
/// connected to it: until they make it a replica, within Sentinel's failover-timeout (6 s by
/// default; measured here, a busy machine took 2 to 3 s).
const RECONFIGURED_MS: f64 = 6_000.0;

/// Rule 3: shared nodes that granted both, each having lost the first key.
fn forgotten(
    grant: &DoubleGrant,
    shared: &[&String],
    releases: &[Release],
    context: &Context,
) -> Explanation {
    let (first, second) = (&grant.first, &grant.second);
    let (from, to) = (first.start_ms, second.start_ms);
    // The nemesis records a restart once the node answers again, which may be after the node
    // granted the second; a kill after the first grant and before the second is what counts.
    let mut stories: Vec<(Cause, &Spell, Vec<&str>)> = Vec::new();
    let mut evidence: Vec<&Spell> = Vec::new();
    for node in shared {
        let restart = context
            .timeline
            .on(node, &[State::Down], from, to)
            .find(|s| s.start_ms >= from);
        let jump = context
            .timeline
            .on(node, &[State::Clock], from, to)
            .find(|s| s.offset_ms.is_none_or(|offset| offset > 0.0));
        let (cause, spell) = match (restart, jump) {
            (Some(spell), _) => (Cause::RestartHazard, spell),
            (None, Some(spell)) => (Cause::ClockJump, spell),
            (None, None) => {
                return hijack(grant, releases, context).unwrap_or_else(|| {
                    unexplained(
                        grant,
                        context,
                        &format!(
                            "{node} granted both, and was neither restarted nor had its clock \
                             moved between the grants"
                        ),
                    )
                })
            }
        };
        evidence.push(spell);
        let same = |(c, s, _): &&mut (Cause, &Spell, Vec<&str>)| {
            // Offsets measured on each node differ by a fraction of a millisecond.
            let offset = |s: &Spell| s.offset_ms.map(|o| o.round() as i64);
            *c == cause && s.start_index == spell.start_index && offset(s) == offset(spell)
        };
        match stories.iter_mut().find(same) {
            Some((_, _, nodes)) => nodes.push(node),
            None => stories.push((cause, spell, vec![node])),
        }
    }
    let names: Vec<&str> = shared.iter().map(|n| n.as_str()).collect();
    let what: Vec<String> = stories
        .iter()
        .map(|(cause, spell, nodes)| {
            let all = nodes.len() == names.len();
            let who = match (all, nodes.len()) {
                (true, 1) => "it".to_string(),
                (true, _) => "they".to_string(),
                _ => and_list(nodes),
            };
            let at = |ms: f64| seconds(ms);
            match cause {
                Cause::RestartHazard => format!(
                    "{who} {} killed at {} and came back{} without the key",
                    if nodes.len() == 1 { "was" } else { "were" },
                    at(spell.start_ms),
                    spell
                        .stop_ms
                        .filter(|&back| back <= to)
                        .map_or(String::new(), |back| format!(" at {}", at(back))),
                ),
                _ => format!(
                    "{} set {} at {}, expiring the key early",
                    match (nodes.len(), all) {
                        (1, true) => "its clock was".to_string(),
                        (1, false) => format!("{who}'s clock was"),
                        (_, true) => "their clocks were".to_string(),
                        (_, false) => format!("the clocks of {who} were"),
                    },
                    spell
                        .offset_ms
                        .map_or("off".to_string(), |o| format!("{o:+.0} ms")),
                    at(spell.start_ms),
                ),
            }
        })
        .collect();
    let quorums = match (&first.nodes, &second.nodes) {
        (Some(a), Some(b)) if a.len() > 1 || b.len() > 1 => format!(
            "; process {}'s quorum {} overlapped process {}'s {} only in {}",
            second.process,
            b.join(","),
            first.process,
            a.join(","),
            names.join(",")
        ),
        _ => format!(
            "; {} then granted process {} at {}",
            names.join(","),
            second.process,
            seconds(second.start_ms)
        ),
    };
    let sentence = format!(
        "{} granted both: {}, while process {}'s lease ran until {}{}",
        and_list(&names),
        what.join("; "),
        first.process,
        seconds(first.lease_end_ms),
        quorums
    );
    Explanation::new(stories[0].0, sentence).resting_on(&[first, second], &evidence)
}

/// Rule 4: the lock moved from the first holder's node to another.
fn moved(
    grant: &DoubleGrant,
    first_nodes: &[String],
    second_nodes: &[String],
    context: &Context,
) -> Explanation {
    let (first, second) = (&grant.first, &grant.second);
    let (from, to) = (first.start_ms, second.start_ms);
    let old = and_list(&first_nodes.iter().map(String::as_str).collect::<Vec<_>>());
    let new = and_list(&second_nodes.iter().map(String::as_str).collect::<Vec<_>>());
    let cut_before = first_nodes.iter().find_map(|node| {
        context
            .timeline
            .on(node, &[State::CutOff], from, to)
            .find(|s| s.earliest_ms() <= from && s.stop_ms.is_none_or(|stop| stop >= from))
    });
    // The deployment's master, as the nemesis polled it, may be recorded a little after a
    // client found it.
    let promotion = second_nodes.iter().find_map(|node| {
        context
            .timeline
            .on(
                node,
                &[State::Master],
                to - MASTER_POLL_MS,
                to + MASTER_POLL_MS,
            )
            .filter(|s| s.promoted_by.is_some())
            .last()
    });
    let promoted = |side: &str| match promotion {
        Some(spell) => format!(
            "{new}, which became master{side} at {}{},",
            seconds(spell.start_ms),
            spell
                .promoted_by
                .as_ref()
                .map_or(String::new(), |by| format!(" (promoted by {by})"))
        ),
        None => format!("{new}, promoted{side},"),
    };
    let evidence = |spell: &Spell| -> Vec<Spell> {
        std::iter::once(spell).chain(promotion).cloned().collect()
    };
    if let Some(cut) = cut_before {
        let sentence = format!(
            "{} and went on granting as master: process {} at {}; {} granted process {} at {}, \
             while process {}'s lease ran until {}: two masters at once",
            cut.phrase_until(from),
            first.process,
            seconds(first.start_ms),
            promoted(" on the other side"),
            second.process,
            seconds(second.start_ms),
            first.process,
            seconds(first.lease_end_ms),
        );
        let spells = evidence(cut);
        return Explanation::new(Cause::SplitBrain, sentence)
            .resting_on(&[first, second], &spells.iter().collect::<Vec<_>>());
    }
    // A node the deployment no longer (or not yet) named master that granted all the same
    // was a second master: the one it was replaced by, or that replaced it, granted the other.
    let stale = [(first, first_nodes), (second, second_nodes)]
        .into_iter()
        .find_map(|(hold, nodes)| {
            let node = nodes.first()?;
            let named = context.masters_around(hold.start_ms)?;
            (!named.iter().any(|m| m.node == *node)).then_some((hold, node, named))
        });
    if let Some((hold, node, named)) = stale {
        let at = hold.start_ms;
        let masters: Vec<&str> = named
            .iter()
            .filter(|s| s.touches(at, at))
            .map(|s| s.node.as_str())
            .collect();
        let demoted = context
            .timeline
            .spells
            .iter()
            .filter(|s| s.state == State::Master && s.node == *node)
            .filter_map(|s| s.stop_ms.filter(|&stop| stop <= at))
            .fold(None, |latest: Option<f64>, stop| {
                Some(latest.map_or(stop, |l| l.max(stop)))
            });
        let sentence = format!(
            "{node} granted process {} at {} as master, though the deployment {}{}; process {} \
             held the lock on {old} from {}, and {} granted process {} at {}, while process \
             {}'s lease ran until {}: two masters at once",
            hold.process,
            seconds(at),
            demoted.map_or("had never named it master".to_string(), |stop| format!(
                "had named it master no more since {}",
                seconds(stop)
            )),
            if masters.is_empty() {
                String::new()
            } else {
                format!(", naming {} instead", and_list(&masters))
            },
            first.process,
            seconds(first.start_ms),
            new,
            second.process,
            seconds(second.start_ms),
            first.process,
            seconds(first.lease_end_ms),
        );
        let spells: Vec<&Spell> = named.into_iter().chain(promotion).collect();
        return Explanation::new(Cause::SplitBrain, sentence).resting_on(&[first, second], &spells);
    }
    let went_away = first_nodes.iter().find_map(|node| {
        context
            .timeline
            .on(
                node,
                &[State::CutOff, State::Down, State::Paused, State::Failover],
                from,
                to,
            )
            .find(|s| s.state == State::Failover || s.start_ms >= from)
    });
    if let Some(spell) = went_away {
        let sentence = format!(
            "process {} held the lock on {} from {}; {}; {} granted process {} at {} while \
             process {}'s lease ran until {}: the key process {} set on {} had not reached {}",
            first.process,
            old,
            seconds(first.start_ms),
            spell.phrase_until(to),
            promoted(""),
            second.process,
            seconds(second.start_ms),
            first.process,
            seconds(first.lease_end_ms),
            first.process,
            old,
            new,
        );
        let spells = evidence(spell);
        return Explanation::new(Cause::Failover, sentence)
            .resting_on(&[first, second], &spells.iter().collect::<Vec<_>>());
    }
    // A failover under way from the second holder's node: the master being replaced and the
    // one replacing it both granted before the old one stepped down.
    let stepping_down = second_nodes.iter().find_map(|node| {
        context
            .timeline
            .on(node, &[State::Failover], from, to)
            .next()
    });
    if let Some(spell) = stepping_down {
        let sentence = format!(
            "{}; {old} granted process {} at {} and {new}, the master being replaced, granted \
             process {} at {}, while process {}'s lease ran until {}: both granted before the \
             old master stepped down",
            spell.phrase(),
            first.process,
            seconds(first.start_ms),
            second.process,
            seconds(second.start_ms),
            first.process,
            seconds(first.lease_end_ms),
        );
        return Explanation::new(Cause::Failover, sentence).resting_on(&[first, second], &[spell]);
    }
    unexplained(
        grant,
        context,
        &format!(
            "{old} granted the first, {new} the second, and nothing happened to {old} between them"
        ),
    )
}

/// Rule 1: a holder that had outlived its lease.
fn zombie(grant: &DoubleGrant, context: &Context) -> Explanation {
    let (first, second) = (&grant.first, &grant.second);
    let outlived = |h: &Hold| h.end_ms.min(h.lease_end_ms) <= second.start_ms;
    let (zombie, other) = if outlived(first) || !outlived(second) {
        (first, second)
    } else {
        (second, first)
    };
    let granted = format!(
        "its lease ended at {}; process {} was granted at {}; process {} went on as holder \
         until {}{}",
        seconds(zombie.lease_end_ms),
        other.process,
        seconds(other.start_ms),
        zombie.process,
        seconds(zombie.end_ms),
        if grant.kind == "fenced" {
            ", and the storage refused every access it made after its lease (fenced)"
        } else {
            ""
        }
    );
    let near = context.spells_near(zombie, zombie.start_ms, zombie.end_ms);
    let client = context.worker(zombie.process);
    let frozen = near
        .iter()
        .find(|s| s.state == State::ClientPaused && client.as_deref() == Some(s.node.as_str()));
    if let Some(pause) = frozen {
        let sentence = format!(
            "process {} (on {}) was frozen from {} to {}, inside its critical section; {}",
            zombie.process,
            pause.node,
            seconds(pause.start_ms.max(zombie.start_ms)),
            pause.stop_ms.map_or("the end".to_string(), seconds),
            granted
        );
        return Explanation::new(Cause::Zombie, sentence).resting_on(&[first, second], &[pause]);
    }
    let cut = near.iter().find(|s| {
        matches!(s.state, State::Links | State::CutOff)
            && s.holder.map(Process::Client) == Some(zombie.process)
            && s.start_ms <= zombie.lease_end_ms
    });
    if let Some(cut) = cut {
        let sentence = format!(
            "process {} was cut off just after its grant at {} ({}, {}); {}",
            zombie.process,
            seconds(zombie.start_ms),
            cut.fault,
            cut.phrase_until(zombie.end_ms),
            granted
        );
        let cuts: Vec<&Spell> = near
            .iter()
            .copied()
            .filter(|s| s.start_index == cut.start_index)
            .collect();
        return Explanation::new(Cause::CutOffHolder, sentence).resting_on(&[first, second], &cuts);
    }
    // A renewing holder whose node came back empty: its renewals found no key from then on,
    // so its lease ran out under it.
    let restart = zombie
        .renews
        .then(|| context.key_lost(zombie.nodes.as_deref(), zombie.start_ms, other.start_ms));
    if let Some(kill) = restart.flatten().filter(|s| s.state == State::Down) {
        let sentence = format!(
            "process {} renews its lease, and during its hold {}, without its key: its renewals \
             failed from then; {}",
            zombie.process,
            kill.phrase_until(other.start_ms),
            granted
        );
        return Explanation::new(Cause::RestartHazard, sentence)
            .resting_on(&[first, second], &[kill]);
    }
    if near.is_empty() {
        let sentence = format!(
            "process {} held the lock past its lease with no fault on it or its nodes: {}",
            zombie.process, granted
        );
        return Explanation::new(Cause::SlowHolder, sentence).resting_on(&[first, second], &[]);
    }
    unexplained(
        grant,
        context,
        &format!("process {} outlived its lease", zombie.process),
    )
}

/// Explains a stuck period (rule 7): a client crash on during the lease that ran out last,
/// from the op that set the key, is a [`Cause::CrashedClient`]: the key the crash left behind
/// outlived every lease (a `SETNX` whose `EXPIRE` never came, say). A crash fault arms the
/// next client to take the lock, so it may have begun before that op.
pub fn stuck(period: &StuckPeriod, context: &Context) -> Explanation {
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
        return Explanation::new(Cause::Unexplained, sentence).resting_on(&[], &active);
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
    Explanation::new(Cause::CrashedClient, sentence).resting_on(&[], &[crash])
}

/// An acknowledged write, as rule 8 needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Write<'a> {
    pub id: i64,
    pub process: Process,
    pub invoked_ms: f64,
    pub acknowledged_ms: f64,
    /// When the read its document came from was invoked, where its process read the key
    /// before (`lock-set` writes the document it read, with its id added).
    pub read_ms: Option<f64>,
    /// The node that acknowledged it, where the client named it.
    pub node: Option<&'a str>,
}

/// Explains the lost writes of a key (rule 8): `lost` are the acknowledged writes the final
/// read, invoked at `final_read_ms`, did not hold, in order of acknowledgement; `written`
/// every acknowledged write to the key.
///
/// - A later write of another process whose document was read before a lost write was
///   acknowledged wrote over it: a [`Cause::Zombie`] where that process was frozen between
///   its read and its write, a [`Cause::CutOffHolder`] where a fault aimed at it cut it off,
///   and a [`Cause::Zombie`] too where the lost write's own process was frozen before it
///   wrote (the zombie wrote inside the next holder's critical section).
/// - Otherwise, where the lost writes name the node that acknowledged them: a
///   [`Cause::SplitBrain`] where that node was cut off when it acknowledged them (a master on
///   the minority side, whose writes the majority's new master never saw), a
///   [`Cause::Failover`] where it was cut off, killed, paused or failed over after it
///   acknowledged them and before the final read.
pub fn lost_writes(
    lost: &[Write],
    written: &[Write],
    final_read_ms: f64,
    context: &Context,
) -> Explanation {
    let Some(first) = lost.first() else {
        return Explanation::new(Cause::Unexplained, "nothing was lost".to_string());
    };
    let overwriter = written
        .iter()
        .filter(|w| w.process != first.process && w.acknowledged_ms > first.acknowledged_ms)
        .filter(|w| w.read_ms.is_some_and(|read| read < first.acknowledged_ms))
        .min_by(|a, b| a.acknowledged_ms.total_cmp(&b.acknowledged_ms));
    if let Some(over) = overwriter {
        return overwritten(first, over, lost, context);
    }
    let last = lost.last().unwrap_or(first);
    let span = format!(
        "{} acknowledged {}{}",
        count_writes(lost.len()),
        first.node.map_or(String::new(), |n| format!("by {n} ")),
        if lost.len() == 1 {
            format!("at {}", seconds(first.acknowledged_ms))
        } else {
            format!(
                "from {} to {}",
                seconds(first.acknowledged_ms),
                seconds(last.acknowledged_ms)
            )
        }
    );
    let were = if lost.len() == 1 { "was" } else { "were" };
    if let Some(node) = first.node {
        let cut_while = context
            .timeline
            .on(
                node,
                &[State::CutOff],
                first.acknowledged_ms,
                last.acknowledged_ms,
            )
            .find(|s| s.start_ms <= first.acknowledged_ms);
        if let Some(cut) = cut_while {
            let sentence = format!(
                "{span}, while {node} was cut off{} (from {}), {were} lost: a replica was promoted \
                 on the other side, and {node} went on taking writes as master until it \
                 rejoined as a replica: two masters at once",
                if cut.peers.is_empty() {
                    String::new()
                } else {
                    format!(" from {}", cut.peers.join(","))
                },
                seconds(cut.start_ms),
            );
            return Explanation::new(Cause::SplitBrain, sentence).resting_on(&[], &[cut]);
        }
        let went_away = context
            .timeline
            .on(
                node,
                &[State::CutOff, State::Down, State::Paused, State::Failover],
                first.acknowledged_ms,
                final_read_ms,
            )
            .find(|s| s.start_ms >= first.acknowledged_ms);
        if let Some(spell) = went_away {
            let sentence = format!(
                "{span} {were} lost: {}, and the replica promoted in its place had not received \
                 {}",
                spell.phrase_until(final_read_ms),
                if lost.len() == 1 { "it" } else { "them" }
            );
            return Explanation::new(Cause::Failover, sentence).resting_on(&[], &[spell]);
        }
    }
    let active: Vec<&Spell> = context
        .timeline
        .spells
        .iter()
        .filter(|s| s.touches(first.invoked_ms, final_read_ms))
        .collect();
    let phrases: Vec<String> = active.iter().map(|s| s.phrase()).collect();
    let sentence = format!(
        "no mechanism splitbrain knows explains it: {span} {were} lost, and no later write was \
         made from a document read before them; {}; look at this one",
        if phrases.is_empty() {
            "no fault was active".to_string()
        } else {
            format!("faults active: {}", phrases.join("; "))
        }
    );
    Explanation::new(Cause::Unexplained, sentence).resting_on(&[], &active)
}

/// Rule 8's first case: `over` wrote a document read before `first` was acknowledged.
fn overwritten(first: &Write, over: &Write, lost: &[Write], context: &Context) -> Explanation {
    let read = over.read_ms.unwrap_or(over.invoked_ms);
    let lost_by_it = lost
        .iter()
        .filter(|w| w.acknowledged_ms > read && w.acknowledged_ms < over.acknowledged_ms)
        .count();
    let what = format!(
        "and wrote it back at {} without the ids acknowledged meanwhile: {} lost, the first \
         id {}, by process {} at {}",
        seconds(over.invoked_ms),
        count_writes(lost_by_it),
        first.id,
        first.process,
        seconds(first.acknowledged_ms)
    );
    let near: Vec<&Spell> = context
        .timeline
        .spells
        .iter()
        .filter(|s| s.touches(read, over.invoked_ms))
        .collect();
    if let Some((cause, spell)) =
        context.outlived_by(over.process, |s| s.touches(read, over.invoked_ms))
    {
        let sentence = format!(
            "process {} read the document at {}, {}, {what}",
            over.process,
            seconds(read),
            story(cause, spell, over.invoked_ms),
        );
        return Explanation::new(cause, sentence).resting_on(&[], &[spell]);
    }
    // The lost write may be the zombie's own: frozen or cut off after it read, it wrote inside
    // the next holder's critical section, and that holder wrote the document it had read over
    // it.
    let since = first.read_ms.unwrap_or(first.invoked_ms);
    if let Some((cause, spell)) =
        context.outlived_by(first.process, |s| s.touches(since, first.invoked_ms))
    {
        let sentence = format!(
            "process {} {}, and as a zombie wrote id {} at {} inside process {}'s critical \
             section; process {}, which had read the document at {}, wrote it back at {} \
             without it",
            first.process,
            story(cause, spell, first.invoked_ms),
            first.id,
            seconds(first.invoked_ms),
            over.process,
            over.process,
            seconds(read),
            seconds(over.invoked_ms),
        );
        return Explanation::new(cause, sentence).resting_on(&[], &[spell]);
    }
    let sentence = format!(
        "no mechanism splitbrain knows explains why two processes held the lock: process {} \
         read the document at {}, {what}; look at this one",
        over.process,
        seconds(read),
    );
    Explanation::new(Cause::Unexplained, sentence).resting_on(&[], &near)
}

/// `was frozen from 1.100s to 5.000s (on client-0)`, `was cut off (link-drop-holder, ...)`.
fn story(cause: Cause, spell: &Spell, until_ms: f64) -> String {
    match cause {
        Cause::Zombie => format!(
            "was frozen from {} to {} (on {})",
            seconds(spell.start_ms),
            spell.stop_ms.map_or("the end".to_string(), seconds),
            spell.node
        ),
        _ => format!(
            "was cut off ({}, {})",
            spell.fault,
            spell.phrase_until(until_ms)
        ),
    }
}

/// `1 write`, `412 writes`.
fn count_writes(n: usize) -> String {
    format!("{n} write{}", if n == 1 { "" } else { "s" })
}

/// Explains a fencing violation (rule 9). Two grants with one fence, or a later grant with a
/// smaller one, mean the lock's counter went back. Where the grants name different nodes, the
/// counter moved to another master: a [`Cause::Failover`] (the master that issued the first
/// was cut off, killed, paused or failed over, and the one that issued the second was
/// promoted without its last increments). Otherwise a [`Cause::RestartHazard`] where a node
/// was killed between the two grants (a counter kept without persistence), a
/// [`Cause::Failover`] where a node was cut off, failed over or paused around them or a
/// master promoted between them (a counter left on the old master). A storage access the
/// storage accepted with a fence older than one it had seen is a [`Cause::Zombie`] where its
/// process was frozen after its grant, a [`Cause::CutOffHolder`] where a fault aimed at it cut
/// it off, and otherwise unexplained: a storage that checks fences refuses it.
pub fn fencing(pair: &FencePair, context: &Context) -> Explanation {
    let (earlier, later) = (&pair.earlier, &pair.later);
    if later.f == "acquire" {
        return counter_went_back(earlier, later, context);
    }
    let accepted = format!(
        "the storage accepted process {}'s {} with fence {} at {}, after it had seen fence {} \
         (process {}'s {} at {})",
        later.process,
        later.f,
        later.fence,
        seconds(later.invoke_ms),
        earlier.fence,
        earlier.process,
        earlier.f,
        seconds(earlier.completed_ms)
    );
    // The zombie was frozen or cut off before the newer fence was used, and wrote after.
    if let Some((cause, spell)) = context.outlived_by(later.process, |s| {
        s.earliest_ms() <= earlier.invoke_ms && s.start_ms <= later.invoke_ms
    }) {
        let sentence = format!(
            "process {} {} and woke up a zombie: {accepted}",
            later.process,
            story(cause, spell, later.invoke_ms)
        );
        return Explanation::new(cause, sentence).resting_on(&[], &[spell]);
    }
    Explanation::new(
        Cause::Unexplained,
        format!("no mechanism splitbrain knows explains it: {accepted}; look at this one"),
    )
}

/// Rule 9's grants: the fencing counter behind `later` was behind the one behind `earlier`.
fn counter_went_back(earlier: &FencedOp, later: &FencedOp, context: &Context) -> Explanation {
    let by = |op: &FencedOp| {
        op.nodes
            .as_ref()
            .map_or(String::new(), |nodes| format!(" by {}", nodes.join(",")))
    };
    let granted = format!(
        "process {} was granted fence {}{} at {}, and process {} fence {}{} at {}",
        earlier.process,
        earlier.fence,
        by(earlier),
        seconds(earlier.completed_ms),
        later.process,
        later.fence,
        by(later),
        seconds(later.completed_ms)
    );
    let (from, to) = (earlier.invoke_ms, later.completed_ms);
    let spells = &context.timeline.spells;
    let promoted = |nodes: Option<&Vec<String>>| {
        spells.iter().find(|s| {
            s.state == State::Master
                && s.promoted_by.is_some()
                && nodes.is_none_or(|nodes| nodes.contains(&s.node))
                && s.start_ms >= from
                && s.start_ms <= to + MASTER_POLL_MS
        })
    };
    // Something done to the master that issued the first fence while it was master of it.
    let went_away = |nodes: Option<&Vec<String>>| {
        spells.iter().find(|s| {
            matches!(
                s.state,
                State::CutOff | State::Down | State::Paused | State::Failover
            ) && nodes.is_none_or(|nodes| nodes.contains(&s.node))
                && s.touches(from, to)
        })
    };
    let moved = match (&earlier.nodes, &later.nodes) {
        (Some(old), Some(new)) if old != new => Some((old, new)),
        _ => None,
    };
    if let Some((old, new)) = moved {
        let gone = went_away(Some(old));
        let promotion = promoted(Some(new));
        if gone.is_some() || promotion.is_some() {
            let mut story: Vec<String> = gone.iter().map(|s| s.phrase_until(to)).collect();
            story.extend(promotion.map(Spell::phrase));
            let sentence = format!(
                "{granted}: {}; the increments {} made had not reached {} when it took over",
                story.join("; "),
                old.join(","),
                new.join(","),
            );
            let evidence: Vec<&Spell> = gone.into_iter().chain(promotion).collect();
            return Explanation::new(Cause::Failover, sentence).resting_on(&[], &evidence);
        }
    }
    let restarted = spells
        .iter()
        .find(|s| s.state == State::Down && s.start_ms >= from && s.earliest_ms() <= to);
    if let Some(kill) = restarted.filter(|_| moved.is_none()) {
        let sentence = format!(
            "{granted}: {} in between, and its fencing counter came back smaller",
            kill.phrase_until(to)
        );
        return Explanation::new(Cause::RestartHazard, sentence).resting_on(&[], &[kill]);
    }
    if let Some(spell) = went_away(None).or_else(|| promoted(None)) {
        let sentence = format!(
            "{granted}: {} around them, and the master after it had a smaller fencing counter",
            spell.phrase_until(to)
        );
        return Explanation::new(Cause::Failover, sentence).resting_on(&[], &[spell]);
    }
    Explanation::new(
        Cause::Unexplained,
        format!("no mechanism splitbrain knows explains it: {granted}; look at this one"),
    )
}

/// Rule 6: what is known, and the faults active from the first grant to the end of the
/// overlap, named.
fn unexplained(grant: &DoubleGrant, context: &Context, known: &str) -> Explanation {
    let (first, second) = (&grant.first, &grant.second);
    let to = second.start_ms + grant.overlap_ms;
    let active: Vec<&Spell> = context
        .timeline
        .spells
        .iter()
        .filter(|s| s.touches(first.start_ms, to))
        .collect();
    let faults = if active.is_empty() {
        "no fault was active".to_string()
    } else {
        let phrases: Vec<String> = active.iter().map(|s| s.phrase()).collect();
        format!("faults active: {}", phrases.join("; "))
    };
    let sentence =
        format!("no mechanism splitbrain knows explains it: {known}; {faults}; look at this one");
    Explanation::new(Cause::Unexplained, sentence).resting_on(&[first, second], &active)
}

/// `n1, n2 and n3`.
fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock_safety::check;
    use crate::{Op, OpType};
    use serde_json::{json, Value};

    /// A history made op by op, in time order; indexes are given at the end.
    #[derive(Default)]
    struct History(Vec<Op>);

    impl History {
        fn push(&mut self, op: Op, at_ms: u64) -> &mut Self {
            let index = self.0.len() as u64;
            self.0.push(op.at(index, at_ms * 1_000_000));
            self
        }

        /// `process` asks at `at_ms` and is granted at `ok_ms` by `nodes`, for `validity_ms`.
        fn grant(
            &mut self,
            process: u64,
            at_ms: u64,
            ok_ms: u64,
            validity_ms: u64,
            nodes: &[&str],
        ) -> &mut Self {
            let mut invoke =
                Op::new(Process::Client(process), OpType::Invoke, "acquire").key("lock");
            invoke.ttl_ms = Some(validity_ms);
            let mut ok = Op::new(Process::Client(process), OpType::Ok, "acquire")
                .key("lock")
                .token(format!("t{process}"))
                .nodes(nodes.iter().map(|n| n.to_string()).collect());
            ok.validity_ms = Some(validity_ms);
            self.push(invoke, at_ms).push(ok, ok_ms)
        }

        fn release(&mut self, process: u64, at_ms: u64, outcome: OpType) -> &mut Self {
            let op = |kind| Op::new(Process::Client(process), kind, "release").key("lock");
            self.push(op(OpType::Invoke), at_ms)
                .push(op(outcome), at_ms + 1)
        }

        fn fault(
            &mut self,
            f: &str,
            at_ms: u64,
            fault: &str,
            nodes: &[&str],
            value: Value,
            measured: Value,
        ) -> &mut Self {
            let mut op = Op::new(Process::NEMESIS, OpType::Info, f)
                .nodes(nodes.iter().map(|n| n.to_string()).collect());
            op.fault = Some(fault.to_string());
            op.value = (!value.is_null()).then_some(value);
            op.measured = (!measured.is_null()).then_some(measured);
            self.push(op, at_ms)
        }

        /// The explanation of each double grant found, in order.
        fn explained(&self) -> Vec<Explanation> {
            let mut ops = self.0.clone();
            ops.sort_by_key(|op| op.time);
            for (index, op) in ops.iter_mut().enumerate() {
                op.index = index as u64;
            }
            let safety = check(&ops);
            safety
                .double_grants
                .iter()
                .chain(&safety.fenced_double_grants)
                .map(|grant| {
                    grant
                        .explanation
                        .clone()
                        .expect("every double grant is explained")
                })
                .collect()
        }
    }

    fn causes(explained: &[Explanation]) -> Vec<Cause> {
        explained.iter().map(|e| e.cause).collect()
    }

    const REDLOCK: [&str; 5] = ["n1", "n2", "n3", "n4", "n5"];

    #[test]
    fn a_node_restarted_between_two_overlapping_quorums_is_the_restart_hazard() {
        let mut history = History::default();
        history
            .grant(0, 1_000, 1_010, 10_000, &["n1", "n2", "n3"])
            .fault("start", 2_000, "kill", &["n3"], Value::Null, Value::Null)
            .fault("stop", 2_100, "kill", &["n3"], Value::Null, Value::Null)
            .grant(1, 3_000, 3_010, 10_000, &["n3", "n4", "n5"]);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::RestartHazard]);
        assert_eq!(
            explained[0].sentence,
            "n3 granted both: it was killed at 2.000s and came back at 2.100s without the key, \
             while process 0's lease ran until 11.000s; process 1's quorum n3,n4,n5 overlapped process \
             0's n1,n2,n3 only in n3"
        );
        assert_eq!(explained[0].nodes, vec!["n3"]);
        assert_eq!(explained[0].ops, vec![0, 2, 3, 4]);
    }

    #[test]
    fn a_kill_that_ended_before_the_first_grant_or_after_the_second_explains_nothing() {
        for (start, stop) in [(100, 900), (3_500, 3_600)] {
            let mut history = History::default();
            history
                .fault("start", start, "kill", &["n3"], Value::Null, Value::Null)
                .fault("stop", stop, "kill", &["n3"], Value::Null, Value::Null)
                .grant(0, 1_000, 1_010, 10_000, &["n1", "n2", "n3"])
                .grant(1, 3_000, 3_010, 10_000, &["n3", "n4", "n5"]);
            let explained = history.explained();
            assert_eq!(
                causes(&explained),
                vec![Cause::Unexplained],
                "kill {start}-{stop}"
            );
            assert!(explained[0]
                .sentence
                .contains("n3 granted both, and was neither restarted"));
        }
    }

    #[test]
    fn a_single_node_restarted_empty_is_the_restart_hazard_too() {
        let mut history = History::default();
        history
            .grant(0, 1_000, 1_001, 5_000, &["n1"])
            .fault(
                "start",
                1_500,
                "kill-holder",
                &["n1"],
                Value::Null,
                json!({"holder": 0, "granted_by": ["n1"]}),
            )
            .fault(
                "stop",
                1_600,
                "kill-holder",
                &["n1"],
                Value::Null,
                Value::Null,
            )
            .grant(1, 1_700, 1_701, 5_000, &["n1"]);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::RestartHazard]);
        assert!(explained[0]
            .sentence
            .ends_with("n1 then granted process 1 at 1.701s"));
    }

    #[test]
    fn a_clock_set_forward_on_the_shared_node_is_a_clock_jump_and_backward_explains_nothing() {
        for (offset, cause) in [(3_000.0, Cause::ClockJump), (-3_000.0, Cause::Unexplained)] {
            let mut history = History::default();
            history
                .grant(0, 1_000, 1_010, 10_000, &REDLOCK[..3])
                .fault(
                    "start",
                    2_000,
                    "clock-holder",
                    &["n2", "n3"],
                    json!({"offset_ms": 3000}),
                    json!({"skew_ms": {"n2": offset, "n3": offset + 0.3}, "holder": 0}),
                )
                .grant(1, 3_000, 3_010, 10_000, &REDLOCK[1..4])
                .fault(
                    "stop",
                    4_000,
                    "clock-holder",
                    &["n2", "n3"],
                    Value::Null,
                    Value::Null,
                );
            let explained = history.explained();
            assert_eq!(causes(&explained), vec![cause], "offset {offset}");
            if cause == Cause::ClockJump {
                assert!(explained[0].sentence.starts_with(
                    "n2 and n3 granted both: their clocks were set +3000 ms at 2.000s, expiring the \
                     key early, while process 0's lease ran until 11.000s"
                ), "{}", explained[0].sentence);
            }
        }
    }

    #[test]
    fn the_lock_on_another_master_after_its_master_failed_over_is_a_failover() {
        let mut history = History::default();
        history
            .grant(0, 1_000, 1_001, 5_000, &["n1"])
            .fault(
                "start",
                2_000,
                "failover",
                &[],
                json!({"pick": 1}),
                json!({"master": "n1", "asked": "n2"}),
            )
            .grant(1, 3_000, 3_001, 5_000, &["n2"])
            .fault("stop", 3_500, "failover", &[], Value::Null, Value::Null);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::Failover]);
        assert_eq!(
            explained[0].sentence,
            "process 0 held the lock on n1 from 1.001s; the Sentinels were asked to fail over n1 \
             at 2.000s; n2, promoted, granted process 1 at 3.001s while process 0's lease ran \
             until 6.000s: the key process 0 set on n1 had not reached n2"
        );
    }

    #[test]
    fn a_failover_names_the_promotion_the_nemesis_recorded() {
        let mut promoted = master(&["n2"]);
        promoted.measured = Some(json!({"from": ["n1"], "by": "sentinel"}));
        let mut history = History::default();
        history
            .push(master(&["n1"]), 0)
            .grant(0, 1_000, 1_001, 5_000, &["n1"])
            .fault("start", 2_000, "kill", &["n1"], Value::Null, Value::Null)
            .push(promoted, 3_200)
            .grant(1, 3_000, 3_001, 5_000, &["n2"]);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::Failover]);
        assert!(explained[0].sentence.contains(
            "n1 was killed at 2.000s; n2, which became master at 3.200s (promoted by sentinel), \
             granted process 1 at 3.001s"
        ), "{}", explained[0].sentence);
        assert_eq!(explained[0].spells.len(), 2);
    }

    #[test]
    fn a_failover_under_way_at_either_grant_is_a_failover() {
        // Asked before the first grant, which came from the master being replaced.
        let failover = |history: &mut History, master: &str| {
            history
                .fault(
                    "start",
                    500,
                    "failover",
                    &[],
                    Value::Null,
                    json!({"master": master}),
                )
                .fault("stop", 3_500, "failover", &[], Value::Null, Value::Null);
        };
        let mut history = History::default();
        history.push(master(&["n1"]), 0);
        failover(&mut history, "n1");
        history
            .grant(0, 1_000, 1_001, 5_000, &["n1"])
            .grant(1, 1_200, 1_201, 5_000, &["n2"])
            .push(master(&["n2"]), 1_400);
        assert_eq!(
            causes(&history.explained()),
            vec![Cause::Failover],
            "{:#?}",
            history.explained()
        );

        // The new master granted first, the one being replaced just after.
        let mut history = History::default();
        history.push(master(&["n1"]), 0);
        failover(&mut history, "n1");
        history
            .grant(0, 1_000, 1_001, 5_000, &["n2"])
            .grant(1, 1_000, 1_002, 5_000, &["n1"])
            .push(master(&["n1", "n2"]), 1_300);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::Failover]);
        assert!(
            explained[0]
                .sentence
                .ends_with("both granted before the old master stepped down"),
            "{}",
            explained[0].sentence
        );
    }

    /// The nemesis's record of who is master.
    fn master(nodes: &[&str]) -> Op {
        Op::new(Process::NEMESIS, OpType::Info, "master")
            .nodes(nodes.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn a_node_granting_when_the_deployment_named_another_master_is_a_split_brain() {
        let mut history = History::default();
        history
            .push(master(&["n1"]), 0)
            .fault(
                "start",
                100,
                "failover",
                &[],
                Value::Null,
                json!({"master": "n1"}),
            )
            .push(master(&["n3"]), 500)
            .grant(0, 2_000, 2_001, 5_000, &["n1"])
            .grant(1, 3_000, 3_001, 5_000, &["n3"]);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::SplitBrain]);
        assert_eq!(
            explained[0].sentence,
            "n1 granted process 0 at 2.001s as master, though the deployment had named it master \
             no more since 0.500s, naming n3 instead; process 0 held the lock on n1 from 2.001s, \
             and n3 granted process 1 at 3.001s, while process 0's lease ran until 7.000s: two \
             masters at once"
        );
    }

    #[test]
    fn a_master_cut_off_before_it_granted_and_still_cut_off_at_the_second_grant_is_a_split_brain() {
        let grudge = json!({"grudge": {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}});
        let mut history = History::default();
        history
            .fault(
                "start",
                500,
                "partition-primary",
                &["n1", "n2", "n3"],
                Value::Null,
                grudge.clone(),
            )
            .grant(0, 1_000, 1_001, 5_000, &["n1"])
            .grant(1, 3_000, 3_001, 5_000, &["n2"])
            .fault(
                "stop",
                5_000,
                "partition-primary",
                &["n1", "n2", "n3"],
                Value::Null,
                Value::Null,
            );
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::SplitBrain]);
        assert!(explained[0].sentence.starts_with(
            "n1 was cut off from n2,n3 at 0.500s and went on granting as master: process 0 at 1.001s; \
             n2, promoted on the other side"
        ), "{}", explained[0].sentence);

        // Cut off after its grant: the key was lost in a failover, not granted twice by two masters.
        let mut history = History::default();
        history
            .grant(0, 1_000, 1_001, 5_000, &["n1"])
            .fault(
                "start",
                1_500,
                "partition-primary",
                &["n1", "n2", "n3"],
                Value::Null,
                grudge,
            )
            .grant(1, 3_000, 3_001, 5_000, &["n2"]);
        assert_eq!(
            causes(&history.explained()),
            vec![Cause::Failover],
            "{:#?}",
            history.explained()
        );
    }

    #[test]
    fn another_master_granting_with_nothing_done_to_the_first_is_unexplained() {
        let mut history = History::default();
        history
            .grant(0, 1_000, 1_001, 5_000, &["n1"])
            .fault("start", 2_000, "kill", &["n3"], Value::Null, Value::Null)
            .grant(1, 3_000, 3_001, 5_000, &["n2"]);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::Unexplained]);
        assert!(
            explained[0].sentence.contains(
                "n1 granted the first, n2 the second, and nothing happened to n1 between them; \
             faults active: n3 was killed at 2.000s; look at this one"
            ),
            "{}",
            explained[0].sentence
        );
    }

    /// Processes 0 to 2 on workers client-0 to client-2.
    fn workers(history: &mut History) {
        for process in 0..3 {
            let op = |kind| Op::new(Process::Client(process), kind, "read").key("other");
            history.push(op(OpType::Invoke), 1).push(op(OpType::Ok), 2);
        }
    }

    #[test]
    fn a_holder_frozen_past_its_lease_is_a_zombie_and_one_untouched_a_slow_holder() {
        for (frozen, cause) in [(true, Cause::Zombie), (false, Cause::SlowHolder)] {
            let mut history = History::default();
            workers(&mut history);
            history
                .grant(0, 1_000, 1_001, 1_000, &["n1"])
                .grant(1, 2_500, 2_501, 5_000, &["n1"])
                .release(0, 5_100, OpType::Ok);
            if frozen {
                history
                    .fault(
                        "start",
                        1_100,
                        "client-pause",
                        &["client-0"],
                        json!({"pause_ms": 4000}),
                        Value::Null,
                    )
                    .fault(
                        "stop",
                        5_000,
                        "client-pause",
                        &["client-0"],
                        Value::Null,
                        Value::Null,
                    );
            }
            let explained = history.explained();
            assert_eq!(causes(&explained), vec![cause]);
            let tail =
                "its lease ended at 2.000s; process 1 was granted at 2.501s; process 0 went on as \
                        holder until 5.100s";
            let expected = if frozen {
                format!("process 0 (on client-0) was frozen from 1.100s to 5.000s, inside its critical section; {tail}")
            } else {
                format!("process 0 held the lock past its lease with no fault on it or its nodes: {tail}")
            };
            assert_eq!(explained[0].sentence, expected);
        }
    }

    /// python-redis-lock under kills: its renewal thread renewed the lease until n1 came back
    /// empty, then failed; the lease ran out under the holder, and n1 granted the next client.
    #[test]
    fn a_renewing_holder_whose_node_came_back_empty_is_the_restart_hazard() {
        for renews in [true, false] {
            let mut history = History::default();
            workers(&mut history);
            history.grant(0, 1_000, 1_001, 1_000, &["n1"]);
            if renews {
                let renew = |kind| {
                    let mut op = Op::new(Process::Client(0), kind, "renew").key("lock");
                    op.ttl_ms = Some(1_000);
                    op
                };
                history
                    .push(renew(OpType::Invoke), 1_600)
                    .push(renew(OpType::Ok), 1_601)
                    .push(renew(OpType::Invoke), 2_300)
                    .push(renew(OpType::Fail), 2_301);
            }
            history
                .fault("start", 1_800, "kill", &["n1"], Value::Null, Value::Null)
                .fault("stop", 1_870, "kill", &["n1"], Value::Null, Value::Null)
                .grant(1, 2_700, 2_701, 1_000, &["n1"])
                .release(0, 3_000, OpType::Ok);
            let explained = history.explained();
            let expected = if renews {
                Cause::RestartHazard
            } else {
                Cause::Unexplained
            };
            assert_eq!(causes(&explained), vec![expected], "{explained:#?}");
            if renews {
                assert!(
                    explained[0].sentence.starts_with(
                        "process 0 renews its lease, and during its hold n1 was killed at 1.800s, \
                     back at 1.870s, without its key"
                    ),
                    "{}",
                    explained[0].sentence
                );
            }
        }
    }

    #[test]
    fn a_pause_of_another_worker_does_not_make_a_zombie() {
        let mut history = History::default();
        workers(&mut history);
        history
            .grant(0, 1_000, 1_001, 1_000, &["n1"])
            .fault(
                "start",
                1_100,
                "client-pause",
                &["client-2"],
                json!({"pause_ms": 4000}),
                Value::Null,
            )
            .grant(1, 2_500, 2_501, 5_000, &["n1"])
            .release(0, 5_100, OpType::Ok);
        assert_eq!(causes(&history.explained()), vec![Cause::SlowHolder]);
    }

    #[test]
    fn a_holder_whose_links_were_cut_just_after_its_grant_is_cut_off() {
        let mut history = History::default();
        workers(&mut history);
        history
            .grant(0, 1_000, 1_001, 1_000, &["n1"])
            .fault(
                "start",
                1_050,
                "link-drop-holder",
                &["g0->n1"],
                Value::Null,
                json!({"holder": 0, "granted_by": ["n1"]}),
            )
            .grant(1, 2_500, 2_501, 5_000, &["n1"])
            .fault(
                "stop",
                4_000,
                "link-drop-holder",
                &["g0->n1"],
                Value::Null,
                Value::Null,
            )
            .release(0, 5_100, OpType::Ok);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::CutOffHolder]);
        assert!(explained[0].sentence.starts_with(
            "process 0 was cut off just after its grant at 1.001s (link-drop-holder, the links to n1 \
             from client group g0 were cut at 1.050s, restored at 4.000s)"
        ), "{}", explained[0].sentence);
    }

    #[test]
    fn a_late_release_that_succeeded_between_two_live_leases_is_a_hijack() {
        for (outcome, cause) in [
            (OpType::Ok, Cause::Hijack),
            (OpType::Fail, Cause::Unexplained),
        ] {
            let mut history = History::default();
            workers(&mut history);
            history
                .grant(0, 1_000, 1_001, 1_000, &["n1"])
                .grant(1, 2_500, 2_501, 5_000, &["n1"])
                .release(0, 3_000, outcome)
                .grant(2, 3_500, 3_501, 5_000, &["n1"]);
            let explained = history.explained();
            // Process 0 was a slow holder over process 1's grant; process 2's came after its
            // release deleted process 1's key.
            assert_eq!(
                causes(&explained),
                vec![Cause::SlowHolder, cause],
                "{outcome:?}"
            );
            if cause == Cause::Hijack {
                assert_eq!(
                    explained[1].sentence,
                    "process 0 released the key at 3.000s, after its own lease had ended at \
                     2.000s, and so deleted process 1's key: process 2 was granted at 3.501s \
                     while process 1's lease ran until 7.500s"
                );
            }
        }
    }

    #[test]
    fn a_release_of_a_holder_whose_key_was_gone_or_of_the_next_holder_itself_is_a_hijack() {
        // Process 1's key went (nothing says how) and process 0 took the lock; process 1's
        // release, within its own lease, deleted process 0's key.
        let mut history = History::default();
        history
            .grant(1, 500, 501, 5_000, &["n1"])
            .grant(0, 1_000, 1_001, 5_000, &["n1"])
            .release(1, 2_500, OpType::Ok)
            .grant(2, 3_000, 3_001, 5_000, &["n1"]);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::Unexplained, Cause::Hijack]);
        assert!(
            explained[1].sentence.starts_with(
                "process 1 released the key at 2.500s when its own key was gone already"
            ),
            "{}",
            explained[1].sentence
        );

        // A zombie's release deletes the next holder's key, and the zombie takes the lock again.
        let mut history = History::default();
        workers(&mut history);
        history
            .grant(0, 1_000, 1_001, 1_000, &["n1"])
            .grant(1, 2_500, 2_501, 5_000, &["n1"])
            .release(0, 3_000, OpType::Ok)
            .grant(0, 3_500, 3_501, 5_000, &["n1"]);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::SlowHolder, Cause::Hijack]);
        assert!(explained[1].sentence.ends_with(
            "and so deleted process 1's key: process 0 was granted at 3.501s while process 1's \
             lease ran until 7.500s"
        ), "{}", explained[1].sentence);
    }

    #[test]
    fn a_release_still_in_flight_when_the_first_was_granted_may_have_deleted_its_key() {
        // Process 0's DEL was invoked just before process 1's grant and came back after it.
        let mut history = History::default();
        history
            .grant(0, 1_000, 1_001, 1_000, &["n1"])
            .grant(1, 2_999, 3_001, 5_000, &["n1"])
            .release(0, 3_000, OpType::Ok)
            .grant(2, 3_001, 3_002, 5_000, &["n1"]);
        assert_eq!(causes(&history.explained()), vec![Cause::Hijack]);
    }

    #[test]
    fn a_release_by_a_holder_granted_after_the_first_on_its_nodes_hijacks_nothing() {
        // Process 1 could be granted only once process 0's key was gone from n1: its release
        // deleted its own key, whatever process 2's grant then overlapped.
        let mut history = History::default();
        history
            .grant(0, 1_000, 1_001, 5_000, &["n1"])
            .grant(1, 2_000, 2_001, 5_000, &["n1"])
            .release(1, 2_500, OpType::Ok)
            .grant(2, 3_000, 3_001, 5_000, &["n1"]);
        let explained = history.explained();
        assert_eq!(
            causes(&explained),
            vec![Cause::Unexplained, Cause::Unexplained]
        );
    }

    #[test]
    fn a_release_on_another_master_hijacks_nothing() {
        let mut history = History::default();
        history
            .grant(0, 1_000, 1_001, 5_000, &["n1"])
            .grant(1, 1_200, 1_201, 5_000, &["n2"])
            .release(1, 1_500, OpType::Ok)
            .grant(2, 2_000, 2_001, 5_000, &["n1"]);
        let explained = history.explained();
        assert!(
            !causes(&explained).contains(&Cause::Hijack),
            "{explained:?}"
        );
    }

    /// The redis-py adapter on `single` under `kill`, as issue 34 found it: process 2 held the
    /// lock when n1 was killed; n1 came back empty and granted process 0, whose release (with
    /// redis-py's token check) deleted its own key, and then process 1. Both double grants are
    /// the restart's; process 0's release hijacked nothing, whether the grants name n1 or not.
    #[test]
    fn a_release_after_the_restart_that_lost_the_first_key_is_no_hijack() {
        for nodes in [&["n1"][..], &[]] {
            let mut history = History::default();
            history
                .grant(2, 500, 501, 2_000, nodes)
                .fault("start", 900, "kill", &["n1"], Value::Null, Value::Null)
                .fault("stop", 969, "kill", &["n1"], Value::Null, Value::Null)
                .grant(0, 973, 974, 2_000, nodes)
                .release(0, 1_031, OpType::Ok)
                .grant(1, 1_039, 1_040, 2_000, nodes);
            let explained = history.explained();
            assert_eq!(
                causes(&explained),
                vec![Cause::RestartHazard, Cause::RestartHazard],
                "nodes {nodes:?}: {explained:#?}"
            );
        }
        let mut history = History::default();
        history
            .grant(2, 500, 501, 2_000, &[])
            .fault("start", 900, "kill", &["n1"], Value::Null, Value::Null)
            .fault("stop", 969, "kill", &["n1"], Value::Null, Value::Null)
            .grant(0, 973, 974, 2_000, &[]);
        assert_eq!(
            history.explained()[0].sentence,
            "the grants do not name their nodes; process 2 was granted at 0.501s and process 0 \
             at 0.974s, while process 2's lease ran until 2.500s, across this: n1 was killed at \
             0.900s, back at 0.969s; it came back without process 2's key"
        );
    }

    /// The redis-py Sentinel adapter on a busy machine: 1.5 s after the Sentinels named n3 in
    /// n2's place, a client still connected to n2 was granted there.
    #[test]
    fn unnamed_grants_soon_after_a_master_was_replaced_are_a_failover() {
        let mut promoted = master(&["n2", "n3"]);
        promoted.measured = Some(json!({"from": ["n2"], "by": "sentinel"}));
        let mut history = History::default();
        history
            .push(master(&["n2"]), 100)
            .push(promoted, 10_911)
            .push(master(&["n3"]), 11_935)
            .grant(3, 13_480, 13_483, 5_000, &[])
            .grant(0, 13_830, 13_833, 5_000, &[]);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::Failover]);
        assert!(
            explained[0].sentence.contains(
                "across this: n2 was master until 11.935s, and a client still connected to it \
                 could be granted there until it was made a replica"
            ),
            "{}",
            explained[0].sentence
        );
        // Long after the change, nothing explains it.
        let mut history = History::default();
        history
            .push(master(&["n2"]), 100)
            .push(master(&["n3"]), 1_000)
            .grant(3, 13_480, 13_483, 5_000, &[])
            .grant(0, 13_830, 13_833, 5_000, &[]);
        assert_eq!(causes(&history.explained()), vec![Cause::Unexplained]);
    }

    #[test]
    fn unnamed_grants_across_a_promotion_are_a_failover_and_across_nothing_unexplained() {
        // The failover nemesis asked the Sentinels; a kill let them promote on their own.
        let mut promoted = master(&["n2"]);
        promoted.measured = Some(json!({"from": ["n1"], "by": "sentinel"}));
        for (fault, measured) in [("failover", json!({"master": "n1"})), ("kill", Value::Null)] {
            let mut history = History::default();
            history
                .push(master(&["n1"]), 100)
                .grant(0, 1_000, 1_001, 5_000, &[])
                .fault("start", 1_200, fault, &["n1"], Value::Null, measured)
                .push(promoted.clone(), 1_900)
                .grant(1, 2_000, 2_001, 5_000, &[]);
            let explained = history.explained();
            assert_eq!(causes(&explained), vec![Cause::Failover], "{fault}");
            assert!(
                explained[0].sentence.ends_with(
                    "the master that granted process 1 had not received process 0's key"
                ),
                "{}",
                explained[0].sentence
            );
        }

        let mut history = History::default();
        history
            .grant(0, 1_000, 1_001, 5_000, &[])
            .fault(
                "start",
                500,
                "client-pause",
                &["client-3"],
                Value::Null,
                Value::Null,
            )
            .grant(1, 2_000, 2_001, 5_000, &[]);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::Unexplained]);
        assert!(explained[0]
            .sentence
            .contains("the grants do not name the nodes that gave them"));
    }
}
