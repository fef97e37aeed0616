//! Why two processes held the lock at once: rules 1 to 6 of [`crate::explain`].

use crate::explain::cause::{Cause, Explanation};
use crate::explain::context::{Context, Release, MASTER_POLL_MS, RECONFIGURED_MS};
use crate::holds::{DoubleGrant, Hold};
use crate::timeline::{Spell, State};
use crate::words::seconds;

use moved::moved;
use zombie::zombie;

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
/// and deleted by it, before the first was granted. A release whose answer never came (held up
/// on a slowed link, say) may have landed any time after it was asked.
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
            && (r.completed_ms >= set_from_ms || !r.answered)
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
    let granted = format!(
        "process {} was granted at {} while process {}'s lease ran until {}",
        other.process,
        seconds(other.start_ms),
        victim.process,
        seconds(victim.lease_end_ms),
    );
    let sentence = match release.answered {
        true => format!(
            "process {} released the key at {}{why} and so deleted process {}'s key{held_up}: \
             {granted}",
            release.process,
            seconds(release.released_ms),
            victim.process,
        ),
        false => format!(
            "process {}'s release asked at {} never came back (it gave up at {}), and a \
             release that checks no token deletes whoever holds the key whenever it lands: it \
             may have deleted process {}'s key{held_up}: {granted}",
            release.process,
            seconds(release.released_ms),
            seconds(release.completed_ms),
            victim.process,
        ),
    };
    let mut explained = Explanation::new(Cause::Hijack, sentence).resting_on(&[first, second], &[]);
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
    let what = what_they_lost(&stories, &names, first, to);
    let quorums = quorums(first, second, &names);
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

/// Rule 3's words for what each shared node did between the grants: killed and back without
/// the key, or its clock set forward; `names` are all the shared nodes, `to` the second grant.
fn what_they_lost(
    stories: &[(Cause, &Spell, Vec<&str>)],
    names: &[&str],
    first: &Hold,
    to: f64,
) -> Vec<String> {
    stories
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
        .collect()
}

/// Rule 3's words for how the two grants' nodes overlapped in `names`, the shared nodes.
fn quorums(first: &Hold, second: &Hold, names: &[&str]) -> String {
    match (&first.nodes, &second.nodes) {
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
    }
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

/// Rules 1 and 3's story of a lock that lives with its holder's connection (a PostgreSQL or
/// MariaDB session lock, `renewal: connection`): during the hold, before the other's grant, a
/// fault on the links from the holder's client group to the node that granted it reset or cut
/// that connection. The session ends with it, and the lock at once, whatever lease the holder
/// was told (a reset reaches the server as the connection's end; a cut, once the server's
/// keepalive or the client gives up on it); the holder learns it only at its next request. A
/// slowed link alone ends no session, but one on which the holder's renewal got no answer
/// does where its client then gives the connection up (MariaDB's) or the server's
/// `tcp_user_timeout` runs out (PostgreSQL's). The link faults are the evidence.
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
    // the session ends with such a connection, given up by its client (MariaDB's) or by the
    // server once its unacknowledged data outlives `tcp_user_timeout` (PostgreSQL's).
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
            "its renewal asked at {} got no answer by {}{}, on a connection that had \
             stopped carrying its requests",
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
mod zombie;
