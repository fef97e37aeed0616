//! knossos's `mutex`: a lock without owners. `acquire` takes a free lock, `release` frees a held
//! one, whoever calls it; an acquire of a held lock, or a release of a free one, is refused.
//! Values are ignored.

use serde_json::Value;

use crate::linearizability::{Call, Model, Values};

pub struct Mutex;

/// An acquire (`true`) or a release (`false`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Acquire(bool);

impl Model for Mutex {
    /// Whether the lock is held.
    type State = bool;
    type Op = Acquire;

    fn fs(&self) -> &'static [&'static str] {
        &["acquire", "release"]
    }

    fn prepare(&self, call: &Call<'_>, _: &mut Values) -> Result<Option<Acquire>, String> {
        Ok(Some(Acquire(call.f == "acquire")))
    }

    fn init(&self) -> bool {
        false
    }

    fn step(&self, held: &bool, op: &Acquire) -> Option<bool> {
        (*held != op.0).then_some(op.0)
    }

    fn describe_state(&self, held: &bool, _: &Values) -> Value {
        Value::from(if *held { "held" } else { "free" })
    }

    fn refusal(&self, _: &bool, op: &Acquire, _: &Values) -> String {
        if op.0 {
            "acquire of a held lock".to_string()
        } else {
            "release of a free lock".to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquire_and_release_alternate_whoever_calls() {
        let values = Values::default();
        let op = |f, process| {
            Mutex
                .prepare(
                    &Call {
                        f,
                        value: None,
                        process,
                    },
                    &mut Values::default(),
                )
                .unwrap()
                .unwrap()
        };
        let held = Mutex.step(&Mutex.init(), &op("acquire", 1)).unwrap();
        assert_eq!(Mutex.step(&held, &op("acquire", 2)), None);
        assert_eq!(
            Mutex.refusal(&held, &op("acquire", 2), &values),
            "acquire of a held lock"
        );
        assert_eq!(Mutex.step(&held, &op("release", 2)), Some(false));
        assert_eq!(Mutex.step(&false, &op("release", 1)), None);
        assert_eq!(Mutex.describe_state(&held, &values), "held");
    }
}
