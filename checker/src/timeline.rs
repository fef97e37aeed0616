//! What the faults did to each node and client, read from the nemesis ops alone: the lanes of a
//! run's timeline, and the events an explanation of a violation names.
//!
//! Each fault's `start` and the next `stop` of the same fault make one [`Spell`] per thing it
//! hit: a node killed, paused, cut off (and from whom), its clock set off, its links from a
//! client group cut or slowed, a failover asked of it; a client worker (`client-2`) frozen or
//! crashed. A start whose `measured` says it was `refused` (no holder came in time, no node
//! was master) hit nothing and makes no spell.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::operation::ms;
use crate::words::seconds;
use crate::Op;

/// What a node or client went through, from a fault's start to its stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Killed; the spell ends when it was started again.
    Down,
    /// Frozen (SIGSTOP).
    Paused,
    /// Cut off from the nodes in [`Spell::peers`].
    CutOff,
    /// Its clock set off by [`Spell::offset_ms`] (or strobing, or drifting).
    Clock,
    /// The links from a client group to it dropped or degraded.
    Links,
    /// Its packets lost or delayed.
    Packets,
    /// Its Sentinels asked to fail it over (it was master).
    Failover,
    /// A client worker frozen inside its critical section.
    ClientPaused,
    /// A client worker crashed.
    ClientCrashed,
    /// Master of the lock's key, as the deployment said (two at once in a split brain).
    Master,
}

impl State {
    /// The state a fault puts its targets in, by the fault's name.
    fn of_fault(fault: &str) -> Option<State> {
        Some(match fault {
            "kill" | "kill-holder" | "kill-primary" => State::Down,
            "pause" | "pause-primary" => State::Paused,
            "failover" => State::Failover,
            "client-pause" => State::ClientPaused,
            "client-crash" => State::ClientCrashed,
            f if f.starts_with("partition") => State::CutOff,
            f if f.starts_with("clock") => State::Clock,
            f if f.starts_with("link") => State::Links,
            f if f.starts_with("packet") || f == "netem" => State::Packets,
            _ => return None,
        })
    }

    /// A few words for a timeline's legend and a sentence: `down`, `cut off`.
    pub fn label(self) -> &'static str {
        match self {
            State::Down => "down",
            State::Paused => "paused",
            State::CutOff => "cut off",
            State::Clock => "clock off",
            State::Links => "links cut",
            State::Packets => "packets lost",
            State::Failover => "failover asked",
            State::ClientPaused => "client paused",
            State::ClientCrashed => "client crashed",
            State::Master => "master",
        }
    }
}

/// One node's (or client's) spell in one state, from a fault's start to its stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spell {
    /// A node (`n3`) or a client worker (`client-2`).
    pub node: String,
    pub state: State,
    /// The fault that did it, as the nemesis op names it.
    pub fault: String,
    pub start_ms: f64,
    /// When the nemesis began the start, where it says: the fault took effect at some time
    /// between this and `start_ms`, when it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub began_ms: Option<f64>,
    /// When the stop was recorded, once the fault was undone; `None` where the fault never
    /// stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_ms: Option<f64>,
    /// Until when the fault surely acted, where its stop says (`measured.ended_ms`): when the
    /// nemesis began to undo it, or when it ended by itself (a client pause's thaw). It ended
    /// at some time between this and `stop_ms`: what a sentence or a lane shows ends here, so
    /// that nothing the fault prevented appears inside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<f64>,
    /// `index` of the nemesis `start`.
    pub start_index: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_index: Option<u64>,
    /// For `cut-off`, the nodes it could not reach or be reached from; for `links`, the client
    /// groups cut from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<String>,
    /// For `clock`, the offset set (measured where the harness measured it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_ms: Option<f64>,
    /// For faults aimed at the lock's holder, the holder's process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<u64>,
    /// For `master`, who promoted it (`sentinel`, `cluster`, `election`), where it replaced
    /// another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promoted_by: Option<String>,
}

