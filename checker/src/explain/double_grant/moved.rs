//! Rule 4: the lock moved from the first holder's nodes to others. Each way it can have moved
//! is one step, tried in turn: the first holder's master cut off while another was promoted,
//! a node granting as master though the deployment no longer named it, a cut-off master
//! granting after its heal, the first holder's nodes going away, a failover under way.

use super::{and_list, unexplained};
use crate::explain::cause::{Cause, Explanation};
use crate::explain::context::{Context, MASTER_POLL_MS, RECONFIGURED_MS};
use crate::holds::{DoubleGrant, Hold};
use crate::timeline::{Spell, State};
use crate::words::seconds;

/// Explains a double grant whose two grants came from different nodes.
pub(super) fn moved(
    grant: &DoubleGrant,
    first_nodes: &[String],
    second_nodes: &[String],
    context: &Context,
) -> Explanation {
    let lock = Moved::new(grant, first_nodes, second_nodes, context);
    lock.master_cut_off()
        .or_else(|| lock.master_no_longer_named())
        .or_else(|| lock.healed_master())
        .or_else(|| lock.first_nodes_went_away())
        .or_else(|| lock.stepping_down())
        .unwrap_or_else(|| {
            unexplained(
                grant,
                context,
                &format!(
                    "{} granted the first, {} the second, and nothing happened to {} between them",
                    lock.old, lock.new, lock.old
                ),
            )
        })
}

/// What each step looks at: the two holds, the nodes of each, and the promotion of the second
/// holder's node, if the nemesis saw one.
struct Moved<'a> {
    first: &'a Hold,
    second: &'a Hold,
    first_nodes: &'a [String],
    second_nodes: &'a [String],
    context: &'a Context<'a>,
    /// The first holder's nodes, and the second's, as a list in words.
    old: String,
    new: String,
    promotion: Option<&'a Spell>,
}

