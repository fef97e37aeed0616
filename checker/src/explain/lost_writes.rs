//! Why an acknowledged write was lost: rule 8 of [`crate::explain`].

use crate::explain::cause::{Cause, Explanation};
use crate::explain::context::{story, Context};
use crate::timeline::{Spell, State};
use crate::words::seconds;
use crate::Process;

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

/// `1 write`, `412 writes`.
fn count_writes(n: usize) -> String {
    format!("{n} write{}", if n == 1 { "" } else { "s" })
}