impl Spell {
    /// The earliest it may have taken effect.
    pub fn earliest_ms(&self) -> f64 {
        self.began_ms.unwrap_or(self.start_ms).min(self.start_ms)
    }

    /// The end of the window shown for it: until when it surely acted (`None`: to the end).
    pub fn shown_stop_ms(&self) -> Option<f64> {
        self.ended_ms.or(self.stop_ms)
    }

    /// Whether the spell may have been on at some time in `[from_ms, to_ms]`.
    pub fn touches(&self, from_ms: f64, to_ms: f64) -> bool {
        self.earliest_ms() <= to_ms && self.stop_ms.is_none_or(|stop| stop >= from_ms)
    }

    /// The spell's phrase, leaving out a stop that came after `until_ms` (a sentence about
    /// what happened before then).
    pub(crate) fn phrase_until(&self, until_ms: f64) -> String {
        if self.shown_stop_ms().is_some_and(|stop| stop > until_ms) {
            Spell {
                stop_ms: None,
                ended_ms: None,
                ..self.clone()
            }
            .phrase()
        } else {
            self.phrase()
        }
    }

    /// `n3 killed at 9.740s, back at 11.610s`: the spell as a sentence names it, from
    /// when it surely acted to when it surely still did.
    pub fn phrase(&self) -> String {
        let from = seconds(self.start_ms);
        let until = |what: &str| {
            self.shown_stop_ms()
                .map_or(String::new(), |stop| format!(", {what} {}", seconds(stop)))
        };
        match self.state {
            // Recorded once it answered again; the restart, where measured, came before that.
            State::Down => format!(
                "{} was killed at {from}{}",
                self.node,
                until(if self.ended_ms.is_some() {
                    "restarted at"
                } else {
                    "back at"
                })
            ),
            State::Paused => format!("{} was paused at {from}{}", self.node, until("resumed at")),
            State::CutOff => format!(
                "{} was cut off{} at {from}{}",
                self.node,
                if self.peers.is_empty() {
                    String::new()
                } else {
                    format!(" from {}", self.peers.join(","))
                },
                until("healed at")
            ),
            State::Clock => format!(
                "{}'s clock was set {} at {from}{}",
                self.node,
                self.offset_ms
                    .map_or("off".to_string(), |o| format!("{o:+.0} ms")),
                until("reset at")
            ),
            State::Links => format!(
                "the links to {} from client group {} were {} at {from}{}",
                self.node,
                self.peers.join(","),
                link_change(&self.fault),
                until("restored at")
            ),
            State::Packets => format!("{} lost packets from {from}{}", self.node, until("until")),
            State::Failover => format!(
                "the Sentinels were asked to fail over {} at {from}",
                self.node
            ),
            State::ClientPaused => {
                format!("{} was frozen at {from}{}", self.node, until("thawed at"))
            }
            State::ClientCrashed => format!("{} crashed at {from}", self.node),
            State::Master => format!(
                "{} became master at {from}{}",
                self.node,
                self.promoted_by
                    .as_ref()
                    .map_or(String::new(), |by| format!(" (promoted by {by})"))
            ),
        }
    }
}

impl Spell {
    /// A spell of `node` beginning with `op`, with nothing more known of it.
    fn at(op: &Op, node: &str, state: State, fault: &str) -> Spell {
        Spell {
            node: node.to_string(),
            state,
            fault: fault.to_string(),
            start_ms: ms(op.time),
            began_ms: None,
            stop_ms: None,
            ended_ms: None,
            start_index: op.index,
            stop_index: None,
            peers: Vec::new(),
            offset_ms: None,
            holder: None,
            promoted_by: None,
        }
    }
}

/// Every spell of a history, in order of start.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub spells: Vec<Spell>,
}

