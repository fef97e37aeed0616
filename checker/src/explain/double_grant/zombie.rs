//! Rule 1: a holder that had outlived its lease, a zombie. How it outlived it is one step
//! each, tried in turn: its library told it it still held the lock, its client was frozen, it
//! was cut off, its node came back empty, its connection was lost, its renewal stopped, its
//! session was lost while it waited, or nothing at all happened to it (a slow holder).

use super::{and_list, connection_lost, unexplained};
use crate::explain::cause::{Cause, Explanation};
use crate::explain::context::Context;
use crate::holds::{DoubleGrant, Hold};
use crate::timeline::{Spell, State};
use crate::words::seconds;
use crate::Process;

/// Explains a double grant in which one holder had outlived its lease.
pub(super) fn zombie(grant: &DoubleGrant, context: &Context) -> Explanation {
    let past = PastItsLease::new(grant, context);
    let (zombie, other) = (past.zombie, past.other);
    let on_both =
        |explained: Explanation| explained.resting_on(&[&grant.first, &grant.second], &[]);
    stale_ownership(zombie, other, &past.near, &past.granted)
        .map(on_both)
        .or_else(|| past.frozen())
        .or_else(|| past.cut_off())
        .or_else(|| past.restarted_empty())
        .or_else(|| connection_lost(zombie, other, past.node(), context))
        .or_else(|| renewal_stopped(zombie, other, &past.near, &past.granted).map(on_both))
        .or_else(|| session_lost_in_acquire(zombie, context, &past.granted).map(on_both))
        .or_else(|| past.slow_holder())
        .unwrap_or_else(|| {
            unexplained(
                grant,
                context,
                &format!("process {} outlived its lease", zombie.process),
            )
        })
}

/// The zombie, the holder granted while it went on, and what each step looks at.
struct PastItsLease<'a> {
    first: &'a Hold,
    second: &'a Hold,
    /// The holder past its lease, and the other.
    zombie: &'a Hold,
    other: &'a Hold,
    /// How the lease ended and the other was granted, the end of every step's sentence.
    granted: String,
    /// The spells on the zombie's client and nodes during its hold.
    near: Vec<&'a Spell>,
    context: &'a Context<'a>,
}

impl<'a> PastItsLease<'a> {
    fn new(grant: &'a DoubleGrant, context: &'a Context<'a>) -> PastItsLease<'a> {
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
        PastItsLease {
            first,
            second,
            zombie,
            other,
            granted,
            near: context.spells_near(zombie, zombie.start_ms, zombie.end_ms),
            context,
        }
    }

    /// The node that granted the zombie, as a sentence names it.
    fn node(&self) -> &'a str {
        self.zombie
            .nodes
            .iter()
            .flatten()
            .next()
            .map_or("its node", String::as_str)
    }

    fn explained(&self, cause: Cause, sentence: String, spells: &[&Spell]) -> Explanation {
        Explanation::new(cause, sentence).resting_on(&[self.first, self.second], spells)
    }

    /// Its client was frozen inside its critical section.
    fn frozen(&self) -> Option<Explanation> {
        let zombie = self.zombie;
        let client = self.context.worker(zombie.process);
        let pause = self.near.iter().find(|s| {
            s.state == State::ClientPaused && client.as_deref() == Some(s.node.as_str())
        })?;
        let sentence = format!(
            "process {} (on {}) was frozen from {} to {}, inside its critical section; {}",
            zombie.process,
            pause.node,
            seconds(pause.start_ms.max(zombie.start_ms)),
            pause.shown_stop_ms().map_or("the end".to_string(), seconds),
            self.granted
        );
        Some(self.explained(Cause::Zombie, sentence, &[pause]))
    }

    /// It was cut off from its servers. A lock its library renews silently lives on past the
    /// lease it promised for as long as the renewals reach the servers: a cut at any time in
    /// the hold, before the second grant, is what ended it (under load, the acquire alone can
    /// take most of the lease).
    fn cut_off(&self) -> Option<Explanation> {
        let (zombie, other) = (self.zombie, self.other);
        let cut_by = if zombie.renews_silently {
            zombie.end_ms.min(other.start_ms)
        } else {
            zombie.lease_end_ms
        };
        let cut = self.near.iter().find(|s| {
            matches!(s.state, State::Links | State::CutOff)
                && s.holder.map(Process::Client) == Some(zombie.process)
                && s.start_ms <= cut_by
        })?;
        let sentence = if zombie.renews_silently && cut.start_ms > zombie.lease_end_ms {
            format!(
                "process {} was granted at {} a lock its library renews silently, and was cut \
                 off during its hold ({}, {}): its renewals stopped reaching the servers; \
                 process {} was granted at {}; process {} went on as holder until {}",
                zombie.process,
                seconds(zombie.start_ms),
                cut.fault,
                cut.phrase_until(zombie.end_ms),
                other.process,
                seconds(other.start_ms),
                zombie.process,
                seconds(zombie.end_ms),
            )
        } else {
            format!(
                "process {} was cut off just after its grant at {} ({}, {}); {}",
                zombie.process,
                seconds(zombie.start_ms),
                cut.fault,
                cut.phrase_until(zombie.end_ms),
                self.granted
            )
        };
        let cuts: Vec<&Spell> = self
            .near
            .iter()
            .copied()
            .filter(|s| s.start_index == cut.start_index)
            .collect();
        Some(self.explained(Cause::CutOffHolder, sentence, &cuts))
    }

