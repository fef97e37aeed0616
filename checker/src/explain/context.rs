//! What the explanation rules know of a run beyond the finding itself, and what they share:
//! the [`Context`] of faults and masters, the releases on a key, how a spell is told.

use crate::explain::cause::{Cause, Explanation};
use crate::holds::Hold;
use crate::timeline::{Spell, State, Timeline};
use crate::words::seconds;
use crate::Process;

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
    /// Its invoke and its `ok`: the key was deleted in between. For a release whose answer
    /// never came, its invoke and when its client gave up: the delete may land any time
    /// after its invoke, as an operation of unknown outcome may take effect.
    pub released_ms: f64,
    pub completed_ms: f64,
    /// Whether it came back `ok`.
    pub answered: bool,
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
    /// How many client groups reach the nodes through links of their own (worker `w` in
    /// group `w % groups`); `None` where unknown: then a link fault may be any client's.
    pub groups: Option<u64>,
}

impl Context<'_> {
    /// Whether the run had no fault at all: no spell but the masters the deployment named,
    /// and none of those replaced (a master that changed by itself is an event, too).
    pub(crate) fn no_fault(&self) -> bool {
        let spells = &self.timeline.spells;
        spells
            .iter()
            .all(|s| s.state == State::Master && s.stop_ms.is_none())
    }

    pub(crate) fn worker(&self, process: Process) -> Option<String> {
        match process {
            Process::Client(p) => Some(format!("client-{}", p % self.workers.max(1) as u64)),
            Process::Nemesis(_) => None,
        }
    }

    /// Whether a link spell reached `process`'s client group (any group's, where the groups
    /// are unknown).
    pub(crate) fn reaches_group(&self, spell: &Spell, process: Process) -> bool {
        let Process::Client(p) = process else {
            return false;
        };
        match self.groups {
            Some(groups) => spell.peers.contains(&client_group(p, self.workers, groups)),
            None => true,
        }
    }

    /// The nodes the deployment named master around `at_ms`, allowing for the nemesis's
    /// polling; `None` where the history records no master at all.
    pub(crate) fn masters_around(&self, at_ms: f64) -> Option<Vec<&Spell>> {
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
    pub(crate) fn outlived_by(
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
    pub(crate) fn key_lost(&self, nodes: Option<&[String]>, from: f64, to: f64) -> Option<&Spell> {
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
    pub(crate) fn spells_near<'a>(&'a self, hold: &Hold, from: f64, to: f64) -> Vec<&'a Spell> {
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

/// The client group of process `process`, as link spells name it: worker `process % workers`
/// is in group `worker % groups`.
pub(crate) fn client_group(process: u64, workers: usize, groups: u64) -> String {
    format!("g{}", process % workers.max(1) as u64 % groups.max(1))
}

/// How much later than a client met it the nemesis may record a change of master: it asks the
/// deployment who is master every 200 ms, and asking takes time of its own.
pub(crate) const MASTER_POLL_MS: f64 = 500.0;

/// How long after the Sentinels name a new master the old one may still grant to clients
/// connected to it: until they make it a replica, within Sentinel's failover-timeout (6 s by
/// default; measured here, a busy machine took 2 to 3 s).
pub(crate) const RECONFIGURED_MS: f64 = 6_000.0;

impl Explanation {
    /// Adds the holds' acquires and the spells to the evidence.
    pub(crate) fn resting_on(mut self, holds: &[&Hold], spells: &[&Spell]) -> Explanation {
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
}

/// `was frozen from 1.100s to 5.000s (on client-0)`, `was cut off (link-drop-holder, ...)`.
pub(crate) fn story(cause: Cause, spell: &Spell, until_ms: f64) -> String {
    match cause {
        Cause::Zombie => format!(
            "was frozen from {} to {} (on {})",
            seconds(spell.start_ms),
            spell.shown_stop_ms().map_or("the end".to_string(), seconds),
            spell.node
        ),
        _ => format!(
            "was cut off ({}, {})",
            spell.fault,
            spell.phrase_until(until_ms)
        ),
    }
}
