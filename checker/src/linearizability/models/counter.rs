//! A counter, 0 at first: `add` (value: an integer, possibly negative) adds to it, `read`
//! (value: an integer) returns it. A read of nil passes anywhere.

use serde_json::Value;

use crate::linearizability::{Call, Model, Values};

pub struct Counter;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CounterOp {
    Add(i64),
    Read(i64),
}

impl Model for Counter {
    type State = i64;
    type Op = CounterOp;

    fn fs(&self) -> &'static [&'static str] {
        &["add", "read"]
    }

    fn prepare(&self, call: &Call<'_>, _: &mut Values) -> Result<Option<CounterOp>, String> {
        let integer = |value: &Value| {
            value
                .as_i64()
                .ok_or_else(|| format!("the value must be an integer, not {value}"))
        };
        match (call.f, call.value) {
            ("add", None) => Err("an add needs an integer value".to_string()),
            ("add", Some(delta)) => integer(delta).map(|delta| Some(CounterOp::Add(delta))),
            (_, None) => Ok(None),
            (_, Some(total)) => integer(total).map(|total| Some(CounterOp::Read(total))),
        }
    }

    fn init(&self) -> i64 {
        0
    }

    fn step(&self, total: &i64, op: &CounterOp) -> Option<i64> {
        match *op {
            CounterOp::Add(delta) => Some(total.wrapping_add(delta)),
            CounterOp::Read(read) => (read == *total).then_some(read),
        }
    }

    fn is_read(&self, op: &CounterOp) -> bool {
        matches!(op, CounterOp::Read(_))
    }

    fn describe_state(&self, total: &i64, _: &Values) -> Value {
        Value::from(*total)
    }

    fn refusal(&self, total: &i64, op: &CounterOp, _: &Values) -> String {
        match op {
            CounterOp::Read(read) => format!("read {read}, but the counter is {total}"),
            CounterOp::Add(_) => unreachable!("an add is never refused"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(f: &str, value: Option<Value>) -> Result<Option<CounterOp>, String> {
        let call = Call {
            f,
            value: value.as_ref(),
            process: 1,
        };
        Counter.prepare(&call, &mut Values::default())
    }

    #[test]
    fn adds_sum_and_reads_see_the_total() {
        let add = |delta| op("add", Some(json!(delta))).unwrap().unwrap();
        let total = Counter
            .step(&Counter.step(&0, &add(3)).unwrap(), &add(-1))
            .unwrap();
        assert_eq!(total, 2);
        let read_2 = op("read", Some(json!(2))).unwrap().unwrap();
        let read_3 = op("read", Some(json!(3))).unwrap().unwrap();
        assert_eq!(Counter.step(&total, &read_2), Some(2));
        assert_eq!(Counter.step(&total, &read_3), None);
        assert_eq!(
            Counter.refusal(&total, &read_3, &Values::default()),
            "read 3, but the counter is 2"
        );
        assert_eq!(op("read", None), Ok(None));
        assert!(op("add", Some(json!("x"))).is_err());
        assert!(op("add", None).is_err());
    }
}
