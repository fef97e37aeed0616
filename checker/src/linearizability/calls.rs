//! From a history to the calls each key's search works on: invokes paired with their
//! completions (rule 1 of the checker), `fail`s and nemesis ops left out (rule 2), operations
//! the model does not know counted apart (rule 4), and the rest split by key (rule 7).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use super::model::Call;
use super::CheckError;
use crate::{Op, OpType, Process};

/// One client operation: its invoke, and its completion if the history has one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallRecord<'h> {
    pub invoke: &'h Op,
    pub completion: Option<&'h Op>,
    /// Where the invoke is in the history.
    pub invoke_position: usize,
    /// Where an `ok` completion is in the history; `None` for an `info` operation or one never
    /// completed, whose return is at infinity.
    pub return_position: Option<usize>,
}

impl<'h> CallRecord<'h> {
    /// Whether the operation may or may not have taken effect (`info`, or never completed).
    pub fn is_unknown(&self) -> bool {
        self.return_position.is_none()
    }

    /// An `ok` completion's value if it carries one (a read's result), else the invoke's. An
    /// `info` completion reports no result, whatever value it carries (Jepsen's clients write
    /// `:timed-out`, say), so an unknown operation keeps its invoke's value, as knossos's
    /// `history/complete` does.
    pub fn value(&self) -> Option<&'h Value> {
        let given = |op: &'h Op| op.value.as_ref().filter(|v| !v.is_null());
        self.completion
            .filter(|op| op.kind == OpType::Ok)
            .and_then(given)
            .or_else(|| given(self.invoke))
    }

    /// What the model sees of the operation.
    pub fn model_call(&self) -> Call<'h> {
        Call {
            f: &self.invoke.f,
            value: self.value(),
            process: match self.invoke.process {
                Process::Client(p) => p,
                Process::Nemesis(_) => unreachable!("nemesis ops are left out before pairing"),
            },
        }
    }

    fn key(&self) -> Option<&'h str> {
        self.invoke
            .key
            .as_deref()
            .or_else(|| self.completion.and_then(|op| op.key.as_deref()))
    }
}

/// One key's calls, in history order of invoke.
#[derive(Debug)]
pub(crate) struct PartCalls<'h> {
    /// `None` for the operations that name no key.
    pub key: Option<&'h str>,
    pub calls: Vec<CallRecord<'h>>,
}

/// A history's calls, split by key.
#[derive(Debug)]
pub(crate) struct Split<'h> {
    /// Sorted by key, no key first.
    pub parts: Vec<PartCalls<'h>>,
    /// Operations (other than `fail`s) whose `f` the model does not know.
    pub ignored: usize,
    pub ignored_fs: BTreeSet<&'h str>,
}

