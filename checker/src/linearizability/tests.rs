//! The checker's rules, one or more tests each, on hand-written histories.

use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::testing::HistoryBuilder;

fn check_with(model: &str, history: &[Op]) -> Linearizability {
    check(history, find_model(model).unwrap(), Limits::default()).unwrap()
}

fn register() -> HistoryBuilder {
    HistoryBuilder::default()
}

#[test]
fn a_sequential_history_of_a_register_is_valid() {
    let history = register()
        .call(1, "write", json!(1))
        .call(2, "read", json!(1))
        .call(1, "write", json!(2))
        .call(2, "read", json!(2))
        .build();
    let result = check_with("register", &history);
    assert_eq!(result.valid, Valid::True, "{result:?}");
    assert_eq!(
        (result.keys, result.keys_checked, result.ops_checked),
        (1, 1, 4)
    );
    assert!(result.failures.is_empty() && result.cause.is_none());
}

#[test]
fn rule_1_a_completion_without_an_invoke_is_an_error_naming_it() {
    let history = register()
        .call(1, "write", json!(1))
        .ok(2, "read", json!(1))
        .build();
    let error = check(&history, find_model("register").unwrap(), Limits::default()).unwrap_err();
    assert_eq!(
        error,
        CheckError::CompletionWithoutInvoke {
            index: 2,
            process: Process::Client(2)
        }
    );
}

#[test]
fn rule_1_after_info_the_process_may_invoke_again() {
    let history = register()
        .invoke(1, "write", json!(1))
        .info(1, "write", json!(1))
        .call(1, "read", json!(1))
        .build();
    assert_eq!(check_with("register", &history).valid, Valid::True);
}

#[test]
fn rule_2_fails_are_removed_and_nemesis_ops_ignored() {
    let failed_write_read_back = register()
        .nemesis("start")
        .invoke(1, "write", json!(1))
        .fail(1, "write", json!(1))
        .call(2, "read", json!(1))
        .nemesis("stop")
        .build();
    let result = check_with("register", &failed_write_read_back);
    assert_eq!(result.valid, Valid::False);
    assert_eq!(result.ops_checked, 1);
}

#[test]
fn rule_3_an_info_write_may_show_up_later_or_never() {
    let shows_up_later = register()
        .call(1, "write", json!(1))
        .invoke(2, "write", json!(2))
        .info(2, "write", json!(2))
        .call(3, "read", json!(1))
        .call(3, "read", json!(2))
        .build();
    assert_eq!(check_with("register", &shows_up_later).valid, Valid::True);

    let never = register()
        .call(1, "write", json!(1))
        .invoke(2, "write", json!(2))
        .call(3, "read", json!(1))
        .build();
    assert_eq!(check_with("register", &never).valid, Valid::True);

    let but_not_before_its_invoke = register()
        .call(3, "read", json!(2))
        .invoke(2, "write", json!(2))
        .info(2, "write", json!(2))
        .build();
    assert_eq!(
        check_with("register", &but_not_before_its_invoke).valid,
        Valid::False
    );
}

#[test]
fn rule_3_an_info_write_takes_effect_at_most_once() {
    let history = register()
        .invoke(1, "write", json!(1))
        .info(1, "write", json!(1))
        .call(2, "write", json!(2))
        .call(3, "read", json!(1))
        .call(3, "read", json!(2))
        .call(3, "read", json!(1))
        .build();
    assert_eq!(check_with("register", &history).valid, Valid::False);
}

#[test]
fn rule_4_operations_the_model_does_not_know_are_counted_apart() {
    let history = HistoryBuilder::default()
        .call(1, "acquire", None)
        .call(1, "renew", None)
        .call(1, "release", None)
        .build();
    let result = check_with("mutex", &history);
    assert_eq!(result.valid, Valid::True);
    assert_eq!((result.ops_checked, result.ops_ignored), (2, 1));
    assert_eq!(result.ignored_fs, ["renew"]);
}