impl<'a> Moved<'a> {
    fn new(
        grant: &'a DoubleGrant,
        first_nodes: &'a [String],
        second_nodes: &'a [String],
        context: &'a Context<'a>,
    ) -> Moved<'a> {
        let to = grant.second.start_ms;
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
        let words =
            |nodes: &[String]| and_list(&nodes.iter().map(String::as_str).collect::<Vec<_>>());
        Moved {
            first: &grant.first,
            second: &grant.second,
            first_nodes,
            second_nodes,
            context,
            old: words(first_nodes),
            new: words(second_nodes),
            promotion,
        }
    }

    /// The second holder's nodes and how they became master, `side` saying where.
    fn promoted(&self, side: &str) -> String {
        let new = &self.new;
        match self.promotion {
            Some(spell) => format!(
                "{new}, which became master{side} at {}{},",
                seconds(spell.start_ms),
                spell
                    .promoted_by
                    .as_ref()
                    .map_or(String::new(), |by| format!(" (promoted by {by})"))
            ),
            None => format!("{new}, promoted{side},"),
        }
    }

    /// An explanation resting on both holds, `spell` and the promotion.
    fn resting_on(&self, cause: Cause, sentence: String, spell: &Spell) -> Explanation {
        let spells: Vec<&Spell> = std::iter::once(spell).chain(self.promotion).collect();
        Explanation::new(cause, sentence).resting_on(&[self.first, self.second], &spells)
    }

    /// The first spell in one of `states`, on one of `nodes`, touching the time from the
    /// first grant to the second, that `keep` takes.
    fn between_grants(
        &self,
        nodes: &'a [String],
        states: &'a [State],
        keep: impl Fn(&Spell) -> bool,
    ) -> Option<&'a Spell> {
        let (from, to) = (self.first.start_ms, self.second.start_ms);
        nodes.iter().find_map(|node| {
            self.context
                .timeline
                .on(node, states, from, to)
                .find(|s| keep(s))
        })
    }

    /// The first holder's master was cut off before its grant and went on granting while
    /// the other side promoted another.
    fn master_cut_off(&self) -> Option<Explanation> {
        let (first, second) = (self.first, self.second);
        let from = first.start_ms;
        let cut = self.between_grants(self.first_nodes, &[State::CutOff], |s| {
            s.earliest_ms() <= from && s.stop_ms.is_none_or(|stop| stop >= from)
        })?;
        let sentence = format!(
            "{} and went on granting as master: process {} at {}; {} granted process {} at {}, \
             while process {}'s lease ran until {}: two masters at once",
            cut.phrase_until(from),
            first.process,
            seconds(first.start_ms),
            self.promoted(" on the other side"),
            second.process,
            seconds(second.start_ms),
            first.process,
            seconds(first.lease_end_ms),
        );
        Some(self.resting_on(Cause::SplitBrain, sentence, cut))
    }

    /// A node the deployment no longer (or not yet) named master that granted all the same
    /// was a second master: the one it was replaced by, or that replaced it, granted the
    /// other.
    fn master_no_longer_named(&self) -> Option<Explanation> {
        let (first, second, context) = (self.first, self.second, self.context);
        let (hold, node, named) = [(first, self.first_nodes), (second, self.second_nodes)]
            .into_iter()
            .find_map(|(hold, nodes)| {
                let node = nodes.first()?;
                let named = context.masters_around(hold.start_ms)?;
                (!named.iter().any(|m| m.node == *node)).then_some((hold, node, named))
            })?;
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
             held the lock on {} from {}, and {} granted process {} at {}, while process \
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
            self.old,
            seconds(first.start_ms),
            self.new,
            second.process,
            seconds(second.start_ms),
            first.process,
            seconds(first.lease_end_ms),
        );
        let spells: Vec<&Spell> = named.into_iter().chain(self.promotion).collect();
        Some(Explanation::new(Cause::SplitBrain, sentence).resting_on(&[first, second], &spells))
    }

    /// A master cut off while another was promoted goes on granting after the heal, until the
    /// Sentinels make it a replica; the nemesis may see it demoted a little before its clients
    /// do, so this is the old master's grant within RECONFIGURED_MS of its heal.
    fn healed_master(&self) -> Option<Explanation> {
        let (first, second, context) = (self.first, self.second, self.context);
        let (hold, node, other, cut, promotion) = [
            (first, self.first_nodes, second, self.second_nodes),
            (second, self.second_nodes, first, self.first_nodes),
        ]
        .into_iter()
        .find_map(|(hold, nodes, other, others)| {
            let at = hold.start_ms;
            nodes.iter().find_map(|node| {
                let cut = context
                    .timeline
                    .on(node, &[State::CutOff], at - RECONFIGURED_MS, at)
                    .filter(|s| s.stop_ms.is_some_and(|healed| healed <= at))
                    .last()?;
                let promotion = others.iter().find_map(|other| {
                    context
                        .timeline
                        .on(other, &[State::Master], cut.start_ms, at)
                        .find(|s| s.promoted_by.is_some() && s.start_ms >= cut.start_ms)
                })?;
                Some((hold, node, other, cut, promotion))
            })
        })?;
        let sentence = format!(
            "{}, and {} meanwhile; {node} went on granting as master after the heal, until it \
             was made a replica: process {} at {}; {} granted process {} at {}, while process \
             {}'s lease ran until {}: two masters at once",
            cut.phrase(),
            promotion.phrase(),
            hold.process,
            seconds(hold.start_ms),
            promotion.node,
            other.process,
            seconds(other.start_ms),
            first.process,
            seconds(first.lease_end_ms),
        );
        Some(
            Explanation::new(Cause::SplitBrain, sentence)
                .resting_on(&[first, second], &[cut, promotion]),
        )
    }

    /// The first holder's nodes were cut off, went down, paused or failed over between the
    /// grants: the key it set there had not reached the nodes that granted the second.
    fn first_nodes_went_away(&self) -> Option<Explanation> {
        let (first, second) = (self.first, self.second);
        let (from, to) = (first.start_ms, second.start_ms);
        let went = &[State::CutOff, State::Down, State::Paused, State::Failover];
        let spell = self.between_grants(self.first_nodes, went, |s| {
            s.state == State::Failover || s.start_ms >= from
        })?;
        let sentence = format!(
            "process {} held the lock on {} from {}; {}; {} granted process {} at {} while \
             process {}'s lease ran until {}: the key process {} set on {} had not reached {}",
            first.process,
            self.old,
            seconds(first.start_ms),
            spell.phrase_until(to),
            self.promoted(""),
            second.process,
            seconds(second.start_ms),
            first.process,
            seconds(first.lease_end_ms),
            first.process,
            self.old,
            self.new,
        );
        Some(self.resting_on(Cause::Failover, sentence, spell))
    }

    /// A failover under way from the second holder's node: the master being replaced and the
    /// one replacing it both granted before the old one stepped down.
    fn stepping_down(&self) -> Option<Explanation> {
        let (first, second) = (self.first, self.second);
        let spell = self.between_grants(self.second_nodes, &[State::Failover], |_| true)?;
        let sentence = format!(
            "{}; {} granted process {} at {} and {}, the master being replaced, granted \
             process {} at {}, while process {}'s lease ran until {}: both granted before the \
             old master stepped down",
            spell.phrase(),
            self.old,
            first.process,
            seconds(first.start_ms),
            self.new,
            second.process,
            seconds(second.start_ms),
            first.process,
            seconds(first.lease_end_ms),
        );
        Some(Explanation::new(Cause::Failover, sentence).resting_on(&[first, second], &[spell]))
    }
}
