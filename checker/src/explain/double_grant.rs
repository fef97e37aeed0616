//! Why two processes held the lock at once: rules 1 to 6 of [`crate::explain`].

use crate::explain::cause::{Cause, Explanation};
use crate::explain::context::{Context, Release, MASTER_POLL_MS, RECONFIGURED_MS};
use crate::holds::{DoubleGrant, Hold};
use crate::timeline::{Spell, State};
use crate::words::seconds;
use crate::Process;

use moved::moved;

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
            .or_else(|| let_in(grant, context))
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
/// The second holder's key may be the one deleted, too: set while a release asked before both
/// grants was held up (a paused server answers its queued commands in an order of its own),
/// and deleted by it, before the first was granted.
fn hijack(grant: &DoubleGrant, releases: &[Release], context: &Context) -> Option<Explanation> {
    let (first, second) = (&grant.first, &grant.second);
    // The key may have been set from the acquire's ask on; the victim's the first holder's,
    // after its grant, or the second's, set while the release was in flight.
    let deleted = |victim: &Hold, other: &Hold, r: &Release, set_from_ms: f64| {
        let same_node = match (&r.nodes, &victim.nodes) {
            (Some(theirs), Some(ours)) if !theirs.is_empty() && !ours.is_empty() => {
                theirs.iter().any(|n| ours.contains(n))
            }
            _ => true,
        };
        // A session lock is released by its own session only: no other's release deletes it.
        !victim.lives_with_connection
            && r.key == grant.key
            && r.process != victim.process
            && r.completed_ms >= set_from_ms
            && r.released_ms <= other.start_ms
            && same_node
            && !granted_over(r, victim)
            && !let_in_beside(r, victim, context)
            && context
                .key_lost(victim.nodes.as_deref(), set_from_ms, r.released_ms)
                .is_none()
    };
    let first_deleted = releases
        .iter()
        .find(|r| deleted(first, second, r, first.start_ms))
        .map(|r| (r, first, second));
    let (release, victim, other) = first_deleted.or_else(|| {
        releases
            .iter()
            .find(|r| deleted(second, first, r, second.asked_ms))
            .map(|r| (r, second, first))
    })?;
    let why = if victim.process == second.process {
        format!(
            ", a release held up until {} (one that checks no token deletes whoever holds the \
             key by then),",
            seconds(release.completed_ms)
        )
    } else if release.released_ms > release.lease_end_ms {
        format!(
            ", after its own lease had ended at {},",
            seconds(release.lease_end_ms)
        )
    } else {
        " when its own key was gone already (a release that checks no token deletes whoever \
         holds the key),"
            .to_string()
    };
    let held_up = match victim.process == second.process {
        true => ", set while the release was held up",
        false => "",
    };
    let mut explained = Explanation::new(
        Cause::Hijack,
        format!(
            "process {} released the key at {}{why} and so deleted process {}'s key{held_up}: \
             process {} was granted at {} while process {}'s lease ran until {}",
            release.process,
            seconds(release.released_ms),
            victim.process,
            other.process,
            seconds(other.start_ms),
            victim.process,
            seconds(victim.lease_end_ms),
        ),
    )
    .resting_on(&[first, second], &[]);
    explained.ops.push(release.acquire_index);
    explained.ops.sort_unstable();
    explained.ops.dedup();
    Some(explained)
}

