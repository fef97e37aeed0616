//! A lock with an owner: `acquire` takes a free lock for the calling process, and only that
//! process may `release` it. knossos's `mutex` lets anyone release; a lock service that checks
//! tokens (every Redis lock here) promises more, and this model holds it to that. Values are
//! ignored.

use serde_json::Value;

use crate::linearizability::{Call, Model, Values};

pub struct OwnerMutex;

/// An acquire or a release, by a process.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LockOp {
    acquire: bool,
    process: u64,
}

impl Model for OwnerMutex {
    /// The holder, if the lock is held.
    type State = Option<u64>;
    type Op = LockOp;

    fn fs(&self) -> &'static [&'static str] {
        &["acquire", "release"]
    }

    fn prepare(&self, call: &Call<'_>, _: &mut Values) -> Result<Option<LockOp>, String> {
        Ok(Some(LockOp {
            acquire: call.f == "acquire",
            process: call.process,
        }))
    }

    fn init(&self) -> Option<u64> {
        None
    }

    fn step(&self, holder: &Option<u64>, op: &LockOp) -> Option<Option<u64>> {
        match (op.acquire, *holder) {
            (true, None) => Some(Some(op.process)),
            (false, Some(holder)) if holder == op.process => Some(None),
            _ => None,
        }
    }

    fn describe_state(&self, holder: &Option<u64>, _: &Values) -> Value {
        Value::from(match holder {
            Some(holder) => format!("held by process {holder}"),
            None => "free".to_string(),
        })
    }

    fn refusal(&self, holder: &Option<u64>, op: &LockOp, _: &Values) -> String {
        let process = op.process;
        match (op.acquire, holder) {
            (true, Some(holder)) => {
                format!("process {process} acquires a lock process {holder} holds")
            }
            (false, Some(holder)) => {
                format!("process {process} releases a lock process {holder} holds")
            }
            (_, None) => format!("process {process} releases a free lock"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(f: &str, process: u64) -> LockOp {
        let call = Call {
            f,
            value: None,
            process,
        };
        OwnerMutex
            .prepare(&call, &mut Values::default())
            .unwrap()
            .unwrap()
    }

    #[test]
    fn only_the_holder_releases() {
        let values = Values::default();
        let held = OwnerMutex.step(&None, &op("acquire", 1)).unwrap();
        assert_eq!(held, Some(1));
        assert_eq!(OwnerMutex.step(&held, &op("release", 2)), None);
        assert_eq!(
            OwnerMutex.refusal(&held, &op("release", 2), &values),
            "process 2 releases a lock process 1 holds"
        );
        assert_eq!(OwnerMutex.step(&held, &op("acquire", 2)), None);
        assert_eq!(
            OwnerMutex.refusal(&held, &op("acquire", 2), &values),
            "process 2 acquires a lock process 1 holds"
        );
        assert_eq!(OwnerMutex.step(&held, &op("release", 1)), Some(None));
        assert_eq!(
            OwnerMutex.refusal(&None, &op("release", 1), &values),
            "process 1 releases a free lock"
        );
        assert_eq!(
            OwnerMutex.describe_state(&held, &values),
            "held by process 1"
        );
    }
}
