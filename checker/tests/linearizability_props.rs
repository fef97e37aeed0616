//! Property tests of the linearizability checker.
//!
//! - Histories of correct objects ([`object_history`]: each operation takes effect at one
//!   instant inside its interval, some time out) are linearizable, for every model; with one
//!   `ok` read's value changed to one never written, they are not. With dozens of timed-out
//!   operations the search may run out of time, but never calls a correct history not
//!   linearizable.
//! - On small random cas-register and set histories, linearizable or not, the checker agrees
//!   with a brute force search over every order of every subset of the operations. Timed-out
//!   (`info`) operations complete with Jepsen's `timed-out`, which is no result: they keep
//!   their invoke's value.
//! - Hand-written cases for each model, good and bad, and a pathological history that must come
//!   back unknown within the time limit and the memory bound.
//! - Jepsen EDN histories with timeouts, as Jepsen writes them, agree with the brute force.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Value};
use splitbrain_checker::linearizability::{check, find_model, CheckError, Limits, MODELS};
use splitbrain_checker::testing::{object_history, HistoryBuilder, ObjectWorkload};
use splitbrain_checker::{read_edn_history, EdnOptions, Op, OpType, Process, Valid};

/// The checker's verdict; unknown only when there was nothing to check.
fn verdict(model: &str, history: &[Op]) -> Valid {
    let result = check(history, find_model(model).unwrap(), Limits::default()).unwrap();
    if result.valid == Valid::Unknown && result.ops_checked > 0 {
        panic!("unknown: {:?}", result.cause);
    }
    result.valid
}

fn workload() -> impl Strategy<Value = ObjectWorkload> {
    let models: Vec<&'static str> = MODELS.iter().map(|model| model.name).collect();
    (
        proptest::sample::select(models),
        10..300usize,
        2..=10u64,
        1..=3usize,
        0..=20u64,
        any::<u64>(),
    )
        .prop_map(
            |(model, ops, processes, keys, info_percent, seed)| ObjectWorkload {
                model,
                ops,
                processes,
                keys,
                info_percent,
                seed,
            },
        )
}

/// At most about ten operations of unknown outcome. Each may or may not have taken effect, at
/// any time after its invoke: refuting a read that nothing explains means trying every
/// combination, and with dozens of them even some linearizable histories need more tried than
/// a debug build tries in the time limit on a busy machine. A correct history with 26 `info`
/// writes to a multi-register in 125 operations came back unknown after a million states (one
/// workload in tens of thousands does; below this bound, none took over 12 ms in 17,000).
fn few_unknown_outcomes(workload: &ObjectWorkload) -> bool {
    workload.ops as u64 * workload.info_percent <= 1_000
}