impl Timeline {
    /// The spells of a history's nemesis ops (others are passed over).
    pub fn of<'a>(nemesis: impl IntoIterator<Item = &'a Op>) -> Timeline {
        let mut spells: Vec<Spell> = Vec::new();
        for op in nemesis.into_iter().filter(|op| op.process.is_nemesis()) {
            let fault = op.fault.clone().unwrap_or_else(|| op.f.clone());
            match op.f.as_str() {
                "master" => {
                    let masters = op.node.clone().unwrap_or_default();
                    for spell in spells.iter_mut().filter(|s| {
                        s.state == State::Master
                            && s.stop_ms.is_none()
                            && !masters.contains(&s.node)
                    }) {
                        spell.stop_ms = Some(ms(op.time));
                        spell.stop_index = Some(op.index);
                    }
                    let already: Vec<String> = spells
                        .iter()
                        .filter(|s| s.state == State::Master && s.stop_ms.is_none())
                        .map(|s| s.node.clone())
                        .collect();
                    let by = op.measured.as_ref().and_then(|m| m["by"].as_str());
                    for node in masters.iter().filter(|n| !already.contains(n)) {
                        spells.push(Spell {
                            promoted_by: by.map(str::to_string),
                            ..Spell::at(op, node, State::Master, "master")
                        });
                    }
                }
                "start" => spells.extend(started(op, &fault)),
                "stop" => {
                    // A stop ends every spell of the last start of its fault still on.
                    let open = spells.iter().rposition(|s| {
                        s.fault == fault && s.state != State::Master && s.stop_ms.is_none()
                    });
                    if let Some(last) = open {
                        let index = spells[last].start_index;
                        let ended_ms = op.measured.as_ref().and_then(|m| m["ended_ms"].as_f64());
                        for spell in spells.iter_mut().filter(|s| s.start_index == index) {
                            let stop_ms = ms(op.time).max(spell.start_ms);
                            spell.stop_ms = Some(stop_ms);
                            spell.ended_ms = ended_ms.map(|e| e.clamp(spell.start_ms, stop_ms));
                            spell.stop_index = Some(op.index);
                        }
                    }
                }
                _ => {}
            }
        }
        spells.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms).then(a.node.cmp(&b.node)));
        Timeline { spells }
    }

    /// The spells of `node` in one of `states` on at some time in `[from_ms, to_ms]`.
    pub(crate) fn on<'a>(
        &'a self,
        node: &'a str,
        states: &'a [State],
        from_ms: f64,
        to_ms: f64,
    ) -> impl Iterator<Item = &'a Spell> + 'a {
        self.spells.iter().filter(move |s| {
            s.node == node && states.contains(&s.state) && s.touches(from_ms, to_ms)
        })
    }

    /// Every node or client a spell names, sorted: the lanes of a timeline.
    pub fn lanes(&self) -> Vec<String> {
        let names: BTreeSet<&str> = self.spells.iter().map(|s| s.node.as_str()).collect();
        let mut lanes: Vec<String> = names.into_iter().map(str::to_string).collect();
        // Nodes before clients, n2 before n10.
        lanes.sort_by_key(|name| {
            let digits = name.trim_start_matches(|c: char| !c.is_ascii_digit());
            (
                name.starts_with("client"),
                name.len() - digits.len(),
                digits.parse::<u64>().unwrap_or(u64::MAX),
                name.clone(),
            )
        });
        lanes
    }
}