#[test]
fn rule_5_a_read_of_nil_passes_and_values_come_from_the_completion() {
    let history = register()
        .call(1, "write", json!(1))
        .call(2, "read", None)
        .invoke(2, "read", json!("ignored"))
        .ok(2, "read", json!(1))
        .build();
    assert_eq!(check_with("register", &history).valid, Valid::True);
}

#[test]
fn rule_6_a_stale_read_after_a_completed_write_is_invalid() {
    let history = register()
        .call(1, "write", json!(1))
        .call(1, "write", json!(2))
        .call(2, "read", json!(1))
        .build();
    assert_eq!(check_with("register", &history).valid, Valid::False);
}

#[test]
fn rule_6_a_read_concurrent_with_a_write_may_see_either_value() {
    for seen in [1, 2] {
        let history = register()
            .call(1, "write", json!(1))
            .invoke(1, "write", json!(2))
            .invoke(2, "read", None)
            .ok(2, "read", json!(seen))
            .ok(1, "write", json!(2))
            .build();
        assert_eq!(check_with("register", &history).valid, Valid::True);
    }
}

#[test]
fn rule_7_keys_are_checked_apart_and_failures_name_their_key() {
    let history = register()
        .on("a")
        .call(1, "write", json!(1))
        .on("b")
        .call(2, "write", json!(2))
        .on("a")
        .call(3, "read", json!(1))
        .on("b")
        .call(3, "read", json!(1))
        .build();
    let result = check_with("register", &history);
    assert_eq!(result.valid, Valid::False);
    assert_eq!(result.keys, 2);
    assert_eq!(result.failures.len(), 1);
    assert_eq!(result.failures[0].key.as_deref(), Some("b"));
}

/// Writes of 0..n, each timed out, then reads of 1, 2 and 1 again, which no order allows:
/// the search must try every subset of the writes to know.
fn concurrent_info_writes(n: u64) -> Vec<Op> {
    let mut history = HistoryBuilder::default();
    for process in 0..n {
        history.invoke(process, "write", json!(process));
    }
    for process in 0..n {
        history.info(process, "write", json!(process));
    }
    history
        .call(n, "read", json!(1))
        .call(n, "read", json!(2))
        .call(n, "read", json!(1))
        .build()
}

#[test]
fn rule_8_the_time_limit_makes_the_verdict_unknown() {
    let limits = Limits {
        time: Duration::from_millis(100),
        memory_bytes: usize::MAX,
    };
    let started = Instant::now();
    let result = check(
        &concurrent_info_writes(40),
        find_model("register").unwrap(),
        limits,
    )
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(result.valid, Valid::Unknown);
    let cause = result.cause.unwrap();
    assert!(
        cause.starts_with("time limit 100ms reached after "),
        "{cause}"
    );
    assert!(result.states_explored > 0 && cause.ends_with(" states"));
}

#[test]
fn rule_8_the_memory_bound_makes_the_verdict_unknown() {
    let limits = Limits {
        time: Duration::from_secs(60),
        memory_bytes: 1 << 20,
    };
    let result = check(
        &concurrent_info_writes(40),
        find_model("register").unwrap(),
        limits,
    )
    .unwrap();
    assert_eq!(result.valid, Valid::Unknown);
    assert!(result
        .cause
        .unwrap()
        .starts_with("memory bound 1 MiB reached after "));
    assert!(result.peak_cache_bytes <= 1 << 20);
    assert!(result.peak_cache_bytes > 1 << 19);
}

#[test]
fn rule_8_equal_info_writes_do_not_blow_up() {
    // Forty timed-out writes of one value, and a read of it between two of another: the
    // search tries one of the equal writes, not every subset of them.
    let mut history = HistoryBuilder::default();
    for process in 0..40 {
        history.invoke(process, "write", json!(1));
    }
    for process in 0..40 {
        history.info(process, "write", json!(1));
    }
    history
        .call(40, "write", json!(2))
        .call(40, "read", json!(1))
        .call(40, "write", json!(2))
        .call(40, "read", json!(2));
    let result = check_with("register", &history.build());
    assert_eq!(result.valid, Valid::True);
    assert!(result.states_explored < 100, "{}", result.states_explored);
}

