//! A set, empty at first: `add` (value: an element) adds it, `read` (value: an array of
//! elements) returns all of them. Reads are compared as sets: order and repeats do not matter.
//! A read of nil passes anywhere.

use serde_json::Value;

use crate::linearizability::{Call, Model, Values};

pub struct Set;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SetOp {
    Add(u32),
    Read(Elements),
}

/// A set of interned elements, as a bitset without trailing zero words (so that equal sets
/// are equal values).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Elements(Vec<u64>);

impl Elements {
    fn with(&self, element: u32) -> Elements {
        let (word, bit) = (element as usize / 64, element % 64);
        let mut words = self.0.clone();
        if words.len() <= word {
            words.resize(word + 1, 0);
        }
        words[word] |= 1 << bit;
        Elements(words)
    }

    fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.0.len() * 64)
            .filter(|&id| self.0[id / 64] & (1 << (id % 64)) != 0)
            .map(|id| id as u32)
    }

    fn describe(&self, values: &Values) -> Value {
        Value::Array(self.ids().map(|id| values.get(id).clone()).collect())
    }

    fn without(&self, other: &Elements) -> Elements {
        let mut words: Vec<u64> = self
            .0
            .iter()
            .enumerate()
            .map(|(i, word)| word & !other.0.get(i).copied().unwrap_or(0))
            .collect();
        while words.last() == Some(&0) {
            words.pop();
        }
        Elements(words)
    }
}

impl Model for Set {
    type State = Elements;
    type Op = SetOp;
    const NEVER_ALLOWS: bool = true;

    fn fs(&self) -> &'static [&'static str] {
        &["add", "read"]
    }

    fn prepare(&self, call: &Call<'_>, values: &mut Values) -> Result<Option<SetOp>, String> {
        match (call.f, call.value) {
            ("add", value) => Ok(Some(SetOp::Add(values.intern_option(value)))),
            (_, None) => Ok(None),
            (_, Some(Value::Array(elements))) => Ok(Some(SetOp::Read(
                elements
                    .iter()
                    .fold(Elements::default(), |set, e| set.with(values.intern(e))),
            ))),
            (_, Some(other)) => Err(format!("a read's value must be an array, not {other}")),
        }
    }

    fn init(&self) -> Elements {
        Elements::default()
    }

    fn step(&self, set: &Elements, op: &SetOp) -> Option<Elements> {
        match op {
            SetOp::Add(element) => Some(set.with(*element)),
            SetOp::Read(read) => (read == set).then(|| set.clone()),
        }
    }

    fn is_read(&self, op: &SetOp) -> bool {
        matches!(op, SetOp::Read(_))
    }

    /// Adds only grow the set: a read that lacks an element the set holds never passes.
    fn never_allows(&self, set: &Elements, op: &SetOp) -> bool {
        matches!(op, SetOp::Read(read) if set.without(read) != Elements::default())
    }

    fn describe_state(&self, set: &Elements, values: &Values) -> Value {
        set.describe(values)
    }

    fn refusal(&self, set: &Elements, op: &SetOp, values: &Values) -> String {
        let SetOp::Read(read) = op else {
            unreachable!("an add is never refused")
        };
        let mut differences = Vec::new();
        let missing = set.without(read);
        if missing != Elements::default() {
            differences.push(format!("lacks {}", missing.describe(values)));
        }
        let unexpected = read.without(set);
        if unexpected != Elements::default() {
            differences.push(format!("has {} the set lacks", unexpected.describe(values)));
        }
        format!("the read {}", differences.join(" and "))
    }

    fn state_heap_bytes(&self, set: &Elements) -> usize {
        set.0.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_compare_as_sets() {
        let mut values = Values::default();
        let mut op = |f, value: Value| {
            let call = Call {
                f,
                value: Some(&value),
                process: 1,
            };
            Set.prepare(&call, &mut values).unwrap().unwrap()
        };
        let (add_1, add_2) = (op("add", json!(1)), op("add", json!(2)));
        let read_21 = op("read", json!([2, 1, 2]));
        let read_13 = op("read", json!([1, 3]));
        let set = Set
            .step(&Set.step(&Set.init(), &add_1).unwrap(), &add_2)
            .unwrap();
        assert_eq!(Set.step(&set, &read_21), Some(set.clone()));
        assert_eq!(Set.step(&set, &read_13), None);
        assert_eq!(
            Set.refusal(&set, &read_13, &values),
            "the read lacks [2] and has [3] the set lacks"
        );
        assert_eq!(Set.describe_state(&set, &values), json!([1, 2]));
        let bad = Call {
            f: "read",
            value: Some(&json!(4)),
            process: 1,
        };
        assert!(Set.prepare(&bad, &mut values).is_err());
        assert!(Set.never_allows(&set, &read_13));
        assert!(!Set.never_allows(&Set.init(), &read_13));
        let nil = Call {
            f: "read",
            value: None,
            process: 1,
        };
        assert_eq!(Set.prepare(&nil, &mut values), Ok(None));
    }
}