    /// A renewing holder whose node came back empty: its renewals found no key from then on,
    /// so its lease ran out under it.
    fn restarted_empty(&self) -> Option<Explanation> {
        let (zombie, other) = (self.zombie, self.other);
        if !zombie.renews {
            return None;
        }
        let kill = self
            .context
            .key_lost(zombie.nodes.as_deref(), zombie.start_ms, other.start_ms)
            .filter(|s| s.state == State::Down)?;
        let sentence = format!(
            "process {} renews its lease, and during its hold {}, without its key: its renewals \
             failed from then; {}",
            zombie.process,
            kill.phrase_until(other.start_ms),
            self.granted
        );
        Some(self.explained(Cause::RestartHazard, sentence, &[kill]))
    }

    /// Nothing happened to it or its nodes: it was slow. A link fault on the holder's client
    /// group (a scripted cut of some of its links) is a fault on it, though it names neither
    /// the holder nor the nodes of its grant.
    fn slow_holder(&self) -> Option<Explanation> {
        let zombie = self.zombie;
        let links_cut = self.context.timeline.spells.iter().any(|s| {
            s.state == State::Links
                && s.touches(zombie.start_ms, zombie.end_ms)
                && self.context.reaches_group(s, zombie.process)
        });
        if !self.near.is_empty() || links_cut {
            return None;
        }
        let sentence = format!(
            "process {} held the lock past its lease with no fault on it or its nodes: {}",
            zombie.process, self.granted
        );
        Some(self.explained(Cause::SlowHolder, sentence, &[]))
    }
}

/// Rule 1's renewal story: a holder whose client renews its lease, whose last renewal asked
/// before the other's grant did not succeed and was followed by no other: its library gave up
/// renewing and went on without telling it (python-redis-lock's renewal thread ends on its
/// first exception). The renewal may come back after the other's grant: held up by a stalled
/// server, it was still in flight when the lease ran out. The faults that renewal met (a
/// server stalled past the client's socket timeout) are named.
fn renewal_stopped(
    zombie: &Hold,
    other: &Hold,
    near: &[&Spell],
    granted: &str,
) -> Option<Explanation> {
    let failed = zombie.renewal_failed.as_ref()?;
    if !zombie.renews || failed.asked_ms > other.start_ms {
        return None;
    }
    let met: Vec<&Spell> = near
        .iter()
        .copied()
        .filter(|s| s.touches(failed.asked_ms, failed.at_ms))
        .collect();
    let phrases: Vec<String> = met.iter().map(|s| s.phrase()).collect();
    // A fault over before the lease ended did not cost the lock: one more renewal would have
    // kept it.
    let over = met
        .iter()
        .filter_map(|s| s.stop_ms)
        .fold(None, |latest: Option<f64>, stop| {
            Some(latest.map_or(stop, |l| l.max(stop)))
        })
        .filter(|&stop| stop < zombie.lease_end_ms);
    let sentence = format!(
        "process {}'s last renewal came back at {} without success{}{}; no renewal followed, \
         and nothing told the holder it had lost the lock{}: {granted}",
        zombie.process,
        seconds(failed.at_ms),
        failed
            .error
            .as_ref()
            .map_or(String::new(), |e| format!(" ({e})")),
        match phrases.is_empty() {
            true => String::new(),
            false => format!(" while {}", phrases.join(" and ")),
        },
        over.map_or(String::new(), |stop| format!(
            ", though the fault was over at {}, before its lease ended: one more renewal would \
             have kept the lock",
            seconds(stop)
        )),
    );
    Some(Explanation::new(Cause::RenewalStopped, sentence).resting_on(&[], &met))
}