/// Whether, in a run with no fault, `first` was granted while `release`'s own lease was live:
/// the lock let it in beside that holder, so nothing says it ever had a key to delete (a
/// python-etcd3 `with` block entered without the lock; the real holder's release deleted
/// only its own key).
fn let_in_beside(release: &Release, first: &Hold, context: &Context) -> bool {
    context.no_fault()
        && release.granted_ms < first.start_ms
        && first.start_ms < release.lease_end_ms
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
        // A node may set the first key any time from the acquire's invoke: one killed after
        // it voted and before the library answered loses the key all the same.
        let lost = context.key_lost(master_nodes.as_deref(), first.asked_ms, to)?;
        let consequence = if lost.state == State::Down {
            format!(
                "it came back without process {}'s key{}",
                first.process,
                during_acquire(first, lost)
            )
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

/// Where `spell` began while `hold`'s acquire was still under way, that it did, for a
/// sentence: the node may have voted before it went down, or not (the history cannot say).
fn during_acquire(hold: &Hold, spell: &Spell) -> String {
    if spell.start_ms < hold.start_ms {
        format!(
            " (it went down while the acquire asked at {} was under way, after it may have \
             voted)",
            seconds(hold.asked_ms)
        )
    } else {
        String::new()
    }
}

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
            .on(node, &[State::Down], first.asked_ms, to)
            .find(|s| s.start_ms >= first.asked_ms);
        let jump = context
            .timeline
            .on(node, &[State::Clock], from, to)
            .find(|s| s.offset_ms.is_none_or(|offset| offset > 0.0));
        let (cause, spell) = match (restart, jump) {
            (Some(spell), _) => (Cause::RestartHazard, spell),
            (None, Some(spell)) => (Cause::ClockJump, spell),
            (None, None) => {
                return hijack(grant, releases, context)
                    .or_else(|| connection_lost(first, second, node, context))
                    .or_else(|| not_kept(grant, node, context))
                    .unwrap_or_else(|| {
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
                    "{who} {} killed at {} and came back{} without the key{}",
                    if nodes.len() == 1 { "was" } else { "were" },
                    at(spell.start_ms),
                    spell
                        .stop_ms
                        .filter(|&back| back <= to)
                        .map_or(String::new(), |back| format!(" at {}", at(back))),
                    during_acquire(first, spell),
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
        (Some(a), Some(b)) if a.len() > 1 && same_nodes(a, b) => format!(
            "; process {}'s quorum was process {}'s, {}",
            second.process,
            first.process,
            b.join(",")
        ),
        (Some(a), Some(b)) if a.len() > 1 || b.len() > 1 => format!(
            "; process {}'s quorum {} overlapped process {}'s {} {}in {}",
            second.process,
            b.join(","),
            first.process,
            a.join(","),
            if names.len() < a.len().min(b.len()) {
                "only "
            } else {
                ""
            },
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
    if let Some(told) = stale_ownership(zombie, other, &near, &granted) {
        return told.resting_on(&[first, second], &[]);
    }
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
            pause.shown_stop_ms().map_or("the end".to_string(), seconds),
            granted
        );
        return Explanation::new(Cause::Zombie, sentence).resting_on(&[first, second], &[pause]);
    }
    // A lock its library renews silently lives on past the lease it promised for as long as
    // the renewals reach the servers: a cut at any time in the hold, before the second grant,
    // is what ended it (under load, the acquire alone can take most of the lease).
    let cut_by = if zombie.renews_silently {
        zombie.end_ms.min(other.start_ms)
    } else {
        zombie.lease_end_ms
    };
    let cut = near.iter().find(|s| {
        matches!(s.state, State::Links | State::CutOff)
            && s.holder.map(Process::Client) == Some(zombie.process)
            && s.start_ms <= cut_by
    });
    if let Some(cut) = cut {
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
                granted
            )
        };
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
    let node = zombie
        .nodes
        .iter()
        .flatten()
        .next()
        .map_or("its node", String::as_str);
    if let Some(lost) = connection_lost(zombie, other, node, context) {
        return lost;
    }
    if let Some(stopped) = renewal_stopped(zombie, other, &near, &granted) {
        return stopped.resting_on(&[first, second], &[]);
    }
    if let Some(lost) = session_lost_in_acquire(zombie, context, &granted) {
        return lost.resting_on(&[first, second], &[]);
    }
    // A link fault on the holder's client group (a scripted cut of some of its links) is a
    // fault on it, though it names neither the holder nor the nodes of its grant.
    let links_cut = context.timeline.spells.iter().any(|s| {
        s.state == State::Links
            && s.touches(zombie.start_ms, zombie.end_ms)
            && context.reaches_group(s, zombie.process)
    });
    if near.is_empty() && !links_cut {
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

/// Rule 3's last word: `node` granted both in a run with no fault at all (a master named is
/// no fault): the server did as it was told, so the lock the library set did not keep its
/// key for the lease it reported (sherlock's `expire=None` deletes the key it has just set).
fn not_kept(grant: &DoubleGrant, node: &str, context: &Context) -> Option<Explanation> {
    let (first, second) = (&grant.first, &grant.second);
    context.no_fault().then(|| {
        let sentence = format!(
            "{node} granted process {} the lock at {} while process {}'s lease ran until {}, \
             in a run with no fault and no release between: the lock process {} was granted \
             at {} did not keep its key for the lease it reported",
            second.process,
            seconds(second.start_ms),
            first.process,
            seconds(first.lease_end_ms),
            first.process,
            seconds(first.start_ms),
        );
        Explanation::new(Cause::NoExclusion, sentence).resting_on(&[first, second], &[])
    })
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
        "process {}'s last renewal came back at {} without success{}{}; its library renewed no \
         more and told it nothing{}: {granted}",
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

/// Rules 1 and 3's story of a lock that lives with its holder's connection (a PostgreSQL or
/// MariaDB session lock, `renewal: connection`): during the hold, before the other's grant, a
/// fault on the links from the holder's client group to the node that granted it reset or cut
/// that connection. The session ends with it, and the lock at once, whatever lease the holder
/// was told (a reset reaches the server as the connection's end; a cut, once the server's
/// keepalive or the client gives up on it); the holder learns it only at its next request. A
/// slowed link alone ends no session, but one on which the holder's renewal got no answer
/// does where its client then gives the connection up (MariaDB's). The link faults are the
/// evidence.
fn connection_lost(
    holder: &Hold,
    other: &Hold,
    node: &str,
    context: &Context,
) -> Option<Explanation> {
    if !holder.lives_with_connection {
        return None;
    }
    let on_its_links = |s: &Spell| {
        s.state == State::Links
            && holder
                .nodes
                .as_ref()
                .is_none_or(|nodes| nodes.contains(&s.node))
            && context.reaches_group(s, holder.process)
            && s.touches(holder.start_ms, other.start_ms)
    };
    // A renewal that met a fault on its links and got no answer before the other's grant:
    // its client gives such a connection up (MariaDB's does), and the session ends with it.
    let unanswered = holder
        .renewal_unanswered
        .as_ref()
        .filter(|renewal| renewal.at_ms <= other.start_ms);
    let ends_connection = |s: &&Spell| {
        on_its_links(s)
            && (matches!(s.phrase_verb(), "reset" | "cut" | "made silent")
                || unanswered.is_some_and(|r| s.touches(r.asked_ms, r.at_ms)))
    };
    let faults: Vec<&Spell> = context
        .timeline
        .spells
        .iter()
        .filter(ends_connection)
        .collect();
    if faults.is_empty() {
        return None;
    }
    let mut phrases: Vec<String> = faults
        .iter()
        .map(|s| s.phrase_until(other.start_ms))
        .collect();
    if let Some(renewal) =
        unanswered.filter(|r| faults.iter().any(|s| s.touches(r.asked_ms, r.at_ms)))
    {
        phrases.push(format!(
            "its renewal asked at {} got no answer by {}{}, and its client gave the \
             connection up",
            seconds(renewal.asked_ms),
            seconds(renewal.at_ms),
            renewal
                .error
                .as_ref()
                .map_or(String::new(), |e| format!(" ({e})"))
        ));
    }
    let told = holder
        .renewal_failed
        .as_ref()
        .and_then(|failed| Some((failed.at_ms, failed.error.as_ref()?)))
        .map_or(String::new(), |(at, error)| {
            format!(
                "; its last renewal came back at {} with: {error}",
                seconds(at)
            )
        });
    let sentence = format!(
        "process {}'s lock lived with its connection to {node}, and during its hold {}: the \
         session ended with the connection, and the lock with it; {node} granted process {} at \
         {}, while process {} went on as holder until {}{told}",
        holder.process,
        phrases.join("; "),
        other.process,
        seconds(other.start_ms),
        holder.process,
        seconds(holder.end_ms),
    );
    Some(Explanation::new(Cause::ConnectionLost, sentence).resting_on(&[holder, other], &faults))
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

/// Rule 5's last word: grants that name no nodes, in a run with no fault at all: the lock
/// service did as it was told, so the library let the second in while the first held (a
/// python-etcd3 `with` block enters when its acquire timed out). How long the second acquire
/// took is told: a library's own wait, run out, is the tell.
fn let_in(grant: &DoubleGrant, context: &Context) -> Option<Explanation> {
    let (first, second) = (&grant.first, &grant.second);
    context.no_fault().then(|| {
        let sentence = format!(
            "process {} was granted at {}, its acquire having taken {:.1} s, while process {}'s \
             lease ran until {}, in a run with no fault and no release between: the library \
             let it in while process {} held the lock",
            second.process,
            seconds(second.start_ms),
            (second.start_ms - second.asked_ms) / 1000.0,
            first.process,
            seconds(first.lease_end_ms),
            first.process,
        );
        Explanation::new(Cause::NoExclusion, sentence).resting_on(&[first, second], &[])
    })
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
/// Whether two grants came from the same nodes, in whatever order.
fn same_nodes(a: &[String], b: &[String]) -> bool {
    a.len() == b.len() && a.iter().all(|n| b.contains(n))
}

fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

mod moved;
#[cfg(test)]
mod tests;
