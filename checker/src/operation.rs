//! Client operations: each invoke paired with its completion, for the checkers that look at
//! whole operations rather than single ops.

use std::collections::HashMap;

use crate::{Op, OpType, Process};

/// A client's invoke and, if the history has it, its completion.
#[derive(Debug, Clone, Copy)]
pub struct Operation<'a> {
    pub invoke: &'a Op,
    /// `None` when the process never completed the op: the history ended first, or the
    /// process invoked again without completing it. Its outcome is unknown, like `info`.
    pub completion: Option<&'a Op>,
}

impl<'a> Operation<'a> {
    /// `ok`, `fail` or `info`; `None` if never completed.
    pub fn outcome(&self) -> Option<OpType> {
        self.completion.map(|op| op.kind)
    }

    pub fn is_ok(&self) -> bool {
        self.outcome() == Some(OpType::Ok)
    }

    /// Whether the op may or may not have taken effect: `info`, or never completed.
    pub fn is_unknown(&self) -> bool {
        matches!(self.outcome(), None | Some(OpType::Info))
    }

    /// The key the invoke named; clients repeat it on the completion, which is the fallback.
    pub fn key(&self) -> &'a str {
        self.invoke
            .key
            .as_deref()
            .or_else(|| self.completion.and_then(|op| op.key.as_deref()))
            .unwrap_or_default()
    }

    /// The fencing token the operation carried: a grant's comes with its completion, a
    /// storage access's with its invoke, and either may be repeated on the other.
    pub fn fence(&self) -> Option<u64> {
        self.completion
            .and_then(|op| op.fence)
            .or(self.invoke.fence)
    }
}

/// Pairs every client invoke with the next op of its process, in order of invoke.
///
/// Nemesis ops and completions with no invoke before them are left out.
pub fn operations(history: &[Op]) -> Vec<Operation<'_>> {
    // Each invoke takes its place when it is read, and its completion fills it in: the
    // operations come out in the order of their invokes without sorting.
    let mut pending: HashMap<Process, usize> = HashMap::new();
    let mut paired = Vec::with_capacity(history.len() / 2 + 1);
    for op in history.iter().filter(|op| !op.process.is_nemesis()) {
        if op.kind == OpType::Invoke {
            // An earlier invoke still pending was abandoned: it stays, never completed.
            pending.insert(op.process, paired.len());
            paired.push(Operation {
                invoke: op,
                completion: None,
            });
        } else if let Some(at) = pending.remove(&op.process) {
            paired[at].completion = Some(op);
        }
    }
    // A history read from elsewhere may not list its ops in index order; every checker's
    // output is in invoke order all the same.
    if !paired.is_sorted_by_key(|operation| operation.invoke.index) {
        paired.sort_by_key(|operation| operation.invoke.index);
    }
    paired
}

/// Nanoseconds as milliseconds, to the microsecond.
pub(crate) fn ms(ns: u64) -> f64 {
    (ns as f64 / 1_000.0).round() / 1_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(index: u64, process: u64, kind: OpType) -> Op {
        Op::new(Process::Client(process), kind, "acquire")
            .key("lock")
            .at(index, index * 1_000)
    }

    #[test]
    fn pairs_each_invoke_with_its_processs_next_op() {
        let history = vec![
            op(0, 1, OpType::Invoke),
            op(1, 2, OpType::Invoke),
            Op::new(Process::NEMESIS, OpType::Info, "start").at(2, 2_000),
            op(3, 2, OpType::Ok),
            op(4, 1, OpType::Fail),
            op(5, 3, OpType::Ok),
        ];
        let paired = operations(&history);
        let summary: Vec<_> = paired
            .iter()
            .map(|o| (o.invoke.index, o.completion.map(|c| c.index)))
            .collect();
        assert_eq!(summary, [(0, Some(4)), (1, Some(3))]);
    }

    #[test]
    fn an_invoke_never_completed_is_unknown() {
        let history = vec![
            op(0, 1, OpType::Invoke),
            op(1, 1, OpType::Invoke),
            op(2, 1, OpType::Ok),
            op(3, 2, OpType::Invoke),
        ];
        let paired = operations(&history);
        assert_eq!(paired.len(), 3);
        assert!(paired[0].is_unknown() && paired[0].completion.is_none());
        assert!(paired[1].is_ok());
        assert!(paired[2].is_unknown());
    }
}