/// Rule 1's story of a session lost while the acquire waited: a holder whose library keeps
/// the lock with a session (renewed silently), whose client group was cut off, from the time
/// it asked until before its grant, for longer than the session (the lease it was told). Its
/// library gave that session up and made a new one, and then took the place the lost session
/// had made in the lock's queue for its own (Curator's `InterProcessMutex` trusts its node by
/// name, CURATOR-604): the servers expire the lost session in their own time and delete that
/// place with it, granting the next in line while the holder works on. The cut's spells on
/// every node are the evidence.
fn session_lost_in_acquire(zombie: &Hold, context: &Context, granted: &str) -> Option<Explanation> {
    let session_ms = zombie.validity_ms.filter(|_| zombie.renews_silently)?;
    let silences = |s: &Spell| {
        s.state == State::Links
            && (s.fault.starts_with("link-drop") || s.fault == "link-blackhole")
            && context.reaches_group(s, zombie.process)
    };
    let cut = context.timeline.spells.iter().find(|s| {
        silences(s)
            && s.earliest_ms() >= zombie.asked_ms
            && s.stop_ms
                .is_some_and(|stop| stop <= zombie.start_ms && stop - s.earliest_ms() > session_ms)
    })?;
    let cuts: Vec<&Spell> = context
        .timeline
        .spells
        .iter()
        .filter(|s| s.start_index == cut.start_index && silences(s))
        .collect();
    // When the cut acted, not when it was logged: an aimed fault records when it saw its grant.
    let (from, stop) = (cut.earliest_ms(), cut.stop_ms.unwrap_or(zombie.start_ms));
    let nodes: Vec<&str> = cuts.iter().map(|s| s.node.as_str()).collect();
    // Servers expire sessions from their leader, and a new leader gives every session a
    // fresh timeout: kills in the cut are how the lost session outlived it.
    let kills: Vec<&Spell> = context
        .timeline
        .spells
        .iter()
        .filter(|s| s.state == State::Down && s.touches(from, stop))
        .collect();
    let killed: Vec<&str> = kills.iter().map(|s| s.node.as_str()).collect();
    let sentence = format!(
        "process {} asked for the lock at {} and, while it waited, was cut off for {:.1} s, \
         longer than its {:.1} s session ({}, the links to {} from client group {}, {}-{}{}): \
         granted at {}, after the cut, it held the lock by the place its lost session had \
         taken in the lock's queue, which the servers delete when they expire that session; \
         {granted}",
        zombie.process,
        seconds(zombie.asked_ms),
        (stop - from) / 1000.0,
        session_ms / 1000.0,
        cut.fault,
        and_list(&nodes),
        cut.peers.join(","),
        seconds(from),
        seconds(stop),
        match killed.as_slice() {
            [] => String::new(),
            _ => format!(
                "; {} killed in the cut, each election after giving every session, the lost \
                 one too, a fresh timeout",
                and_list(&killed)
            ),
        },
        seconds(zombie.start_ms),
    );
    let evidence: Vec<&Spell> = cuts.into_iter().chain(kills).collect();
    Some(Explanation::new(Cause::SessionLostInAcquire, sentence).resting_on(&[], &evidence))
}

/// Rule 1's answer from the library: a holder that asked its library whether it still held
/// the lock, after the other's grant and with nothing cutting it off or freezing it at that
/// moment, and was told yes. A library that asks its servers, or that forgets the lock when
/// it learns that its session is gone, says no there; kazoo's `Lock.is_acquired` stays True
/// after the session is lost. The faults on the holder before the question are named: they
/// are how the lease ended under it.
fn stale_ownership(
    zombie: &Hold,
    other: &Hold,
    near: &[&Spell],
    granted: &str,
) -> Option<Explanation> {
    let told = zombie
        .told_held
        .as_ref()
        .filter(|told| told.asked_ms > other.start_ms)?;
    let cut_off_then = near.iter().any(|s| {
        s.touches(told.asked_ms, told.at_ms)
            && matches!(s.state, State::Links | State::CutOff | State::ClientPaused)
    });
    if cut_off_then {
        return None;
    }
    // The faults on the holder before the question: how its lease ended under it; the last
    // to end is named.
    let over: Vec<&Spell> = near
        .iter()
        .copied()
        .filter(|s| s.stop_ms.is_some_and(|stop| stop <= told.asked_ms))
        .collect();
    let last_over = over.iter().max_by(|a, b| {
        a.stop_ms
            .unwrap_or(0.0)
            .total_cmp(&b.stop_ms.unwrap_or(0.0))
    });
    let sentence = format!(
        "process {} asked its library at {} whether it still held the lock and was told yes, \
         {:.1} s after process {} was granted it{}; it was told yes {} times in its hold; \
         {granted}",
        zombie.process,
        seconds(told.asked_ms),
        (told.asked_ms - other.start_ms) / 1000.0,
        other.process,
        last_over.map_or(String::new(), |spell| {
            let stop = spell.stop_ms.unwrap_or(told.asked_ms);
            format!(
                " and {:.1} s after the last fault on it was over ({}, {}-{})",
                (told.asked_ms - stop) / 1000.0,
                spell.fault,
                seconds(spell.start_ms),
                seconds(stop)
            )
        }),
        told.times,
    );
    Some(Explanation::new(Cause::StaleOwnership, sentence).resting_on(&[], &over))
}