/// Pairs the client operations of `history` and splits those of the model's `fs` by key.
/// A `renew` is a lock library's own (its watchdog thread's), made beside whatever its
/// process is doing: it pairs with the process's next `renew`, apart from its other ops. A
/// renewal still out when the next begins was never answered (the hold it renewed ended, and
/// its thread with it): it never completed.
pub(crate) fn split<'h>(history: &'h [Op], fs: &[&str]) -> Result<Split<'h>, CheckError> {
    let mut pending: HashMap<(u64, bool), usize> = HashMap::new();
    let mut records = Vec::with_capacity(history.len() / 2 + 1);
    let unanswered = |invoke_position| CallRecord {
        invoke: &history[invoke_position],
        completion: None,
        invoke_position,
        return_position: None,
    };
    for (position, op) in history.iter().enumerate() {
        let Process::Client(process) = op.process else {
            continue;
        };
        let renewal = op.f == "renew";
        let process = (process, renewal);
        if op.kind == OpType::Invoke {
            if let Some(&earlier) = pending.get(&process) {
                if renewal {
                    records.push(unanswered(earlier));
                    pending.insert(process, position);
                    continue;
                }
                return Err(CheckError::InvokeWhilePending {
                    index: op.index,
                    process: op.process,
                    pending_index: history[earlier].index,
                });
            }
            pending.insert(process, position);
            continue;
        }
        let Some(invoke_position) = pending.remove(&process) else {
            return Err(CheckError::CompletionWithoutInvoke {
                index: op.index,
                process: op.process,
            });
        };
        if op.kind != OpType::Fail {
            records.push(CallRecord {
                invoke: &history[invoke_position],
                completion: Some(op),
                invoke_position,
                return_position: (op.kind == OpType::Ok).then_some(position),
            });
        }
    }
    records.extend(pending.into_values().map(unanswered));
    records.sort_unstable_by_key(|record| record.invoke_position);

    let mut ignored = 0;
    let mut ignored_fs = BTreeSet::new();
    let mut by_key: BTreeMap<Option<&str>, Vec<CallRecord>> = BTreeMap::new();
    for record in records {
        let f = record.invoke.f.as_str();
        if fs.contains(&f) {
            by_key.entry(record.key()).or_default().push(record);
        } else {
            ignored += 1;
            ignored_fs.insert(f);
        }
    }
    Ok(Split {
        parts: by_key
            .into_iter()
            .map(|(key, calls)| PartCalls { key, calls })
            .collect(),
        ignored,
        ignored_fs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(index: u64, process: u64, kind: OpType, f: &str) -> Op {
        Op::new(Process::Client(process), kind, f).at(index, index)
    }

    #[test]
    fn pairs_each_invoke_with_the_next_completion_of_its_process() {
        let history = vec![
            op(0, 1, OpType::Invoke, "write").value(1),
            op(1, 2, OpType::Invoke, "read"),
            Op::new(Process::NEMESIS, OpType::Info, "start").at(2, 2),
            op(3, 2, OpType::Ok, "read").value(1),
            op(4, 1, OpType::Info, "write").value("timed-out"),
            op(5, 1, OpType::Invoke, "write").value(2),
            op(6, 3, OpType::Invoke, "write").value(3),
            op(7, 3, OpType::Fail, "write"),
        ];
        let split = split(&history, &["read", "write"]).unwrap();
        let calls = &split.parts[0].calls;
        let summary: Vec<_> = calls
            .iter()
            .map(|c| {
                (
                    c.invoke.index,
                    c.completion.map(|op| op.index),
                    c.return_position,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [(0, Some(4), None), (1, Some(3), Some(3)), (5, None, None)]
        );
        assert_eq!(
            calls[0].value(),
            Some(&serde_json::json!(1)),
            "an info completion's value is no result"
        );
        assert_eq!(calls[1].value(), Some(&serde_json::json!(1)));
    }

    #[test]
    fn a_completion_without_an_invoke_is_an_error() {
        let history = vec![
            op(0, 1, OpType::Invoke, "read"),
            op(1, 2, OpType::Ok, "read"),
        ];
        let error = split(&history, &["read"]).unwrap_err();
        assert_eq!(
            error,
            CheckError::CompletionWithoutInvoke {
                index: 1,
                process: Process::Client(2)
            }
        );
        assert_eq!(
            error.to_string(),
            "op 1: process 2 completes an operation it never invoked"
        );
    }

    #[test]
    fn an_invoke_while_one_is_pending_is_an_error() {
        let history = vec![
            op(0, 1, OpType::Invoke, "read"),
            op(1, 1, OpType::Invoke, "read"),
        ];
        assert_eq!(
            split(&history, &["read"]).unwrap_err(),
            CheckError::InvokeWhilePending {
                index: 1,
                process: Process::Client(1),
                pending_index: 0
            }
        );
    }

    #[test]
    fn unknown_fs_are_counted_and_keys_split() {
        let history = vec![
            op(0, 1, OpType::Invoke, "acquire").key("b"),
            op(1, 1, OpType::Ok, "acquire"),
            op(2, 1, OpType::Invoke, "renew").key("b"),
            op(3, 1, OpType::Ok, "renew"),
            op(4, 2, OpType::Invoke, "acquire").key("a"),
            op(5, 2, OpType::Ok, "acquire"),
            op(6, 3, OpType::Invoke, "acquire"),
        ];
        let split = split(&history, &["acquire", "release"]).unwrap();
        let keys: Vec<_> = split.parts.iter().map(|p| p.key).collect();
        assert_eq!(keys, [None, Some("a"), Some("b")]);
        assert_eq!(split.ignored, 1);
        assert_eq!(split.ignored_fs.into_iter().collect::<Vec<_>>(), ["renew"]);
    }

    /// A library's watchdog renews while its holder releases (python-redis-lock under a
    /// client pause): the renewal is still out when the release is asked.
    #[test]
    fn a_renewal_in_flight_beside_its_holders_ops_pairs_on_its_own() {
        let history = vec![
            op(0, 3, OpType::Invoke, "acquire").key("lock"),
            op(1, 3, OpType::Ok, "acquire"),
            op(2, 3, OpType::Invoke, "renew").key("lock"),
            op(3, 3, OpType::Invoke, "release").key("lock"),
            op(4, 3, OpType::Ok, "release"),
            op(5, 3, OpType::Ok, "renew"),
        ];
        let paired = split(&history, &["acquire", "release"]).unwrap();
        assert_eq!(paired.parts[0].calls.len(), 2, "{:?}", paired.parts);
        assert_eq!(paired.ignored, 1);
        // A renewal never answered, the hold released, and the next hold's renewal.
        let unanswered = [
            op(0, 3, OpType::Invoke, "renew"),
            op(1, 3, OpType::Invoke, "release"),
            op(2, 3, OpType::Ok, "release"),
            op(3, 3, OpType::Invoke, "renew"),
            op(4, 3, OpType::Ok, "renew"),
        ];
        let paired = split(&unanswered, &["release"]).unwrap();
        assert_eq!(
            paired.ignored, 2,
            "both renewals, the first never completed"
        );
    }
}