/// A value no simulated client ever writes, in the shape of a read of `model`.
fn never_written(model: &str, read: &Value) -> Value {
    match model {
        "set" => {
            let mut elements = read.as_array().cloned().unwrap_or_default();
            elements.push(json!(1_000_000));
            Value::Array(elements)
        }
        "counter" => json!(-1),
        "multi-register" => json!({"x": 1_000_000}),
        _ => json!(1_000_000),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn histories_of_correct_objects_are_linearizable(
        workload in workload().prop_filter("few unknown outcomes", few_unknown_outcomes),
    ) {
        let history = object_history(&workload);
        let result = check(&history, find_model(workload.model).unwrap(), Limits::default()).unwrap();
        prop_assert_eq!(result.valid, Valid::True, "{:?}", result);
        prop_assert_eq!(result.ops_ignored, 0);
    }

    #[test]
    fn correct_histories_with_many_unknown_outcomes_are_never_called_not_linearizable(
        workload in workload().prop_filter("many unknown outcomes", |w| !few_unknown_outcomes(w)),
    ) {
        let history = object_history(&workload);
        let limits = Limits { time: Duration::from_secs(2), ..Limits::default() };
        let result = check(&history, find_model(workload.model).unwrap(), limits).unwrap();
        if result.valid == Valid::Unknown {
            let cause = result.cause.clone().unwrap_or_default();
            let limit_reached = cause.starts_with("time limit") || cause.starts_with("memory bound");
            prop_assert!(limit_reached, "{:?}", result);
        } else {
            prop_assert_eq!(result.valid, Valid::True, "{:?}", result);
        }
        prop_assert_eq!(result.ops_ignored, 0);
    }

    #[test]
    fn a_read_of_a_value_never_written_is_not_linearizable(
        workload in workload()
            .prop_filter("a model with reads", |w| !w.model.contains("mutex"))
            .prop_filter("few unknown outcomes", few_unknown_outcomes),
        pick in any::<Index>(),
    ) {
        let mut history = object_history(&workload);
        let reads: Vec<usize> = (0..history.len())
            .filter(|&i| {
                let op = &history[i];
                op.kind == OpType::Ok && op.f == "read" && op.value.as_ref().is_some_and(|v| !v.is_null())
            })
            .collect();
        prop_assume!(!reads.is_empty());
        let read = reads[pick.index(reads.len())];
        let corrupted = never_written(workload.model, history[read].value.as_ref().unwrap());
        history[read].value = Some(corrupted);
        let result = check(&history, find_model(workload.model).unwrap(), Limits::default()).unwrap();
        prop_assert_eq!(result.valid, Valid::False, "{:?}", result);
        let failure = &result.failures[0];
        prop_assert_eq!(failure.key.as_deref(), history[read].key.as_deref());
        prop_assert!(failure.explanation.refused_count > 0);
    }
}

/// One operation of a small random history: its own process, invoked and completed at random
/// points of the event order.
#[derive(Debug, Clone)]
struct Small {
    f: &'static str,
    value: Option<Value>,
    outcome: Option<OpType>,
}

fn outcome() -> impl Strategy<Value = Option<OpType>> {
    prop_oneof![
        6 => Just(Some(OpType::Ok)),
        2 => Just(Some(OpType::Info)),
        1 => Just(Some(OpType::Fail)),
        1 => Just(None),
    ]
}

/// A register operation on values 0 to 2; a tenth of reads and writes are of nil.
fn small_register_op() -> impl Strategy<Value = Small> {
    let f = prop_oneof![Just("read"), Just("write"), Just("cas")];
    (
        f,
        proptest::option::weighted(0.9, 0..3u64),
        0..3u64,
        outcome(),
    )
        .prop_map(|(f, value, expected, outcome)| Small {
            f,
            value: match f {
                "cas" => Some(json!([expected, value.unwrap_or(0)])),
                _ => value.map(|v| json!(v)),
            },
            outcome,
        })
}

/// A set operation: an add of 0 to 2, or a read of some of them.
fn small_set_op() -> impl Strategy<Value = Small> {
    let add = (0..3u64).prop_map(|e| ("add", Some(json!(e))));
    let read = proptest::option::weighted(0.9, proptest::collection::btree_set(0..3u64, 0..3))
        .prop_map(|read| ("read", read.map(|elements| json!(elements))));
    (prop_oneof![add, read], outcome()).prop_map(|((f, value), outcome)| Small {
        f,
        value,
        outcome,
    })
}

/// The history of `ops`, invokes and completions ordered by `order`: event `i` of the
/// history is the next event of operation `order[i] % ops.len()`.
fn small_history(ops: &[Small], order: &[usize]) -> Vec<Op> {
    let mut next_event = vec![0; ops.len()];
    let mut history = HistoryBuilder::default();
    let events = |op: &Small| 1 + usize::from(op.outcome.is_some());
    let mut pending: usize = ops.iter().map(events).sum();
    let mut picks = order.iter().cycle();
    while pending > 0 {
        let op = picks.next().unwrap() % ops.len();
        let candidates = (op..ops.len()).chain(0..op);
        let op = candidates
            .into_iter()
            .find(|&i| next_event[i] < events(&ops[i]))
            .unwrap();
        let small = &ops[op];
        let value = small.value.clone();
        let process = op as u64;
        if next_event[op] == 0 {
            let invoke_value = if small.f == "read" {
                None
            } else {
                value.clone()
            };
            history.invoke(process, small.f, invoke_value);
        } else {
            match small.outcome.unwrap() {
                OpType::Ok => history.ok(process, small.f, value),
                // What Jepsen's clients write on a timeout: no result.
                OpType::Info => history.info(process, small.f, json!("timed-out")),
                _ => history.fail(process, small.f, None),
            };
        }
        next_event[op] += 1;
        pending -= 1;
    }
    history.build()
}

/// A model's step, on JSON states: the state after `f` with `value`, if allowed.
type Step = fn(&Value, &str, Option<&Value>) -> Option<Value>;

fn cas_register_step(state: &Value, f: &str, value: Option<&Value>) -> Option<Value> {
    match (f, value) {
        ("read", None) => Some(state.clone()),
        ("read", Some(v)) => (v == state).then(|| state.clone()),
        ("write", v) => Some(v.cloned().unwrap_or(Value::Null)),
        (_, Some(pair)) => (pair[0] == *state).then(|| pair[1].clone()),
        (_, None) => None,
    }
}

/// A set's state is the sorted array of its elements.
fn set_step(state: &Value, f: &str, value: Option<&Value>) -> Option<Value> {
    let sorted = |elements: &Value| {
        let mut elements = elements.as_array().cloned().unwrap_or_default();
        elements.sort_by_key(Value::to_string);
        elements.dedup();
        Value::Array(elements)
    };
    match (f, value) {
        ("add", element) => {
            let mut elements = state.as_array().cloned().unwrap_or_default();
            elements.push(element.cloned().unwrap_or(Value::Null));
            Some(sorted(&Value::Array(elements)))
        }
        (_, None) => Some(state.clone()),
        (_, Some(read)) => (sorted(read) == *state).then(|| state.clone()),
    }
}

/// Whether some order of the `ok` operations and some of the `info` ones, respecting real time,
/// is a legal execution from `init` by `step`: tried exhaustively.
fn brute_force(history: &[Op], init: Value, step: Step) -> bool {
    struct Call {
        f: String,
        value: Option<Value>,
        invoked: usize,
        returned: Option<usize>,
    }
    let mut calls: Vec<Call> = Vec::new();
    for (position, op) in history.iter().enumerate() {
        let Process::Client(process) = op.process else {
            continue;
        };
        match op.kind {
            OpType::Invoke => calls.push(Call {
                f: op.f.clone(),
                value: op.value.clone(),
                invoked: position,
                returned: None,
            }),
            kind => {
                let call = calls.iter().position(|c| {
                    history[c.invoked].process == Process::Client(process) && c.returned.is_none()
                });
                let index = call.unwrap();
                if kind == OpType::Fail {
                    calls.remove(index);
                } else if kind == OpType::Ok {
                    calls[index].returned = Some(position);
                    if op.value.is_some() {
                        calls[index].value = op.value.clone();
                    }
                }
            }
        }
    }
    fn search(calls: &[Call], used: &mut Vec<bool>, state: &Value, step: Step) -> bool {
        let missing_ok = |used: &[bool], i: usize| !used[i] && calls[i].returned.is_some();
        if !(0..calls.len()).any(|i| missing_ok(used, i)) {
            return true;
        }
        for i in 0..calls.len() {
            let blocked = (0..calls.len())
                .any(|j| missing_ok(used, j) && calls[j].returned.unwrap() < calls[i].invoked);
            if used[i] || blocked {
                continue;
            }
            let call = &calls[i];
            let value = call.value.as_ref().filter(|v| !v.is_null());
            let next = step(state, &call.f, value);
            if let Some(next) = next {
                used[i] = true;
                if search(calls, used, &next, step) {
                    return true;
                }
                used[i] = false;
            }
        }
        false
    }
    let mut used = vec![false; calls.len()];
    search(&calls, &mut used, &init, step)
}

/// The verdict the checker must give: unknown when every operation failed (nothing to check),
/// else whether [`brute_force`] finds a linearization.
fn brute_force_verdict(history: &[Op], init: Value, step: Step) -> Valid {
    if operations_that_did_not_fail(history) == 0 {
        Valid::Unknown
    } else if brute_force(history, init, step) {
        Valid::True
    } else {
        Valid::False
    }
}

/// Client invokes less `fail` completions.
fn operations_that_did_not_fail(history: &[Op]) -> usize {
    let client = |kind| {
        history
            .iter()
            .filter(|op| !op.process.is_nemesis() && op.kind == kind)
            .count()
    };
    client(OpType::Invoke) - client(OpType::Fail)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn small_register_histories_agree_with_brute_force(
        ops in vec(small_register_op(), 1..8),
        order in vec(any::<usize>(), 16),
    ) {
        let history = small_history(&ops, &order);
        let expected = brute_force_verdict(&history, Value::Null, cas_register_step);
        prop_assert_eq!(verdict("cas-register", &history), expected, "{:#?}", history);
    }

    #[test]
    fn small_set_histories_agree_with_brute_force(
        ops in vec(small_set_op(), 1..8),
        order in vec(any::<usize>(), 16),
    ) {
        let history = small_history(&ops, &order);
        let expected = brute_force_verdict(&history, json!([]), set_step);
        prop_assert_eq!(verdict("set", &history), expected, "{:#?}", history);
    }
}

#[test]
fn cas_succeeds_from_the_expected_value_only() {
    let good = HistoryBuilder::default()
        .call(1, "write", json!(1))
        .call(1, "cas", json!([1, 2]))
        .invoke(2, "cas", json!([1, 3]))
        .fail(2, "cas", json!([1, 3]))
        .call(2, "read", json!(2))
        .build();
    assert_eq!(verdict("cas-register", &good), Valid::True);
    let bad = HistoryBuilder::default()
        .call(1, "write", json!(1))
        .call(1, "cas", json!([1, 2]))
        .call(2, "cas", json!([1, 3]))
        .build();
    assert_eq!(verdict("cas-register", &bad), Valid::False);
}

#[test]
fn a_mutex_acquired_twice_without_release_is_not_linearizable() {
    let double = HistoryBuilder::default()
        .call(1, "acquire", None)
        .call(2, "acquire", None)
        .build();
    assert_eq!(verdict("mutex", &double), Valid::False);
    assert_eq!(verdict("owner-mutex", &double), Valid::False);
    let handed_over = HistoryBuilder::default()
        .call(1, "acquire", None)
        .invoke(2, "acquire", None)
        .call(1, "release", None)
        .ok(2, "acquire", None)
        .build();
    assert_eq!(verdict("mutex", &handed_over), Valid::True);
    assert_eq!(verdict("owner-mutex", &handed_over), Valid::True);
}

#[test]
fn a_release_by_another_process_is_fine_for_a_mutex_only() {
    let history = HistoryBuilder::default()
        .call(1, "acquire", None)
        .call(2, "release", None)
        .call(3, "acquire", None)
        .build();
    assert_eq!(verdict("mutex", &history), Valid::True);
    let result = check(
        &history,
        find_model("owner-mutex").unwrap(),
        Limits::default(),
    )
    .unwrap();
    assert_eq!(result.valid, Valid::False);
    let refused = &result.failures[0].explanation.refused[0];
    assert_eq!(refused.op.process, Process::Client(2));
    assert_eq!(refused.reason, "process 2 releases a lock process 1 holds");
}

#[test]
fn an_info_acquire_may_never_have_happened() {
    let history = HistoryBuilder::default()
        .invoke(1, "acquire", None)
        .info(1, "acquire", None)
        .call(2, "acquire", None)
        .call(2, "release", None)
        .build();
    assert_eq!(verdict("owner-mutex", &history), Valid::True);
}

#[test]
fn a_set_read_must_hold_every_completed_add() {
    let good = HistoryBuilder::default()
        .call(1, "add", json!(1))
        .invoke(2, "add", json!(2))
        .call(3, "read", json!([1]))
        .ok(2, "add", json!(2))
        .call(3, "read", json!([2, 1]))
        .build();
    assert_eq!(verdict("set", &good), Valid::True);
    let lost = HistoryBuilder::default()
        .call(1, "add", json!(1))
        .call(1, "add", json!(2))
        .call(3, "read", json!([2]))
        .build();
    assert_eq!(verdict("set", &lost), Valid::False);
}

#[test]
fn a_counter_read_is_the_sum_of_some_adds() {
    let good = HistoryBuilder::default()
        .call(1, "add", json!(2))
        .invoke(2, "add", json!(3))
        .info(2, "add", json!(3))
        .call(3, "read", json!(5))
        .call(3, "read", json!(5))
        .build();
    assert_eq!(verdict("counter", &good), Valid::True);
    let bad = HistoryBuilder::default()
        .call(1, "add", json!(2))
        .call(3, "read", json!(3))
        .build();
    assert_eq!(verdict("counter", &bad), Valid::False);
}

#[test]
fn multi_register_reads_see_one_write_whole() {
    let good = HistoryBuilder::default()
        .call(1, "write", json!({"x": 1, "y": 1}))
        .invoke(1, "write", json!({"x": 2, "y": 2}))
        .call(2, "read", json!({"x": 1, "y": 1}))
        .ok(1, "write", json!({"x": 2, "y": 2}))
        .call(2, "read", json!({"x": 2}))
        .build();
    assert_eq!(verdict("multi-register", &good), Valid::True);
    let torn = HistoryBuilder::default()
        .call(1, "write", json!({"x": 1, "y": 1}))
        .invoke(1, "write", json!({"x": 2, "y": 2}))
        .call(2, "read", json!({"x": 2, "y": 1}))
        .build();
    assert_eq!(verdict("multi-register", &torn), Valid::False);
}

#[test]
fn a_completion_without_an_invoke_is_an_error_naming_its_index() {
    let history = HistoryBuilder::default()
        .call(1, "write", json!(1))
        .ok(7, "write", json!(1))
        .build();
    let error = check(&history, find_model("register").unwrap(), Limits::default()).unwrap_err();
    assert_eq!(
        error,
        CheckError::CompletionWithoutInvoke {
            index: 2,
            process: Process::Client(7)
        }
    );
}

#[test]
fn many_concurrent_info_writes_give_unknown_within_the_limits() {
    let mut history = HistoryBuilder::default();
    for process in 0..48 {
        history.invoke(process, "write", json!(process));
    }
    for process in 0..48 {
        history.info(process, "write", json!(process));
    }
    for value in [3, 5, 3, 5, 3] {
        history.call(100, "read", json!(value));
    }
    let limits = Limits {
        time: Duration::from_secs(1),
        memory_bytes: 64 << 20,
    };
    let started = Instant::now();
    let result = check(&history.build(), find_model("register").unwrap(), limits).unwrap();
    assert!(started.elapsed() < limits.time + Duration::from_secs(5));
    assert_eq!(result.valid, Valid::Unknown);
    assert!(result.peak_cache_bytes <= limits.memory_bytes);
    let cause = result.cause.unwrap();
    assert!(
        cause.starts_with("time limit 1s reached")
            || cause.starts_with("memory bound 64 MiB reached"),
        "{cause}"
    );
}

// Jepsen and knossos EDN histories, in the shapes Jepsen writes: timed-out operations
// completed as `:info` with `:value :timed-out`, `:fail`s, nemesis ops interleaved, `:index`,
// `:time`, `:node` and `:error` fields, and `[key value]` tuples of independent keys. Each is
// read, checked as a cas-register, and its verdict compared with the brute force's, key by key.

/// The checker's verdict on an EDN history, and the brute force's.
fn edn_verdicts(text: &str, options: EdnOptions) -> (Valid, Valid) {
    let ops = read_edn_history(text, options).unwrap();
    let brute = client_ops_by_key(&ops)
        .values()
        .map(|part| brute_force_verdict(part, Value::Null, cas_register_step))
        .fold(Valid::True, Valid::merge);
    (verdict("cas-register", &ops), brute)
}

/// The client ops of each key: a completion goes with its process's invoke, whose key it may
/// not repeat.
fn client_ops_by_key(ops: &[Op]) -> BTreeMap<Option<String>, Vec<Op>> {
    let mut invoked_key: HashMap<Process, Option<String>> = HashMap::new();
    let mut parts: BTreeMap<Option<String>, Vec<Op>> = BTreeMap::new();
    for op in ops.iter().filter(|op| !op.process.is_nemesis()) {
        let key = if op.kind == OpType::Invoke {
            invoked_key.insert(op.process, op.key.clone());
            op.key.clone()
        } else {
            invoked_key.get(&op.process).cloned().flatten()
        };
        parts.entry(key).or_default().push(op.clone());
    }
    parts
}

/// `ops` as a reader that took an `info` completion's value as the operation's would see
/// them: each such value copied onto its invoke.
fn info_values_taken_as_results(ops: &[Op]) -> Vec<Op> {
    let mut ops = ops.to_vec();
    let mut pending: HashMap<Process, usize> = HashMap::new();
    for position in 0..ops.len() {
        let process = ops[position].process;
        match ops[position].kind {
            OpType::Invoke => {
                pending.insert(process, position);
            }
            OpType::Info => {
                if let Some(invoke) = pending.remove(&process) {
                    ops[invoke].value = ops[position].value.clone();
                }
            }
            _ => {
                pending.remove(&process);
            }
        }
    }
    ops
}

/// A cas and a write time out while a partition is on; later reads see both take effect.
const TIMED_OUT_CAS_AND_WRITE: &str = r#"
[{:index 0, :time 1000, :type :invoke, :process 0, :f :write, :value 1, :node "n1"}
 {:index 1, :time 2000, :type :ok, :process 0, :f :write, :value 1, :node "n1"}
 {:index 2, :time 2500, :type :info, :process :nemesis, :f :start, :value {"n1" ["n2" "n3"]}}
 {:index 3, :time 3000, :type :invoke, :process 1, :f :cas, :value [1 2], :node "n2"}
 {:index 4, :time 3100, :type :invoke, :process 2, :f :write, :value 3, :node "n3"}
 {:index 5, :time 4000, :type :info, :process 1, :f :cas, :value :timed-out, :error :timeout}
 {:index 6, :time 4100, :type :info, :process 2, :f :write, :value :timed-out, :error :timeout}
 {:index 7, :time 5000, :type :invoke, :process 6, :f :read, :value nil}
 {:index 8, :time 5100, :type :ok, :process 6, :f :read, :value 2}
 {:index 9, :time 5200, :type :invoke, :process 6, :f :read, :value nil}
 {:index 10, :time 5300, :type :ok, :process 6, :f :read, :value 3}
 {:index 11, :time 6000, :type :info, :process :nemesis, :f :stop, :value nil}
 {:index 12, :time 6100, :type :invoke, :process 7, :f :read, :value nil}
 {:index 13, :time 6200, :type :info, :process 7, :f :read, :value :timed-out}]
"#;

#[test]
fn a_jepsen_history_with_a_timed_out_cas_and_write_is_linearizable() {
    let verdicts = edn_verdicts(TIMED_OUT_CAS_AND_WRITE, EdnOptions::default());
    assert_eq!(verdicts, (Valid::True, Valid::True));
    let ops = read_edn_history(TIMED_OUT_CAS_AND_WRITE, EdnOptions::default()).unwrap();
    let misread = info_values_taken_as_results(&ops);
    let error = check(
        &misread,
        find_model("cas-register").unwrap(),
        Limits::default(),
    );
    assert!(
        matches!(error, Err(CheckError::BadValue { index: 3, .. })),
        "a cas of `timed-out` is no cas: {error:?}"
    );
}

#[test]
fn a_jepsen_history_whose_only_timeouts_are_writes_is_linearizable() {
    let text = r#"
{:index 0, :time 10, :type :invoke, :process 0, :f :write, :value 1}
{:index 1, :time 20, :type :ok, :process 0, :f :write, :value 1}
{:index 2, :time 30, :type :invoke, :process 1, :f :write, :value 2}
{:index 3, :time 40, :type :info, :process :nemesis, :f :kill, :value :majority}
{:index 4, :time 50, :type :info, :process 1, :f :write, :value :timed-out, :error :timeout}
{:index 5, :time 60, :type :invoke, :process 2, :f :read, :value nil}
{:index 6, :time 70, :type :ok, :process 2, :f :read, :value 2}
{:index 7, :time 80, :type :invoke, :process 2, :f :read, :value nil}
{:index 8, :time 90, :type :ok, :process 2, :f :read, :value 2}
"#;
    assert_eq!(
        edn_verdicts(text, EdnOptions::default()),
        (Valid::True, Valid::True)
    );
    // Taking `timed-out` as the value written, as splitbrain did, makes it not linearizable.
    let ops = read_edn_history(text, EdnOptions::default()).unwrap();
    let misread = info_values_taken_as_results(&ops);
    assert!(!brute_force(&misread, Value::Null, cas_register_step));
    assert_eq!(verdict("cas-register", &ops), Valid::True);
}

#[test]
fn a_jepsen_history_with_timeouts_can_still_be_not_linearizable() {
    // The cas and the write each take effect at most once: once a read saw 3, no read sees 2.
    // The failed write of 2 certainly did not happen, so it explains nothing.
    let text = r#"
[{:index 0, :time 10, :type :invoke, :process 0, :f :write, :value 1}
 {:index 1, :time 20, :type :ok, :process 0, :f :write, :value 1}
 {:index 2, :time 25, :type :invoke, :process 3, :f :write, :value 2}
 {:index 3, :time 30, :type :invoke, :process 1, :f :cas, :value [1 2]}
 {:index 4, :time 40, :type :info, :process 1, :f :cas, :value :timed-out, :error :timeout}
 {:index 5, :time 50, :type :invoke, :process 2, :f :write, :value 3}
 {:index 6, :time 55, :type :info, :process :nemesis, :f :start-partition, :value :primaries}
 {:index 7, :time 60, :type :info, :process 2, :f :write, :value :timed-out}
 {:index 8, :time 70, :type :invoke, :process 4, :f :read, :value nil}
 {:index 9, :time 80, :type :ok, :process 4, :f :read, :value 2}
 {:index 10, :time 90, :type :invoke, :process 4, :f :read, :value nil}
 {:index 11, :time 100, :type :ok, :process 4, :f :read, :value 3}
 {:index 12, :time 110, :type :invoke, :process 4, :f :read, :value nil}
 {:index 13, :time 120, :type :ok, :process 4, :f :read, :value 2}
 {:index 14, :time 130, :type :fail, :process 3, :f :write, :value 2, :error :refused}]
"#;
    assert_eq!(
        edn_verdicts(text, EdnOptions::default()),
        (Valid::False, Valid::False)
    );
    let ops = read_edn_history(text, EdnOptions::default()).unwrap();
    let mut failed_write_kept = ops.clone();
    failed_write_kept[14].kind = OpType::Info;
    assert_eq!(
        verdict("cas-register", &failed_write_kept),
        Valid::True,
        "had the write of 2 maybe happened, the last read would be explained"
    );
}

/// Two independent keys, each with a timed-out operation: a bare `:timed-out` on key 1's cas,
/// a `[key :timed-out]` tuple on key 2's write. `{late}` is key 2's second read.
fn independent_history(late: u64) -> String {
    format!(
        r#"
[{{:index 0, :time 1, :type :invoke, :process 0, :f :write, :value [1 1]}}
 {{:index 1, :time 2, :type :invoke, :process 1, :f :write, :value [2 5]}}
 {{:index 2, :time 3, :type :ok, :process 0, :f :write, :value [1 1]}}
 {{:index 3, :time 4, :type :ok, :process 1, :f :write, :value [2 5]}}
 {{:index 4, :time 5, :type :invoke, :process 0, :f :cas, :value [1 [1 2]]}}
 {{:index 5, :time 6, :type :invoke, :process 1, :f :write, :value [2 6]}}
 {{:index 6, :time 7, :type :info, :process :nemesis, :f :start, :value nil}}
 {{:index 7, :time 8, :type :info, :process 0, :f :cas, :value :timed-out}}
 {{:index 8, :time 9, :type :info, :process 1, :f :write, :value [2 :timed-out]}}
 {{:index 9, :time 10, :type :invoke, :process 2, :f :read, :value [1 nil]}}
 {{:index 10, :time 11, :type :ok, :process 2, :f :read, :value [1 2]}}
 {{:index 11, :time 12, :type :invoke, :process 3, :f :read, :value [2 nil]}}
 {{:index 12, :time 13, :type :ok, :process 3, :f :read, :value [2 6]}}
 {{:index 13, :time 14, :type :info, :process :nemesis, :f :stop, :value nil}}
 {{:index 14, :time 15, :type :invoke, :process 3, :f :read, :value [2 nil]}}
 {{:index 15, :time 16, :type :ok, :process 3, :f :read, :value [2 {late}]}}]
"#
    )
}

#[test]
fn independent_keys_with_timeouts_are_checked_key_by_key() {
    let independent = EdnOptions { independent: true };
    assert_eq!(
        edn_verdicts(&independent_history(6), independent),
        (Valid::True, Valid::True)
    );
    assert_eq!(
        edn_verdicts(&independent_history(5), independent),
        (Valid::False, Valid::False),
        "5 was overwritten by 6, which a read saw"
    );
    let ops = read_edn_history(&independent_history(5), independent).unwrap();
    let result = check(&ops, find_model("cas-register").unwrap(), Limits::default()).unwrap();
    assert_eq!(result.keys, 2);
    assert_eq!(result.failures[0].key.as_deref(), Some("2"));
}
