//! knossos's `register` and `cas-register`: one value, nil at first.
//!
//! - `write` (value: the value) sets it;
//! - `read` (value: what was read) returns it; a read of nil passes anywhere;
//! - `cas` (value: `[expected, new]`), in `cas-register` only, sets it to `new` if it holds
//!   `expected`, and is refused otherwise (a cas that found another value returns `fail`).

use serde_json::Value;

use crate::linearizability::{Call, Model, Values};

/// A register, with compare-and-set or without.
pub struct Register {
    cas: bool,
}

impl Register {
    pub const PLAIN: Register = Register { cas: false };
    pub const CAS: Register = Register { cas: true };
}

/// A register operation, values interned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RegisterOp {
    Read(u32),
    Write(u32),
    Cas { expected: u32, new: u32 },
}

impl Model for Register {
    /// The id of the value held.
    type State = u32;
    type Op = RegisterOp;

    fn fs(&self) -> &'static [&'static str] {
        if self.cas {
            &["read", "write", "cas"]
        } else {
            &["read", "write"]
        }
    }

    fn prepare(&self, call: &Call<'_>, values: &mut Values) -> Result<Option<RegisterOp>, String> {
        Ok(match (call.f, call.value) {
            ("read", None) => None,
            ("read", Some(value)) => Some(RegisterOp::Read(values.intern(value))),
            ("write", value) => Some(RegisterOp::Write(values.intern_option(value))),
            (_, Some(Value::Array(pair))) if pair.len() == 2 => Some(RegisterOp::Cas {
                expected: values.intern(&pair[0]),
                new: values.intern(&pair[1]),
            }),
            (_, value) => {
                return Err(format!(
                    "a cas's value must be [expected, new], not {}",
                    value.unwrap_or(&Value::Null)
                ))
            }
        })
    }

    fn init(&self) -> u32 {
        Values::NIL
    }

    fn step(&self, state: &u32, op: &RegisterOp) -> Option<u32> {
        match *op {
            RegisterOp::Read(value) => (value == *state).then_some(*state),
            RegisterOp::Write(value) => Some(value),
            RegisterOp::Cas { expected, new } => (expected == *state).then_some(new),
        }
    }

    fn is_read(&self, op: &RegisterOp) -> bool {
        matches!(op, RegisterOp::Read(_))
    }

    fn describe_state(&self, state: &u32, values: &Values) -> Value {
        values.get(*state).clone()
    }

    fn refusal(&self, state: &u32, op: &RegisterOp, values: &Values) -> String {
        let held = values.get(*state);
        match *op {
            RegisterOp::Read(value) => {
                format!("read {}, but the register holds {held}", values.get(value))
            }
            RegisterOp::Cas { expected, .. } => {
                format!(
                    "cas expects {}, but the register holds {held}",
                    values.get(expected)
                )
            }
            RegisterOp::Write(_) => unreachable!("a write is never refused"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prepare(
        model: &Register,
        f: &str,
        value: Option<Value>,
        values: &mut Values,
    ) -> Option<RegisterOp> {
        let call = Call {
            f,
            value: value.as_ref(),
            process: 1,
        };
        model.prepare(&call, values).unwrap()
    }

    #[test]
    fn reads_see_the_last_write_and_nil_reads_pass() {
        let model = &Register::PLAIN;
        let mut values = Values::default();
        let write = prepare(model, "write", Some(json!("a")), &mut values).unwrap();
        let read_a = prepare(model, "read", Some(json!("a")), &mut values).unwrap();
        let read_b = prepare(model, "read", Some(json!("b")), &mut values).unwrap();
        assert_eq!(prepare(model, "read", None, &mut values), None);
        let state = model.step(&model.init(), &write).unwrap();
        assert_eq!(model.step(&state, &read_a), Some(state));
        assert_eq!(model.step(&state, &read_b), None);
        assert_eq!(
            model.refusal(&state, &read_b, &values),
            "read \"b\", but the register holds \"a\""
        );
        assert_eq!(model.describe_state(&model.init(), &values), Value::Null);
    }

    #[test]
    fn cas_sets_only_from_the_expected_value() {
        let model = &Register::CAS;
        let mut values = Values::default();
        let cas = prepare(model, "cas", Some(json!([1, 2])), &mut values).unwrap();
        let write = prepare(model, "write", Some(json!(1)), &mut values).unwrap();
        assert_eq!(model.step(&model.init(), &cas), None);
        assert_eq!(
            model.refusal(&model.init(), &cas, &values),
            "cas expects 1, but the register holds null"
        );
        let one = model.step(&model.init(), &write).unwrap();
        let two = model.step(&one, &cas).unwrap();
        assert_eq!(model.describe_state(&two, &values), json!(2));
        let bad = Call {
            f: "cas",
            value: Some(&json!(3)),
            process: 1,
        };
        assert_eq!(
            model.prepare(&bad, &mut values).unwrap_err(),
            "a cas's value must be [expected, new], not 3"
        );
        assert_eq!(Register::PLAIN.fs(), ["read", "write"]);
    }
}
