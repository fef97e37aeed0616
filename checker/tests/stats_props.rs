//! Property tests of the stats checker, against an oracle that reads the operations as they
//! were generated rather than as the checker pairs them:
//!
//! - the verdict is unknown exactly when there is no client operation or some needed entry has
//!   no `ok` operation, and never invalid; every invoke is counted once;
//! - nemesis ops, wherever they fall, change nothing.

use std::collections::BTreeMap;

use proptest::collection::vec;
use proptest::prelude::*;
use splitbrain_checker::stats::{check, FCounts};
use splitbrain_checker::{Op, OpType, Process, Valid};

const FS: [&str; 4] = ["acquire", "add", "write", "cas"];
const NEEDED: [&str; 4] = ["acquire", "add", "write|cas", "read"];

/// One client operation: its `f` and its completion (`None`: never completed).
#[derive(Debug, Clone)]
struct Generated {
    f: &'static str,
    outcome: Option<OpType>,
}

fn generated() -> impl Strategy<Value = Generated> {
    let outcome = prop_oneof![
        Just(Some(OpType::Ok)),
        Just(Some(OpType::Fail)),
        Just(Some(OpType::Info)),
        Just(None),
    ];
    (proptest::sample::select(FS.to_vec()), outcome)
        .prop_map(|(f, outcome)| Generated { f, outcome })
}

/// Each operation on its own process, invoked then completed, one after another.
fn history(operations: &[Generated]) -> Vec<Op> {
    let mut ops = Vec::new();
    for (process, operation) in operations.iter().enumerate() {
        let process = Process::Client(process as u64);
        ops.push(Op::new(process, OpType::Invoke, operation.f));
        if let Some(outcome) = operation.outcome {
            ops.push(Op::new(process, outcome, operation.f));
        }
    }
    ops.into_iter()
        .enumerate()
        .map(|(index, op)| op.at(index as u64, index as u64))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn unknown_exactly_without_evidence(
        operations in vec(generated(), 0..30),
        needed in proptest::sample::subsequence(NEEDED.to_vec(), 0..=NEEDED.len()),
    ) {
        let stats = check(&history(&operations), &needed);
        let has_ok = |f: &str| {
            operations.iter().any(|o| o.f == f && o.outcome == Some(OpType::Ok))
        };
        let evidence = !operations.is_empty()
            && needed.iter().all(|entry| entry.split('|').any(has_ok));
        let expected = if evidence { Valid::True } else { Valid::Unknown };
        prop_assert_eq!(stats.valid, expected, "{:?}", stats.reason);
        prop_assert_eq!(stats.reason.is_some(), !evidence);
        let counted: usize = stats.by_f.values().map(FCounts::attempts).sum();
        prop_assert_eq!(counted, operations.len());
        let mut oks: BTreeMap<String, usize> = BTreeMap::new();
        for operation in operations.iter().filter(|o| o.outcome == Some(OpType::Ok)) {
            *oks.entry(operation.f.to_string()).or_default() += 1;
        }
        for (f, counts) in &stats.by_f {
            prop_assert_eq!(counts.ok, oks.get(f).copied().unwrap_or(0), "{}", f);
        }
    }

    #[test]
    fn nemesis_ops_change_nothing(
        operations in vec(generated(), 0..20),
        at in vec(any::<proptest::sample::Index>(), 1..5),
    ) {
        let plain = history(&operations);
        let mut with_nemesis = plain.clone();
        for index in at {
            let position = index.index(with_nemesis.len() + 1);
            with_nemesis.insert(position, Op::new(Process::NEMESIS, OpType::Info, "acquire"));
        }
        prop_assert_eq!(check(&with_nemesis, &NEEDED), check(&plain, &NEEDED));
    }
}
