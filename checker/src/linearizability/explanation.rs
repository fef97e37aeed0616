//! Why a key's history is not linearizable, as plain data for `results.json` and the report:
//! the longest linearizable prefix the search found, and the operations that could have come
//! next there, each with the model's reason for refusing it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::calls::CallRecord;
use crate::{OpType, Process};

/// How many operations of a prefix, and how many refused ones, an explanation lists.
pub const EXPLAINED_OPS: usize = 100;

/// The search's best attempt at a linearization of one key, and where it got stuck.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    /// Operations in the longest linearizable prefix found.
    pub linearized_count: usize,
    /// The model state before the first operation of `linearized`.
    pub state_before: Value,
    /// The last [`EXPLAINED_OPS`] operations of that prefix in linearization order, each with
    /// the model state after it.
    pub linearized: Vec<LinearizedOp>,
    /// Operations that could have been linearized next, after the prefix: every operation
    /// invoked before the first `ok` operation not yet linearized returned.
    pub refused_count: usize,
    /// The first [`EXPLAINED_OPS`] of them, each with why the model refused it.
    pub refused: Vec<RefusedOp>,
}

/// One operation of a linearizable prefix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearizedOp {
    pub op: OpSummary,
    pub state_after: Value,
}

/// An operation that could not be linearized at the end of the prefix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusedOp {
    pub op: OpSummary,
    /// The model state it was tried from.
    pub state: Value,
    pub reason: String,
}

/// An operation as explanations show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpSummary {
    /// `index` of the invoke.
    pub index: u64,
    /// `index` of the completion; absent for an operation never completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_index: Option<u64>,
    pub process: Process,
    pub f: String,
    /// The value the model saw (the completion's, else the invoke's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// `ok`, or `info` for an operation of unknown outcome (never completed included).
    pub outcome: OpType,
    pub invoke_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete_ns: Option<u64>,
}

impl OpSummary {
    pub(crate) fn of(call: &CallRecord<'_>) -> OpSummary {
        OpSummary {
            index: call.invoke.index,
            completion_index: call.completion.map(|op| op.index),
            process: call.invoke.process,
            f: call.invoke.f.clone(),
            value: call.value().cloned(),
            outcome: if call.is_unknown() {
                OpType::Info
            } else {
                OpType::Ok
            },
            invoke_ns: call.invoke.time,
            complete_ns: call.completion.map(|op| op.time),
        }
    }
}
