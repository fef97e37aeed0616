//! A check of the harness's own measurements, not of the system: nothing a fault prevents may
//! appear inside the window the explanations and the report show for it. A frozen client makes
//! no operation, and a killed or paused node grants nothing, from when the fault surely acted
//! (its start, recorded once it took effect) until when it surely still did (its stop's
//! `measured.ended_ms`). The Docker tests check every run they record with it.

use crate::operation::{ms, operations};
use crate::timeline::{State, Timeline};
use crate::words::seconds;
use crate::{Op, OpType, Process};

/// Each thing `history` shows happening inside the window shown for a fault that prevents it,
/// as a sentence; `workers` is the run's number of client workers (process `p` runs on worker
/// `p % workers`).
pub fn contradictions(history: &[Op], workers: usize) -> Vec<String> {
    let timeline = Timeline::of(history);
    let grants: Vec<_> = operations(history)
        .into_iter()
        .filter(|operation| operation.invoke.f == "acquire" && operation.is_ok())
        .collect();
    let mut found = Vec::new();
    for spell in &timeline.spells {
        // A fault never stopped was healed with the rest at the end, when nothing is recorded.
        let Some(until) = spell.shown_stop_ms() else {
            continue;
        };
        let inside = |at: f64| at > spell.start_ms && at < until;
        match spell.state {
            State::ClientPaused => found.extend(
                history
                    .iter()
                    .filter(|op| worker_of(op.process, workers).as_deref() == Some(&*spell.node))
                    .filter(|op| inside(ms(op.time)))
                    .map(|op| {
                        format!(
                            "{} {} of process {} at {}, inside: {}",
                            kind(op.kind),
                            op.f,
                            op.process,
                            seconds(ms(op.time)),
                            spell.phrase()
                        )
                    }),
            ),
            State::Down | State::Paused => found.extend(
                grants
                    .iter()
                    .filter(|grant| {
                        let completion = grant.completion.expect("an ok grant is completed");
                        completion
                            .node
                            .as_ref()
                            .or(grant.invoke.node.as_ref())
                            .is_some_and(|nodes| nodes.contains(&spell.node))
                            && inside(ms(grant.invoke.time))
                            && inside(ms(completion.time))
                    })
                    .map(|grant| {
                        format!(
                            "process {} was granted by {} from {} to {}, inside: {}",
                            grant.invoke.process,
                            spell.node,
                            seconds(ms(grant.invoke.time)),
                            seconds(ms(grant.completion.map_or(0, |c| c.time))),
                            spell.phrase()
                        )
                    }),
            ),
            _ => {}
        }
    }
    found
}

fn worker_of(process: Process, workers: usize) -> Option<String> {
    match process {
        Process::Client(p) => Some(format!("client-{}", p % workers.max(1) as u64)),
        Process::Nemesis(_) => None,
    }
}

fn kind(kind: OpType) -> &'static str {
    match kind {
        OpType::Invoke => "invoke of",
        OpType::Ok => "ok of",
        OpType::Fail => "fail of",
        OpType::Info => "info of",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each op at its time in milliseconds, numbered in order.
    fn at(ops: Vec<(u64, Op)>) -> Vec<Op> {
        ops.into_iter()
            .enumerate()
            .map(|(index, (ms, op))| op.at(index as u64, ms * 1_000_000))
            .collect()
    }

    fn client(process: u64, kind: OpType, f: &str) -> Op {
        Op::new(Process::Client(process), kind, f).key("lock")
    }

    fn nemesis(f: &str, fault: &str, target: &str, ended_ms: Option<f64>) -> Op {
        let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(vec![target.into()]);
        op.fault = Some(fault.into());
        op.measured = ended_ms.map(|ended_ms| json!({ "ended_ms": ended_ms }));
        op
    }

    /// Worker 0 is frozen at 1 s and its stop is recorded at 2.5 s; process `writer` invokes
    /// a write at 2.2 s.
    fn paused(ended_ms: Option<f64>, writer: u64) -> Vec<Op> {
        at(vec![
            (1_000, nemesis("start", "client-pause", "client-0", None)),
            (2_200, client(writer, OpType::Invoke, "write")),
            (2_500, nemesis("stop", "client-pause", "client-0", ended_ms)),
        ])
    }

    #[test]
    fn a_frozen_client_acting_before_the_shown_thaw_is_a_contradiction() {
        let found = contradictions(&paused(None, 2), 2);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("invoke of write of process 2 at 2.200s"),
            "{found:?}"
        );
        assert!(found[0].contains("thawed at 2.500s"), "{found:?}");
    }

    #[test]
    fn the_thaw_it_measured_ends_the_window_and_other_workers_go_on() {
        assert_eq!(
            contradictions(&paused(Some(2_000.0), 2), 2),
            Vec::<String>::new()
        );
        assert_eq!(contradictions(&paused(None, 1), 2), Vec::<String>::new());
    }

    #[test]
    fn a_grant_by_a_node_inside_its_kill_is_a_contradiction_and_one_after_the_restart_is_not() {
        let kill = |ended_ms: f64| {
            at(vec![
                (1_000, nemesis("start", "kill", "n1", None)),
                (1_100, client(0, OpType::Invoke, "acquire")),
                (
                    1_150,
                    client(0, OpType::Ok, "acquire").nodes(vec!["n1".into()]),
                ),
                (2_000, nemesis("stop", "kill", "n1", Some(ended_ms))),
            ])
        };
        let found = contradictions(&kill(1_900.0), 1);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("process 0 was granted by n1 from 1.100s to 1.150s"),
            "{found:?}"
        );
        assert_eq!(contradictions(&kill(1_050.0), 1), Vec::<String>::new());
    }
}
