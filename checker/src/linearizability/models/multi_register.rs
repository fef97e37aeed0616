//! knossos's `multi-register`: named registers, each nil at first, read and written several at
//! a time.
//!
//! - `read` (value: an object `{register: value}`) reads the registers named, `write` (the
//!   same shape) writes them;
//! - `txn` (value: an array of `[f, register, value]`, `f` being `read` or `write`) does its
//!   reads and writes in order, as knossos's multi-register does.
//!
//! A nil read of one register passes, as knossos's does; an operation with nothing but nil
//! reads passes anywhere.

use serde_json::Value;

use crate::linearizability::{Call, Model, Values};

pub struct MultiRegister;

/// One read or write of one register, names and values interned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Access {
    write: bool,
    register: u32,
    value: u32,
}

/// The non-nil registers, sorted by register id, so that equal states are equal values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Registers(Vec<(u32, u32)>);

impl Registers {
    fn get(&self, register: u32) -> u32 {
        match self.0.binary_search_by_key(&register, |&(r, _)| r) {
            Ok(i) => self.0[i].1,
            Err(_) => Values::NIL,
        }
    }

    fn set(&mut self, register: u32, value: u32) {
        match self.0.binary_search_by_key(&register, |&(r, _)| r) {
            Ok(i) if value == Values::NIL => {
                self.0.remove(i);
            }
            Ok(i) => self.0[i].1 = value,
            Err(_) if value == Values::NIL => {}
            Err(i) => self.0.insert(i, (register, value)),
        }
    }
}

impl Model for MultiRegister {
    type State = Registers;
    type Op = Box<[Access]>;

    fn fs(&self) -> &'static [&'static str] {
        &["read", "write", "txn"]
    }

    fn prepare(&self, call: &Call<'_>, values: &mut Values) -> Result<Option<Self::Op>, String> {
        let mut accesses = Vec::new();
        let mut access = |write: bool, register: &Value, value: &Value| {
            let register = values.intern(register);
            let value = values.intern(value);
            if write || value != Values::NIL {
                accesses.push(Access {
                    write,
                    register,
                    value,
                });
            }
        };
        match (call.f, call.value) {
            (_, None) => {}
            ("txn", Some(Value::Array(txn))) => {
                for micro in txn {
                    match micro.as_array().map(Vec::as_slice) {
                        Some([f, register, value]) if f == "read" || f == "write" => {
                            access(f == "write", register, value)
                        }
                        _ => return Err(format!("a txn's operations must be [f, register, value] with f read or write, not {micro}")),
                    }
                }
            }
            ("txn", Some(other)) => {
                return Err(format!("a txn's value must be an array, not {other}"))
            }
            (f, Some(Value::Object(registers))) => {
                for (register, value) in registers {
                    access(f == "write", &Value::from(register.as_str()), value);
                }
            }
            (f, Some(other)) => {
                return Err(format!(
                    "a {f}'s value must be an object {{register: value}}, not {other}"
                ))
            }
        }
        Ok((!accesses.is_empty()).then(|| accesses.into_boxed_slice()))
    }

    fn init(&self) -> Registers {
        Registers::default()
    }

    fn step(&self, state: &Registers, op: &Self::Op) -> Option<Registers> {
        let mut next = state.clone();
        for access in op.iter() {
            if access.write {
                next.set(access.register, access.value);
            } else if next.get(access.register) != access.value {
                return None;
            }
        }
        Some(next)
    }

    fn is_read(&self, op: &Self::Op) -> bool {
        op.iter().all(|access| !access.write)
    }

    fn describe_state(&self, state: &Registers, values: &Values) -> Value {
        let registers = state.0.iter().map(|&(register, value)| {
            let name = match values.get(register) {
                Value::String(name) => name.clone(),
                other => other.to_string(),
            };
            (name, values.get(value).clone())
        });
        Value::Object(registers.collect())
    }

    fn refusal(&self, state: &Registers, op: &Self::Op, values: &Values) -> String {
        let mut registers = state.clone();
        for access in op.iter() {
            let held = registers.get(access.register);
            if access.write {
                registers.set(access.register, access.value);
            } else if held != access.value {
                return format!(
                    "read {} of {}, but it holds {}",
                    values.get(access.value),
                    values.get(access.register),
                    values.get(held)
                );
            }
        }
        unreachable!("only a read is refused")
    }

    fn state_heap_bytes(&self, state: &Registers) -> usize {
        state.0.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(f: &str, value: Value, values: &mut Values) -> Result<Option<Box<[Access]>>, String> {
        let call = Call {
            f,
            value: Some(&value),
            process: 1,
        };
        MultiRegister.prepare(&call, values)
    }

    #[test]
    fn reads_see_the_registers_written_and_nil_reads_pass() {
        let mut values = Values::default();
        let write = op("write", json!({"x": 1, "y": 2}), &mut values)
            .unwrap()
            .unwrap();
        let read_x = op("read", json!({"x": 1, "z": null}), &mut values)
            .unwrap()
            .unwrap();
        let read_y = op("read", json!({"y": 3}), &mut values).unwrap().unwrap();
        assert_eq!(op("read", json!({"x": null}), &mut values), Ok(None));
        let state = MultiRegister.step(&MultiRegister.init(), &write).unwrap();
        assert!(MultiRegister.step(&state, &read_x).is_some());
        assert_eq!(MultiRegister.step(&state, &read_y), None);
        assert_eq!(
            MultiRegister.refusal(&state, &read_y, &values),
            "read 3 of \"y\", but it holds 2"
        );
        assert_eq!(
            MultiRegister.describe_state(&state, &values),
            json!({"x": 1, "y": 2})
        );
    }

    #[test]
    fn a_txn_reads_its_own_writes_in_order() {
        let mut values = Values::default();
        let txn = op(
            "txn",
            json!([["write", "x", 5], ["read", "x", 5], ["read", "y", null]]),
            &mut values,
        )
        .unwrap()
        .unwrap();
        assert_eq!(txn.len(), 2);
        let state = MultiRegister.step(&MultiRegister.init(), &txn).unwrap();
        assert_eq!(
            MultiRegister.describe_state(&state, &values),
            json!({"x": 5})
        );
        let stale = op(
            "txn",
            json!([["read", "x", 5], ["write", "x", 6]]),
            &mut values,
        )
        .unwrap()
        .unwrap();
        assert_eq!(MultiRegister.step(&MultiRegister.init(), &stale), None);
        assert!(op("txn", json!([["cas", "x", 1]]), &mut values).is_err());
        assert!(op("read", json!([1]), &mut values).is_err());
    }
}
