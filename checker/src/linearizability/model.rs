//! The one extension point of the linearizability checker: a [`Model`] of the object under
//! test, a sequential specification in the style of Porcupine's and knossos's models.
//!
//! The search never changes for a new model. A model turns each operation of a history into
//! its own small op type once, before the search ([`Model::prepare`]), interning JSON values to
//! integers through [`Values`] so that states stay small and cheap to hash and compare; the
//! search then calls [`Model::step`], and two optional hints that only make it faster:
//! [`Model::is_read`] and [`Model::never_allows`].

use std::hash::Hash;

use serde_json::Value;

/// A sequential specification: an initial state and the legal transitions from each state.
pub trait Model: Send + Sync {
    /// A state of the object. The search caches (linearized ops, state) pairs, so a small
    /// state (an integer, a few words) keeps it fast.
    type State: Clone + Eq + Hash + Send + Sync;
    /// One operation, prepared for the search. Two `info` operations with equal ops are
    /// interchangeable, and the search tries only the earliest of them.
    type Op: Clone + Eq + Hash + Send + Sync;

    /// Whether the model implements [`Model::never_allows`]: the search then looks a few
    /// operations ahead for one refused for good, which costs a little at every step.
    const NEVER_ALLOWS: bool = false;

    /// The operations the model knows (`f`s), for listings and for rule 4 of the checker.
    fn fs(&self) -> &'static [&'static str];

    /// Turns one operation into the model's op. `Ok(None)` means the operation constrains
    /// nothing and passes wherever it is placed (a read that returned nil); `Err` is a value
    /// the model cannot make sense of. Called only with an `f` in [`Model::fs`].
    fn prepare(&self, call: &Call<'_>, values: &mut Values) -> Result<Option<Self::Op>, String>;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// The state after `op` from `state`, or `None` if the object could not have done `op`
    /// there (a read of another value, an acquire of a held lock).
    fn step(&self, state: &Self::State, op: &Self::Op) -> Option<Self::State>;

    /// Whether `op` only reads: wherever the model allows it, it leaves the state as it is. The
    /// search linearizes such an operation as soon as the model allows it, trying nothing else
    /// there, which saves much backtracking. The default, `false`, is always correct.
    fn is_read(&self, _op: &Self::Op) -> bool {
        false
    }

    /// Whether no state reachable from `state` allows `op`: a set that holds an element a read
    /// lacks will hold it for good. The search abandons a configuration where an operation that
    /// must still be linearized is refused for good. The default, `false`, is always correct.
    fn never_allows(&self, _state: &Self::State, _op: &Self::Op) -> bool {
        false
    }

    /// `state` as JSON, for explanations.
    fn describe_state(&self, state: &Self::State, values: &Values) -> Value;

    /// Why [`Model::step`] refused `op` from `state`, in a short sentence.
    fn refusal(&self, state: &Self::State, op: &Self::Op, values: &Values) -> String;

    /// Bytes a state owns on the heap, for the memory bound; plain states own none.
    fn state_heap_bytes(&self, _state: &Self::State) -> usize {
        0
    }
}

/// What a model sees of an operation: its `f`, its value (the completion's if the completion
/// carries one, else the invoke's; `None` for nil) and the client process that performed it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub f: &'a str,
    pub value: Option<&'a Value>,
    pub process: u64,
}

/// JSON values interned to dense integer ids, per key, so that model states can hold `u32`s.
///
/// Values equal as JSON get the same id; nil (JSON `null`) is always [`Values::NIL`].
#[derive(Debug)]
pub struct Values {
    ids: std::collections::HashMap<String, u32>,
    values: Vec<Value>,
}

impl Default for Values {
    fn default() -> Self {
        Values {
            ids: std::collections::HashMap::from([(Value::Null.to_string(), Values::NIL)]),
            values: vec![Value::Null],
        }
    }
}

impl Values {
    /// The id of nil, the initial value of a register.
    pub const NIL: u32 = 0;

    /// The id of `value`, assigned on first sight.
    pub fn intern(&mut self, value: &Value) -> u32 {
        // serde_json's objects keep their keys sorted, so equal values print equal text.
        let text = value.to_string();
        if let Some(&id) = self.ids.get(&text) {
            return id;
        }
        let id = self.values.len() as u32;
        self.ids.insert(text, id);
        self.values.push(value.clone());
        id
    }

    /// The id of an optional value, `None` being nil.
    pub fn intern_option(&mut self, value: Option<&Value>) -> u32 {
        value.map_or(Values::NIL, |v| self.intern(v))
    }

    /// The value interned as `id`.
    pub fn get(&self, id: u32) -> &Value {
        &self.values[id as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_json_values_share_an_id_and_nil_is_zero() {
        let mut values = Values::default();
        let a = values.intern(&json!({"x": 1, "y": [1, 2]}));
        let b = values.intern(&json!({"y": [1, 2], "x": 1}));
        assert_eq!(a, b);
        assert_ne!(values.intern(&json!(1)), values.intern(&json!("1")));
        assert_eq!(values.intern(&Value::Null), Values::NIL);
        assert_eq!(values.intern_option(None), Values::NIL);
        assert_eq!(values.get(a), &json!({"x": 1, "y": [1, 2]}));
    }
}
