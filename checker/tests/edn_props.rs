//! Property tests of the EDN reader: random ops written as EDN, as a vector or a stream, with
//! commas, comments, discards and unknown keys between them, read back field for field; and
//! arbitrary text never panics.

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::Value;
use splitbrain_checker::{read_edn_history, EdnOptions, Op, OpType, Process};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12..1e12f64).prop_map(Value::from),
        ".*".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            vec(("[a-z]{1,5}", inner), 0..4)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

fn op() -> impl Strategy<Value = Op> {
    let process = prop_oneof![
        4 => (0..1_000u64).prop_map(Process::Client),
        1 => Just(Process::NEMESIS),
    ];
    let kind = prop_oneof![
        Just(OpType::Invoke),
        Just(OpType::Ok),
        Just(OpType::Fail),
        Just(OpType::Info),
    ];
    (
        process,
        kind,
        "[a-z][a-z-]{0,8}",
        any::<u64>(),
        any::<u64>(),
        proptest::option::of(json_value()),
        proptest::option::of(".*"),
        proptest::option::of(vec("n[1-5]", 1..3)),
    )
        .prop_map(|(process, kind, f, index, time, value, error, node)| {
            let mut op = Op::new(process, kind, f).at(index, time);
            op.value = value.filter(|v| !v.is_null());
            op.error = error;
            op.node = node;
            op
        })
}

/// `value` in EDN.
fn edn(value: &Value) -> String {
    match value {
        Value::Null => "nil".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_f64() => format!("{:?}", n.as_f64().unwrap()),
        Value::Number(n) => n.to_string(),
        Value::String(s) => edn_string(s),
        Value::Array(items) => format!("[{}]", items.iter().map(edn).collect::<Vec<_>>().join(" ")),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{} {}", edn_string(k), edn(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn edn_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn op_edn(op: &Op) -> String {
    let kind = serde_json::to_value(op.kind).unwrap();
    let process = match op.process {
        Process::Client(p) => p.to_string(),
        Process::Nemesis(_) => ":nemesis".to_string(),
    };
    let mut text = format!(
        "{{:index {}, :time {}, :type :{}, :process {process}, :f :{}",
        op.index,
        op.time,
        kind.as_str().unwrap(),
        op.f
    );
    if let Some(value) = &op.value {
        text += &format!(", :value {}", edn(value));
    }
    if let Some(error) = &op.error {
        text += &format!(" :error {} #_ :discarded", edn_string(error));
    }
    // Jepsen names one node as a string; a list of them, as a vector.
    match op.node.as_deref() {
        Some([node]) => text += &format!(", :node {}", edn_string(node)),
        Some(nodes) => {
            text += &format!(
                ", :node [{}]",
                nodes
                    .iter()
                    .map(|n| edn_string(n))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
        None => {}
    }
    text + ", :sub-via #{:unknown-key}}"
}

proptest! {
    #[test]
    fn ops_written_as_edn_read_back_equal(ops in vec(op(), 0..20), as_vector in any::<bool>()) {
        let body = ops.iter().map(op_edn).collect::<Vec<_>>().join("\n ; a comment\n");
        let text = if as_vector { format!("[{body}]") } else { body };
        let read = read_edn_history(&text, EdnOptions::default()).unwrap();
        prop_assert_eq!(read, ops);
    }

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,200}") {
        let _ = read_edn_history(&text, EdnOptions::default());
        let _ = read_edn_history(&text, EdnOptions { independent: true });
    }

    #[test]
    fn edn_like_text_never_panics(text in r#"[\[\]{}()#_:;,"\\a-z0-9 \n.+\-/NM^é]{0,120}"#) {
        let _ = read_edn_history(&text, EdnOptions::default());
    }
}