/// The spells a fault's start makes, one per thing it hit.
fn started(op: &Op, fault: &str) -> Vec<Spell> {
    let Some(state) = State::of_fault(fault) else {
        return Vec::new();
    };
    let measured = op.measured.as_ref().unwrap_or(&serde_json::Value::Null);
    if !measured["refused"].is_null() {
        return Vec::new();
    }
    let value = op.value.as_ref().unwrap_or(&serde_json::Value::Null);
    let spell = |node: &str| Spell {
        began_ms: measured["began_ms"].as_f64(),
        holder: measured["holder"].as_u64(),
        ..Spell::at(op, node, state, fault)
    };
    let targets = op.node.clone().unwrap_or_default();
    match state {
        State::CutOff => {
            let grudge = measured
                .get("grudge")
                .filter(|g| g.is_object())
                .or_else(|| value.get("grudge"))
                .and_then(|g| g.as_object());
            let Some(grudge) = grudge else {
                return targets.iter().map(|node| spell(node)).collect();
            };
            let drops = |node: &str| -> Vec<String> {
                grudge
                    .get(node)
                    .and_then(|d| d.as_array())
                    .map_or(Vec::new(), |d| {
                        d.iter()
                            .filter_map(|n| n.as_str().map(str::to_string))
                            .collect()
                    })
            };
            let mut nodes: BTreeSet<String> = grudge.keys().cloned().collect();
            nodes.extend(targets);
            nodes
                .iter()
                .filter_map(|node| {
                    let mut peers: BTreeSet<String> = drops(node).into_iter().collect();
                    peers.extend(
                        grudge
                            .keys()
                            .filter(|other| drops(other).iter().any(|n| n == node))
                            .cloned(),
                    );
                    (!peers.is_empty()).then(|| Spell {
                        peers: peers.into_iter().collect(),
                        ..spell(node)
                    })
                })
                .collect()
        }
        State::Links => {
            // Link targets are `g0->n3`: client group g0's link to node n3.
            let mut by_node: Vec<(String, Vec<String>)> = Vec::new();
            for link in &targets {
                let (group, node) = link.split_once("->").unwrap_or(("", link.as_str()));
                match by_node.iter_mut().find(|(n, _)| n == node) {
                    Some((_, groups)) => groups.push(group.to_string()),
                    None => by_node.push((node.to_string(), vec![group.to_string()])),
                }
            }
            by_node
                .into_iter()
                .map(|(node, groups)| Spell {
                    peers: groups,
                    ..spell(&node)
                })
                .collect()
        }
        State::Clock => targets
            .iter()
            .map(|node| Spell {
                offset_ms: measured["skew_ms"][node.as_str()]
                    .as_f64()
                    .or_else(|| value["offset_ms"].as_f64()),
                ..spell(node)
            })
            .collect(),
        State::Failover => measured["master"]
            .as_str()
            .map(|master| vec![spell(master)])
            .unwrap_or_default(),
        _ => targets.iter().map(|node| spell(node)).collect(),
    }
}

/// What a link fault did to the links, by its name: a reset is not a cut, and an explanation
/// that says which one lets its reader tell a lost request from a slow one.
impl Spell {
    /// What a link fault did to the links, as its phrase says it (`reset`, `cut`, `slowed`).
    pub(crate) fn phrase_verb(&self) -> &'static str {
        link_change(&self.fault)
    }
}

