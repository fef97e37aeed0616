//! What a report draws besides the checkers' findings, derived once from the history: client
//! operations (each invoke with its completion) and who was master when.

use splitbrain_checker::{Op, OpType, Process};

pub use splitbrain_checker::operation::{operations, Operation};

/// How an operation ended; `Unknown` is `info` or no completion at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    Ok,
    Fail,
    Unknown,
}

impl Outcome {
    pub const ALL: [Outcome; 3] = [Outcome::Ok, Outcome::Fail, Outcome::Unknown];

    /// The name the page's CSS classes use: `ok`, `fail`, `info`.
    pub fn class(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Fail => "fail",
            Outcome::Unknown => "info",
        }
    }
}

/// What a report needs to know of an operation to draw it.
pub trait Drawn<'a> {
    fn process(&self) -> u64;
    fn ending(&self) -> Outcome;
    /// Invoke to completion, in nanoseconds; `None` if it never completed.
    fn latency_ns(&self) -> Option<u64>;
    /// When it ended, or its invoke if it never did.
    fn end_ns(&self) -> u64;
    /// The error its completion gave, if any.
    fn error(&self) -> Option<&'a str>;
    /// Whether a lock hold bar already shows it: a granted acquire, a release or a renewal
    /// that returned `ok`.
    fn shown_by_hold(&self) -> bool;
}

impl<'a> Drawn<'a> for Operation<'a> {
    fn process(&self) -> u64 {
        match self.invoke.process {
            Process::Client(p) => p,
            Process::Nemesis(_) => unreachable!("operations are client operations"),
        }
    }

    fn ending(&self) -> Outcome {
        match self.completion.map(|op| op.kind) {
            Some(OpType::Ok) => Outcome::Ok,
            Some(OpType::Fail) => Outcome::Fail,
            _ => Outcome::Unknown,
        }
    }

    fn latency_ns(&self) -> Option<u64> {
        self.completion
            .map(|op| op.time.saturating_sub(self.invoke.time))
    }

    fn end_ns(&self) -> u64 {
        self.completion.map_or(self.invoke.time, |op| op.time)
    }

    fn error(&self) -> Option<&'a str> {
        self.completion.and_then(|op| op.error.as_deref())
    }

    fn shown_by_hold(&self) -> bool {
        self.ending() == Outcome::Ok
            && matches!(self.invoke.f.as_str(), "acquire" | "release" | "renew")
    }
}

/// Who the harness saw as master, from one nemesis `master` op to the next (or the end).
#[derive(Debug, Clone, PartialEq)]
pub struct MasterPeriod {
    pub start_ns: u64,
    pub end_ns: u64,
    /// More than one is a split brain: two nodes taking writes as master.
    pub nodes: Vec<String>,
}

/// The `master` ops of a history as periods.
pub fn master_periods(history: &[Op], end_ns: u64) -> Vec<MasterPeriod> {
    let changes: Vec<&Op> = history
        .iter()
        .filter(|op| op.process.is_nemesis() && op.f == "master")
        .collect();
    changes
        .iter()
        .enumerate()
        .map(|(i, op)| MasterPeriod {
            start_ns: op.time,
            end_ns: changes.get(i + 1).map_or(end_ns, |next| next.time),
            nodes: op.node.clone().unwrap_or_default(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(index: u64, process: u64, kind: OpType, f: &str) -> Op {
        Op::new(Process::Client(process), kind, f).at(index, index * 1_000)
    }

    #[test]
    fn pairs_invokes_with_completions_and_keeps_the_unfinished() {
        let history = vec![
            op(0, 1, OpType::Invoke, "acquire"),
            op(1, 2, OpType::Invoke, "add"),
            op(2, 1, OpType::Ok, "acquire"),
            op(3, 2, OpType::Info, "add"),
            op(4, 7, OpType::Invoke, "read"),
        ];
        let paired = operations(&history);
        let summary: Vec<_> = paired
            .iter()
            .map(|o| (o.process(), o.ending(), o.latency_ns()))
            .collect();
        assert_eq!(
            summary,
            [
                (1, Outcome::Ok, Some(2_000)),
                (2, Outcome::Unknown, Some(2_000)),
                (7, Outcome::Unknown, None),
            ]
        );
        assert!(paired[0].shown_by_hold());
        assert!(!paired[1].shown_by_hold());
    }

    #[test]
    fn a_master_lasts_until_the_next_master_op() {
        let master = |t: u64, nodes: &[&str]| {
            Op::new(Process::NEMESIS, OpType::Info, "master")
                .nodes(nodes.iter().map(|n| n.to_string()).collect())
                .at(0, t)
        };
        let history = vec![master(10, &["n1"]), master(50, &["n1", "n3"])];
        let periods = master_periods(&history, 90);
        assert_eq!(periods.len(), 2);
        assert_eq!((periods[0].start_ns, periods[0].end_ns), (10, 50));
        assert_eq!((periods[1].end_ns, periods[1].nodes.len()), (90, 2));
    }
}