#[test]
fn rule_9_an_invalid_key_is_explained() {
    let history = register()
        .call(1, "write", json!(1))
        .invoke(1, "write", json!(2))
        .invoke(2, "read", None)
        .ok(1, "write", json!(2))
        .ok(2, "read", json!(3))
        .build();
    let result = check_with("register", &history);
    assert_eq!(result.valid, Valid::False);
    let explanation = &result.failures[0].explanation;
    let prefix: Vec<_> = explanation
        .linearized
        .iter()
        .map(|step| (step.op.index, step.state_after.clone()))
        .collect();
    assert_eq!(prefix, [(0, json!(1)), (2, json!(2))]);
    assert_eq!(
        (
            explanation.linearized_count,
            explanation.state_before.clone()
        ),
        (2, json!(null))
    );
    assert_eq!(explanation.refused_count, 1);
    let refused = &explanation.refused[0];
    assert_eq!(
        (refused.op.index, refused.op.completion_index),
        (3, Some(5))
    );
    assert_eq!(refused.op.value, Some(json!(3)));
    assert_eq!(refused.state, json!(2));
    assert_eq!(refused.reason, "read 3, but the register holds 2");

    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["valid"], json!(false));
    assert_eq!(
        json["failures"][0]["explanation"]["refused"][0]["op"]["outcome"],
        "ok"
    );
    let back: Linearizability = serde_json::from_value(json).unwrap();
    assert_eq!(back.failures[0].explanation, *explanation);
}

#[test]
fn rule_9_a_long_prefix_is_shown_by_its_last_ops() {
    let mut history = HistoryBuilder::default();
    for value in 0..150 {
        history.call(1, "write", json!(value));
    }
    history.call(2, "read", json!(-1));
    let result = check_with("register", &history.build());
    let explanation = &result.failures[0].explanation;
    assert_eq!(explanation.linearized_count, 150);
    assert_eq!(explanation.linearized.len(), EXPLAINED_OPS);
    assert_eq!(explanation.state_before, json!(49));
    assert_eq!(explanation.linearized[0].state_after, json!(50));
}

#[test]
fn unknown_verdicts_lose_to_invalid_ones() {
    let mut history: Vec<Op> = concurrent_info_writes(40)
        .into_iter()
        .map(|op| op.key("hard"))
        .collect();
    // Bigger than the hard key, so that it is searched first even on one core.
    let mut bad = HistoryBuilder::default();
    bad.on("bad");
    for value in 0..50 {
        bad.call(99, "write", json!(value));
    }
    bad.call(99, "read", json!(-1));
    let offset = history.len() as u64;
    history.extend(bad.build().into_iter().map(|op| {
        let (index, time) = (op.index + offset, op.time);
        op.at(index, time)
    }));
    let limits = Limits {
        time: Duration::from_secs(2),
        memory_bytes: usize::MAX,
    };
    let result = check(&history, find_model("register").unwrap(), limits).unwrap();
    assert_eq!(result.valid, Valid::False);
    assert_eq!(result.failures.len(), 1);
    assert_eq!(result.failures[0].key.as_deref(), Some("bad"));
}

#[test]
fn byte_counts_read_well() {
    assert_eq!(bytes(1 << 30), "1 GiB");
    assert_eq!(bytes(64 << 20), "64 MiB");
    assert_eq!(bytes(1536), "1.5 KiB");
    assert_eq!(bytes(100), "100 bytes");
}