fn link_change(fault: &str) -> &'static str {
    match fault {
        "link-reset" => "reset",
        "link-latency" => "slowed",
        "link-blackhole" => "made silent",
        "link-bandwidth" => "throttled",
        "link-slow-close" => "made slow to close",
        _ => "cut",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OpType, Process};
    use serde_json::json;

    fn nemesis(index: u64, ms: u64, f: &str, fault: &str, nodes: &[&str]) -> Op {
        let mut op = Op::new(Process::NEMESIS, OpType::Info, f)
            .nodes(nodes.iter().map(|n| n.to_string()).collect())
            .at(index, ms * 1_000_000);
        op.fault = Some(fault.to_string());
        op
    }

    #[test]
    fn a_kill_and_its_stop_make_one_down_spell_per_node() {
        let ops = [
            nemesis(1, 1_000, "start", "kill", &["n1", "n3"]),
            nemesis(2, 1_500, "stop", "kill", &["n1", "n3"]),
        ];
        let timeline = Timeline::of(&ops);
        assert_eq!(timeline.spells.len(), 2);
        let n3 = &timeline.spells[1];
        assert_eq!((n3.node.as_str(), n3.state), ("n3", State::Down));
        assert_eq!((n3.start_ms, n3.stop_ms), (1_000.0, Some(1_500.0)));
        assert_eq!(n3.phrase(), "n3 was killed at 1.000s, back at 1.500s");
    }

    #[test]
    fn a_partition_cuts_each_node_off_from_the_peers_of_its_grudge() {
        let mut start = nemesis(1, 3_000, "start", "partition-halves", &["n1", "n2", "n3"]);
        start.value = Some(json!({"grudge": {"n1": ["n3"], "n2": ["n3"], "n3": ["n1", "n2"]}}));
        let timeline = Timeline::of(&[start]);
        let peers: Vec<(&str, Vec<String>)> = timeline
            .spells
            .iter()
            .map(|s| (s.node.as_str(), s.peers.clone()))
            .collect();
        assert_eq!(
            peers,
            vec![
                ("n1", vec!["n3".to_string()]),
                ("n2", vec!["n3".to_string()]),
                ("n3", vec!["n1".to_string(), "n2".to_string()]),
            ]
        );
        assert_eq!(timeline.spells[0].stop_ms, None);
    }

    #[test]
    fn master_ops_make_a_master_spell_per_node_until_it_is_master_no_more() {
        let master = |index, ms: u64, nodes: &[&str], by: Option<&str>| {
            let mut op = Op::new(Process::NEMESIS, OpType::Info, "master")
                .nodes(nodes.iter().map(|n| n.to_string()).collect())
                .at(index, ms * 1_000_000);
            op.measured = by.map(|by| json!({"from": ["n1"], "by": by}));
            op
        };
        let ops = [
            master(0, 0, &["n1"], None),
            master(1, 5_000, &["n1", "n2"], Some("sentinel")),
            master(2, 8_000, &["n2"], Some("sentinel")),
        ];
        let timeline = Timeline::of(&ops);
        let spans: Vec<(&str, f64, Option<f64>)> = timeline
            .spells
            .iter()
            .map(|s| (s.node.as_str(), s.start_ms, s.stop_ms))
            .collect();
        assert_eq!(
            spans,
            vec![("n1", 0.0, Some(8_000.0)), ("n2", 5_000.0, None)]
        );
        assert_eq!(
            timeline.spells[1].phrase(),
            "n2 became master at 5.000s (promoted by sentinel)"
        );
    }

    #[test]
    fn a_fault_may_have_taken_effect_from_when_the_nemesis_began_it() {
        let mut start = nemesis(1, 3_000, "start", "clock-bump", &["n2"]);
        start.measured = Some(json!({"skew_ms": {"n2": 3000.0}, "began_ms": 2_800.0}));
        let spell = &Timeline::of(&[start]).spells[0];
        assert_eq!(spell.earliest_ms(), 2_800.0);
        assert!(spell.touches(2_700.0, 2_900.0));
        assert!(!spell.touches(2_000.0, 2_700.0));
    }

    #[test]
    fn a_refused_start_hit_nothing() {
        let mut start = nemesis(1, 3_000, "start", "client-pause", &[]);
        start.measured = Some(json!({"refused": "no client took a lock in time"}));
        assert!(Timeline::of(&[start]).spells.is_empty());
    }

    #[test]
    fn clock_offsets_are_the_measured_ones_where_measured() {
        let mut start = nemesis(1, 3_000, "start", "clock-holder", &["n2", "n4"]);
        start.value = Some(json!({"offset_ms": 3000}));
        start.measured = Some(json!({"skew_ms": {"n2": 2990.5}, "holder": 4}));
        let timeline = Timeline::of(&[start]);
        let offsets: Vec<Option<f64>> = timeline.spells.iter().map(|s| s.offset_ms).collect();
        assert_eq!(offsets, vec![Some(2990.5), Some(3000.0)]);
        assert_eq!(timeline.spells[0].holder, Some(4));
    }

    #[test]
    fn links_are_grouped_by_node_and_lanes_put_nodes_first_in_number_order() {
        let ops = [
            nemesis(
                1,
                10,
                "start",
                "link-drop",
                &["g0->n10", "g1->n10", "g0->n2"],
            ),
            nemesis(2, 20, "start", "client-pause", &["client-1"]),
        ];
        let timeline = Timeline::of(&ops);
        let n10 = timeline.spells.iter().find(|s| s.node == "n10").unwrap();
        assert_eq!(n10.peers, vec!["g0", "g1"]);
        assert_eq!(timeline.lanes(), vec!["n2", "n10", "client-1"]);
    }
}