#[test]
fn every_registered_model_is_found_by_name() {
    for model in MODELS {
        assert_eq!(find_model(model.name).unwrap().name, model.name);
        assert!(!model.fs().is_empty() && !model.summary.is_empty());
    }
    assert_eq!(MODELS.len(), 7);
    assert!(find_model("queue").is_none());
}

#[test]
fn rule_9_a_refusal_for_good_says_so() {
    let history = HistoryBuilder::default()
        .call(1, "add", json!(1))
        .call(1, "add", json!(2))
        .call(2, "read", json!([1]))
        .build();
    let result = check_with("set", &history);
    let explanation = &result.failures[0].explanation;
    assert_eq!(explanation.linearized_count, 2);
    assert_eq!(
        explanation.refused[0].reason,
        "the read lacks [2], for good"
    );
}

#[test]
fn rule_5_an_info_completion_keeps_its_invokes_value() {
    // Jepsen's clients write `:timed-out` as a timed-out op's value. Taken as the value, it
    // made this cas refuse the history ("a cas's value must be [expected, new]").
    let timed_out_cas = register()
        .call(1, "write", json!(1))
        .invoke(2, "cas", json!([1, 2]))
        .info(2, "cas", json!("timed-out"))
        .call(3, "read", json!(2))
        .build();
    assert_eq!(
        check_with("cas-register", &timed_out_cas).valid,
        Valid::True
    );
    // Taken as the value, this write of `timed-out` made the read of 2 impossible.
    let timed_out_write = register()
        .call(1, "write", json!(1))
        .invoke(2, "write", json!(2))
        .info(2, "write", json!("timed-out"))
        .call(3, "read", json!(2))
        .build();
    assert_eq!(check_with("register", &timed_out_write).valid, Valid::True);
    let never_written = register()
        .call(1, "write", json!(1))
        .invoke(2, "write", json!(2))
        .info(2, "write", json!("timed-out"))
        .call(3, "read", json!("timed-out"))
        .build();
    assert_eq!(check_with("register", &never_written).valid, Valid::False);
}

#[test]
fn rule_10_a_history_with_nothing_to_check_is_unknown() {
    let lock = register()
        .call(1, "acquire", None)
        .call(1, "release", None)
        .build();
    let result = check_with("cas-register", &lock);
    assert_eq!(result.valid, Valid::Unknown);
    assert_eq!((result.ops_checked, result.ops_ignored), (0, 2));
    assert_eq!(
        result.cause.as_deref(),
        Some(
            "nothing was checked: the history has no cas-register operation (read, write, cas) \
             that did not fail; its operations are acquire, release"
        )
    );
    let only_failed = register()
        .invoke(1, "write", json!(1))
        .fail(1, "write", None)
        .build();
    assert_eq!(check_with("register", &only_failed).valid, Valid::Unknown);
    let empty = check_with("set", &[]);
    assert_eq!(empty.valid, Valid::Unknown);
    assert_eq!(
        empty.cause.as_deref(),
        Some("nothing was checked: the history has no set operation (add, read) that did not fail")
    );
}

#[test]
fn a_grant_that_ends_with_its_write_is_released_by_that_write() {
    // Process 1's lock lives in its write's transaction: the write's commit frees it, so
    // process 2 is granted before process 1's `release` (a commit of nothing) is invoked.
    let mut builder = HistoryBuilder::default();
    builder
        .on("lock")
        .call(1, "acquire", None)
        .on("doc")
        .invoke(1, "add", json!(7))
        .on("lock")
        .invoke(2, "acquire", None)
        .on("doc")
        .ok(1, "add", json!(7))
        .on("lock")
        .ok(2, "acquire", None)
        .call(1, "release", None)
        .call(2, "release", None);
    let mut history = builder.build();
    assert_eq!(check_with("owner-mutex", &history).valid, Valid::False);
    history[1].ends_with_write = true;
    let result = check_with("owner-mutex", &history);
    assert_eq!(result.valid, Valid::True, "{result:?}");
    assert_eq!(result.ops_checked, 4, "two grants, each with its release");
}
