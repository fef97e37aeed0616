//! Rules 1 to 6 on histories made op by op.

use super::*;
use crate::lock_safety::check;
use crate::testing::HistoryBuilder;
use crate::{Op, OpType, Process};
use serde_json::{json, Value};

/// The double-grant tests' vocabulary: grants, releases and faults at times in milliseconds,
/// and the explanations of the double grants the history shows.
trait Grants {
    /// `process` asks at `at_ms` and is granted at `ok_ms` by `nodes`, for `validity_ms`.
    fn grant(
        &mut self,
        process: u64,
        at_ms: u64,
        ok_ms: u64,
        validity_ms: u64,
        nodes: &[&str],
    ) -> &mut Self;
    /// The last grant came from a library that renews its lease silently (a session).
    fn renewed_silently(&mut self) -> &mut Self;
    /// The last grant's lock lives with its holder's connection (a session lock).
    fn with_connection(&mut self) -> &mut Self;
    /// `process` renews its 2 s lease at `at_ms`, answered at `done_ms` as `outcome` says.
    fn renew(&mut self, process: u64, at_ms: u64, done_ms: u64, outcome: Op) -> &mut Self;
    fn release(&mut self, process: u64, at_ms: u64, outcome: OpType) -> &mut Self;
    fn fault(
        &mut self,
        f: &str,
        at_ms: u64,
        fault: &str,
        nodes: &[&str],
        value: Value,
        measured: Value,
    ) -> &mut Self;
    /// The explanation of each double grant found, in order.
    fn explained(&self) -> Vec<Explanation>;
}

impl Grants for HistoryBuilder {
    /// `process` asks at `at_ms` and is granted at `ok_ms` by `nodes`, for `validity_ms`.
    fn grant(
        &mut self,
        process: u64,
        at_ms: u64,
        ok_ms: u64,
        validity_ms: u64,
        nodes: &[&str],
    ) -> &mut Self {
        let mut invoke = Op::new(Process::Client(process), OpType::Invoke, "acquire").key("lock");
        invoke.ttl_ms = Some(validity_ms);
        let mut ok = Op::new(Process::Client(process), OpType::Ok, "acquire")
            .key("lock")
            .token(format!("t{process}"))
            .nodes(nodes.iter().map(|n| n.to_string()).collect());
        ok.validity_ms = Some(validity_ms);
        self.at(at_ms, invoke).at(ok_ms, ok)
    }

    /// The last grant came from a library that renews its lease silently (a session).
    fn renewed_silently(&mut self) -> &mut Self {
        let ok = self.last_mut().expect("a grant");
        ok.renewal = Some(crate::Renewal::Silent);
        self
    }

    /// The last grant's lock lives with its holder's connection (a session lock).
    fn with_connection(&mut self) -> &mut Self {
        let ok = self.last_mut().expect("a grant");
        ok.renewal = Some(crate::Renewal::Connection);
        self
    }

    /// `process` renews its 2 s lease at `at_ms`, answered at `done_ms` as `outcome` says.
    fn renew(&mut self, process: u64, at_ms: u64, done_ms: u64, outcome: Op) -> &mut Self {
        let mut invoke = Op::new(Process::Client(process), OpType::Invoke, "renew")
            .key("lock")
            .token(format!("t{process}"));
        invoke.ttl_ms = Some(2_000);
        self.at(at_ms, invoke).at(done_ms, outcome)
    }

    fn release(&mut self, process: u64, at_ms: u64, outcome: OpType) -> &mut Self {
        let op = |kind| Op::new(Process::Client(process), kind, "release").key("lock");
        self.at(at_ms, op(OpType::Invoke))
            .at(at_ms + 1, op(outcome))
    }

    fn fault(
        &mut self,
        f: &str,
        at_ms: u64,
        fault: &str,
        nodes: &[&str],
        value: Value,
        measured: Value,
    ) -> &mut Self {
        let mut op = Op::new(Process::NEMESIS, OpType::Info, f)
            .nodes(nodes.iter().map(|n| n.to_string()).collect());
        op.fault = Some(fault.to_string());
        op.value = (!value.is_null()).then_some(value);
        op.measured = (!measured.is_null()).then_some(measured);
        self.at(at_ms, op)
    }

    /// The explanation of each double grant found, in order.
    fn explained(&self) -> Vec<Explanation> {
        let safety = check(&self.build_in_time_order());
        safety
            .double_grants
            .iter()
            .chain(&safety.fenced_double_grants)
            .map(|grant| {
                grant
                    .explanation
                    .clone()
                    .expect("every double grant is explained")
            })
            .collect()
    }
}

fn causes(explained: &[Explanation]) -> Vec<Cause> {
    explained.iter().map(|e| e.cause).collect()
}

const REDLOCK: [&str; 5] = ["n1", "n2", "n3", "n4", "n5"];

#[test]
fn a_node_restarted_between_two_overlapping_quorums_is_the_restart_hazard() {
    let mut history = HistoryBuilder::default();
    history
        .grant(0, 1_000, 1_010, 10_000, &["n1", "n2", "n3"])
        .fault("start", 2_000, "kill", &["n3"], Value::Null, Value::Null)
        .fault("stop", 2_100, "kill", &["n3"], Value::Null, Value::Null)
        .grant(1, 3_000, 3_010, 10_000, &["n3", "n4", "n5"]);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::RestartHazard]);
    assert_eq!(
        explained[0].sentence,
        "n3 granted both: it was killed at 2.000s and came back at 2.100s without the key, \
         while process 0's lease ran until 11.000s; process 1's quorum n3,n4,n5 overlapped process \
         0's n1,n2,n3 only in n3"
    );
    assert_eq!(explained[0].nodes, vec!["n3"]);
    assert_eq!(explained[0].ops, vec![0, 2, 3, 4]);
}

#[test]
fn two_grants_by_the_same_quorum_say_so_rather_than_overlapping_only_in_all_of_it() {
    let mut history = HistoryBuilder::default();
    history
        .grant(0, 1_000, 1_010, 10_000, &REDLOCK)
        .fault("start", 2_000, "kill", &REDLOCK, Value::Null, Value::Null)
        .fault("stop", 2_100, "kill", &REDLOCK, Value::Null, Value::Null)
        .grant(1, 3_000, 3_010, 10_000, &REDLOCK);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::RestartHazard]);
    let sentence = &explained[0].sentence;
    assert!(
        sentence.ends_with("; process 1's quorum was process 0's, n1,n2,n3,n4,n5"),
        "{sentence}"
    );
}

#[test]
fn a_kill_that_ended_before_the_first_grant_or_after_the_second_explains_nothing() {
    for (start, stop) in [(100, 900), (3_500, 3_600)] {
        let mut history = HistoryBuilder::default();
        history
            .fault("start", start, "kill", &["n3"], Value::Null, Value::Null)
            .fault("stop", stop, "kill", &["n3"], Value::Null, Value::Null)
            .grant(0, 1_000, 1_010, 10_000, &["n1", "n2", "n3"])
            .grant(1, 3_000, 3_010, 10_000, &["n3", "n4", "n5"]);
        let explained = history.explained();
        assert_eq!(
            causes(&explained),
            vec![Cause::Unexplained],
            "kill {start}-{stop}"
        );
        assert!(explained[0]
            .sentence
            .contains("n3 granted both, and was neither restarted"));
    }
}

/// sherlock's `expire=None`: its script deletes the key it has just set, so the one server
/// grants every client, with nothing happening to it.
#[test]
fn a_node_that_granted_both_in_a_run_with_no_fault_did_not_keep_the_lock() {
    let mut history = HistoryBuilder::default();
    history
        .grant(0, 1_000, 1_010, 2_000, &["n1"])
        .grant(1, 1_500, 1_510, 2_000, &["n1"]);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::NoExclusion]);
    assert_eq!(
        explained[0].sentence,
        "n1 granted process 1 the lock at 1.510s while process 0's lease ran until 3.000s, in \
         a run with no fault and no release between: the lock process 0 was granted at 1.010s \
         did not keep its key for the lease it reported"
    );
    // Any fault in the run, even one long over, leaves it to the user: unexplained.
    history
        .fault("start", 10, "pause", &["n2"], Value::Null, Value::Null)
        .fault("stop", 20, "pause", &["n2"], Value::Null, Value::Null);
    assert_eq!(causes(&history.explained()), vec![Cause::Unexplained]);
}

/// python-etcd3's `with` block: the second acquire waited its library's 10 s, returned
/// False, and the block was entered all the same.
#[test]
fn grants_naming_no_nodes_in_a_run_with_no_fault_are_no_exclusion() {
    let mut history = HistoryBuilder::default();
    history
        .grant(0, 250, 255, 20_000, &[])
        .grant(1, 270, 10_281, 20_000, &[]);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::NoExclusion]);
    assert_eq!(
        explained[0].sentence,
        "process 1 was granted at 10.281s, its acquire having taken 10.0 s, while process 0's \
         lease ran until 20.250s, in a run with no fault and no release between: the library \
         let it in while process 0 held the lock"
    );
}

#[test]
fn a_single_node_restarted_empty_is_the_restart_hazard_too() {
    let mut history = HistoryBuilder::default();
    history
        .grant(0, 1_000, 1_001, 5_000, &["n1"])
        .fault(
            "start",
            1_500,
            "kill-holder",
            &["n1"],
            Value::Null,
            json!({"holder": 0, "granted_by": ["n1"]}),
        )
        .fault(
            "stop",
            1_600,
            "kill-holder",
            &["n1"],
            Value::Null,
            Value::Null,
        )
        .grant(1, 1_700, 1_701, 5_000, &["n1"]);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::RestartHazard]);
    assert!(explained[0]
        .sentence
        .ends_with("n1 then granted process 1 at 1.701s"));
}

#[test]
fn a_clock_set_forward_on_the_shared_node_is_a_clock_jump_and_backward_explains_nothing() {
    for (offset, cause) in [(3_000.0, Cause::ClockJump), (-3_000.0, Cause::Unexplained)] {
        let mut history = HistoryBuilder::default();
        history
            .grant(0, 1_000, 1_010, 10_000, &REDLOCK[..3])
            .fault(
                "start",
                2_000,
                "clock-holder",
                &["n2", "n3"],
                json!({"offset_ms": 3000}),
                json!({"skew_ms": {"n2": offset, "n3": offset + 0.3}, "holder": 0}),
            )
            .grant(1, 3_000, 3_010, 10_000, &REDLOCK[1..4])
            .fault(
                "stop",
                4_000,
                "clock-holder",
                &["n2", "n3"],
                Value::Null,
                Value::Null,
            );
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![cause], "offset {offset}");
        if cause == Cause::ClockJump {
            assert!(explained[0].sentence.starts_with(
                "n2 and n3 granted both: their clocks were set +3000 ms at 2.000s, expiring the \
                 key early, while process 0's lease ran until 11.000s"
            ), "{}", explained[0].sentence);
        }
    }
}

#[test]
fn the_lock_on_another_master_after_its_master_failed_over_is_a_failover() {
    let mut history = HistoryBuilder::default();
    history
        .grant(0, 1_000, 1_001, 5_000, &["n1"])
        .fault(
            "start",
            2_000,
            "failover",
            &[],
            json!({"pick": 1}),
            json!({"master": "n1", "asked": "n2"}),
        )
        .grant(1, 3_000, 3_001, 5_000, &["n2"])
        .fault("stop", 3_500, "failover", &[], Value::Null, Value::Null);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::Failover]);
    assert_eq!(
        explained[0].sentence,
        "process 0 held the lock on n1 from 1.001s; the Sentinels were asked to fail over n1 \
         at 2.000s; n2, promoted, granted process 1 at 3.001s while process 0's lease ran \
         until 6.000s: the key process 0 set on n1 had not reached n2"
    );
}

#[test]
fn a_failover_names_the_promotion_the_nemesis_recorded() {
    let mut promoted = master(&["n2"]);
    promoted.measured = Some(json!({"from": ["n1"], "by": "sentinel"}));
    let mut history = HistoryBuilder::default();
    history
        .at(0, master(&["n1"]))
        .grant(0, 1_000, 1_001, 5_000, &["n1"])
        .fault("start", 2_000, "kill", &["n1"], Value::Null, Value::Null)
        .at(3_200, promoted)
        .grant(1, 3_000, 3_001, 5_000, &["n2"]);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::Failover]);
    assert!(
        explained[0].sentence.contains(
            "n1 was killed at 2.000s; n2, which became master at 3.200s (promoted by sentinel), \
         granted process 1 at 3.001s"
        ),
        "{}",
        explained[0].sentence
    );
    assert_eq!(explained[0].spells.len(), 2);
}

#[test]
fn a_failover_under_way_at_either_grant_is_a_failover() {
    // Asked before the first grant, which came from the master being replaced.
    let failover = |history: &mut HistoryBuilder, master: &str| {
        history
            .fault(
                "start",
                500,
                "failover",
                &[],
                Value::Null,
                json!({"master": master}),
            )
            .fault("stop", 3_500, "failover", &[], Value::Null, Value::Null);
    };
    let mut history = HistoryBuilder::default();
    history.at(0, master(&["n1"]));
    failover(&mut history, "n1");
    history
        .grant(0, 1_000, 1_001, 5_000, &["n1"])
        .grant(1, 1_200, 1_201, 5_000, &["n2"])
        .at(1_400, master(&["n2"]));
    assert_eq!(
        causes(&history.explained()),
        vec![Cause::Failover],
        "{:#?}",
        history.explained()
    );

    // The new master granted first, the one being replaced just after.
    let mut history = HistoryBuilder::default();
    history.at(0, master(&["n1"]));
    failover(&mut history, "n1");
    history
        .grant(0, 1_000, 1_001, 5_000, &["n2"])
        .grant(1, 1_000, 1_002, 5_000, &["n1"])
        .at(1_300, master(&["n1", "n2"]));
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::Failover]);
    assert!(
        explained[0]
            .sentence
            .ends_with("both granted before the old master stepped down"),
        "{}",
        explained[0].sentence
    );
}

/// The nemesis's record of who is master.
fn master(nodes: &[&str]) -> Op {
    Op::new(Process::NEMESIS, OpType::Info, "master")
        .nodes(nodes.iter().map(|n| n.to_string()).collect())
}

#[test]
fn a_node_granting_when_the_deployment_named_another_master_is_a_split_brain() {
    let mut history = HistoryBuilder::default();
    history
        .at(0, master(&["n1"]))
        .fault(
            "start",
            100,
            "failover",
            &[],
            Value::Null,
            json!({"master": "n1"}),
        )
        .at(500, master(&["n3"]))
        .grant(0, 2_000, 2_001, 5_000, &["n1"])
        .grant(1, 3_000, 3_001, 5_000, &["n3"]);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::SplitBrain]);
    assert_eq!(
        explained[0].sentence,
        "n1 granted process 0 at 2.001s as master, though the deployment had named it master \
         no more since 0.500s, naming n3 instead; process 0 held the lock on n1 from 2.001s, \
         and n3 granted process 1 at 3.001s, while process 0's lease ran until 7.000s: two \
         masters at once"
    );
}

#[test]
fn a_master_cut_off_before_it_granted_and_still_cut_off_at_the_second_grant_is_a_split_brain() {
    let grudge = json!({"grudge": {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}});
    let mut history = HistoryBuilder::default();
    history
        .fault(
            "start",
            500,
            "partition-primary",
            &["n1", "n2", "n3"],
            Value::Null,
            grudge.clone(),
        )
        .grant(0, 1_000, 1_001, 5_000, &["n1"])
        .grant(1, 3_000, 3_001, 5_000, &["n2"])
        .fault(
            "stop",
            5_000,
            "partition-primary",
            &["n1", "n2", "n3"],
            Value::Null,
            Value::Null,
        );
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::SplitBrain]);
    assert!(explained[0].sentence.starts_with(
        "n1 was cut off from n2,n3 at 0.500s and went on granting as master: process 0 at 1.001s; \
         n2, promoted on the other side"
    ), "{}", explained[0].sentence);

    // Cut off after its grant: the key was lost in a failover, not granted twice by two masters.
    let mut history = HistoryBuilder::default();
    history
        .grant(0, 1_000, 1_001, 5_000, &["n1"])
        .fault(
            "start",
            1_500,
            "partition-primary",
            &["n1", "n2", "n3"],
            Value::Null,
            grudge,
        )
        .grant(1, 3_000, 3_001, 5_000, &["n2"]);
    assert_eq!(
        causes(&history.explained()),
        vec![Cause::Failover],
        "{:#?}",
        history.explained()
    );
}

#[test]
fn an_old_master_granting_just_after_the_heal_that_ended_its_cut_off_is_a_split_brain() {
    // As in sentinel-failover-wait: n1, cut off, still grants for a moment after the heal,
    // before the Sentinels make it a replica, though the nemesis saw it demoted already.
    let grudge = json!({"grudge": {"n1": ["n2", "n3"], "n2": ["n1"], "n3": ["n1"]}});
    let mut promoted = master(&["n1", "n3"]);
    promoted.measured = Some(json!({"from": ["n1"], "by": "sentinel"}));
    let mut history = HistoryBuilder::default();
    history
        .at(0, master(&["n1"]))
        .fault(
            "start",
            500,
            "partition-primary",
            &["n1", "n2", "n3"],
            Value::Null,
            grudge,
        )
        .at(2_000, promoted)
        .fault(
            "stop",
            5_000,
            "partition-primary",
            &["n1", "n2", "n3"],
            Value::Null,
            Value::Null,
        )
        .grant(1, 5_100, 5_101, 5_000, &["n3"])
        .at(5_200, master(&["n3"]))
        .grant(0, 5_300, 5_301, 5_000, &["n1"]);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::SplitBrain]);
    assert_eq!(
        explained[0].sentence,
        "n1 was cut off from n2,n3 at 0.500s, healed at 5.000s, and n3 became master at 2.000s \
         (promoted by sentinel) meanwhile; n1 went on granting as master after the heal, until \
         it was made a replica: process 0 at 5.301s; n3 granted process 1 at 5.101s, while \
         process 1's lease ran until 10.100s: two masters at once"
    );

    // Long after the heal, the old master's grant is no longer put down to it.
    let mut history = HistoryBuilder::default();
    let mut promoted = master(&["n1", "n3"]);
    promoted.measured = Some(json!({"from": ["n1"], "by": "sentinel"}));
    history
        .fault(
            "start",
            500,
            "partition-primary",
            &["n1", "n2", "n3"],
            Value::Null,
            json!({}),
        )
        .at(2_000, promoted)
        .fault(
            "stop",
            5_000,
            "partition-primary",
            &["n1", "n2", "n3"],
            Value::Null,
            Value::Null,
        )
        .grant(1, 20_000, 20_001, 5_000, &["n3"])
        .grant(0, 20_300, 20_301, 5_000, &["n1"]);
    assert_ne!(causes(&history.explained()), vec![Cause::SplitBrain]);
}

#[test]
fn another_master_granting_with_nothing_done_to_the_first_is_unexplained() {
    let mut history = HistoryBuilder::default();
    history
        .grant(0, 1_000, 1_001, 5_000, &["n1"])
        .fault("start", 2_000, "kill", &["n3"], Value::Null, Value::Null)
        .grant(1, 3_000, 3_001, 5_000, &["n2"]);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::Unexplained]);
    assert!(
        explained[0].sentence.contains(
            "n1 granted the first, n2 the second, and nothing happened to n1 between them; \
         faults active: n3 was killed at 2.000s; look at this one"
        ),
        "{}",
        explained[0].sentence
    );
}

/// Processes 0 to 2 on workers client-0 to client-2.
fn workers(history: &mut HistoryBuilder) {
    for process in 0..3 {
        let op = |kind| Op::new(Process::Client(process), kind, "read").key("other");
        history.at(1, op(OpType::Invoke)).at(2, op(OpType::Ok));
    }
}

/// A scripted cut of some of the holder's links names neither the holder nor its nodes, yet
/// it is a fault on it: the holder that outlived its lease under it is not told as a slow
/// holder "with no fault on it".
#[test]
fn a_holder_whose_links_were_cut_is_no_slow_holder() {
    let mut history = HistoryBuilder::default();
    workers(&mut history);
    let links = &["g0->n1", "g0->n2", "g0->n3"];
    history
        .grant(0, 1_000, 1_001, 1_000, &[])
        .fault("start", 1_200, "link-drop", links, Value::Null, Value::Null)
        .grant(1, 2_500, 2_501, 5_000, &[])
        .fault("stop", 3_000, "link-drop", links, Value::Null, Value::Null)
        .release(0, 5_100, OpType::Ok);
    assert_eq!(causes(&history.explained()), vec![Cause::Unexplained]);
}

#[test]
fn a_holder_frozen_past_its_lease_is_a_zombie_and_one_untouched_a_slow_holder() {
    for (frozen, cause) in [(true, Cause::Zombie), (false, Cause::SlowHolder)] {
        let mut history = HistoryBuilder::default();
        workers(&mut history);
        history
            .grant(0, 1_000, 1_001, 1_000, &["n1"])
            .grant(1, 2_500, 2_501, 5_000, &["n1"])
            .release(0, 5_100, OpType::Ok);
        if frozen {
            history
                .fault(
                    "start",
                    1_100,
                    "client-pause",
                    &["client-0"],
                    json!({"pause_ms": 4000}),
                    Value::Null,
                )
                .fault(
                    "stop",
                    5_000,
                    "client-pause",
                    &["client-0"],
                    Value::Null,
                    Value::Null,
                );
        }
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![cause]);
        let tail =
            "its lease ended at 2.000s; process 1 was granted at 2.501s; process 0 went on as \
                    holder until 5.100s";
        let expected = if frozen {
            format!("process 0 (on client-0) was frozen from 1.100s to 5.000s, inside its critical section; {tail}")
        } else {
            format!(
                "process 0 held the lock past its lease with no fault on it or its nodes: {tail}"
            )
        };
        assert_eq!(explained[0].sentence, expected);
    }
}

/// Wherever the nemesis records the stop of a client pause after its thaw, the zombie is the
/// same and its window ends at the thaw: the rules read when the fault acted, not when it was
/// logged.
#[test]
fn a_zombie_is_shown_frozen_until_its_thaw_however_late_the_stop_is_recorded() {
    for thaw_ms in [3_000, 4_200, 5_000] {
        for late_ms in [0, 1, 250, 999, 1_900] {
            let mut history = HistoryBuilder::default();
            workers(&mut history);
            history
                .grant(0, 1_000, 1_001, 1_000, &["n1"])
                .grant(1, 2_500, 2_501, 5_000, &["n1"])
                .fault(
                    "start",
                    1_100,
                    "client-pause",
                    &["client-0"],
                    json!({"pause_ms": thaw_ms - 1_100}),
                    Value::Null,
                )
                .release(0, thaw_ms + 1, OpType::Ok)
                .fault(
                    "stop",
                    thaw_ms + late_ms,
                    "client-pause",
                    &["client-0"],
                    Value::Null,
                    json!({"ended_ms": thaw_ms as f64}),
                );
            let explained = history.explained();
            assert_eq!(causes(&explained), vec![Cause::Zombie], "{late_ms} ms late");
            let shown = format!(
                "process 0 (on client-0) was frozen from 1.100s to {}, inside its critical section",
                seconds(thaw_ms as f64)
            );
            assert!(
                explained[0].sentence.starts_with(&shown),
                "{late_ms} ms late: {}",
                explained[0].sentence
            );
        }
    }
}

/// python-redis-lock under kills: its renewal thread renewed the lease until n1 came back
/// empty, then failed; the lease ran out under the holder, and n1 granted the next client.
#[test]
fn a_renewing_holder_whose_node_came_back_empty_is_the_restart_hazard() {
    for renews in [true, false] {
        let mut history = HistoryBuilder::default();
        workers(&mut history);
        history.grant(0, 1_000, 1_001, 1_000, &["n1"]);
        if renews {
            let renew = |kind| {
                let mut op = Op::new(Process::Client(0), kind, "renew").key("lock");
                op.ttl_ms = Some(1_000);
                op
            };
            history
                .at(1_600, renew(OpType::Invoke))
                .at(1_601, renew(OpType::Ok))
                .at(2_300, renew(OpType::Invoke))
                .at(2_301, renew(OpType::Fail));
        }
        history
            .fault("start", 1_800, "kill", &["n1"], Value::Null, Value::Null)
            .fault("stop", 1_870, "kill", &["n1"], Value::Null, Value::Null)
            .grant(1, 2_700, 2_701, 1_000, &["n1"])
            .release(0, 3_000, OpType::Ok);
        let explained = history.explained();
        let expected = if renews {
            Cause::RestartHazard
        } else {
            Cause::Unexplained
        };
        assert_eq!(causes(&explained), vec![expected], "{explained:#?}");
        if renews {
            assert!(
                explained[0].sentence.starts_with(
                    "process 0 renews its lease, and during its hold n1 was killed at 1.800s, \
                 back at 1.870s, without its key"
                ),
                "{}",
                explained[0].sentence
            );
        }
    }
}

/// A `renew` op of process 0 on `lock`, for 3 s, with its error.
fn renew(kind: OpType, error: Option<&str>) -> Op {
    let mut op = Op::new(Process::Client(0), kind, "renew").key("lock");
    op.ttl_ms = Some(3_000);
    op.error = error.map(str::to_string);
    op
}

/// python-redis-lock with its server stalled past the client's socket timeout: the renewal
/// in flight times out, its renewal thread ends, and the holder goes on past its lease. A
/// renewal tried again after the failure (a watchdog that keeps at it) is no such story.
#[test]
fn a_holder_whose_library_stopped_renewing_after_a_failed_renewal_is_renewal_stopped() {
    for tried_again in [false, true] {
        let mut history = HistoryBuilder::default();
        workers(&mut history);
        history.grant(0, 1_000, 1_001, 2_000, &["n1"]);
        history
            .at(1_660, renew(OpType::Invoke, None))
            .at(1_662, renew(OpType::Ok, None))
            .fault("start", 2_200, "pause", &["n1"], Value::Null, Value::Null)
            .at(2_330, renew(OpType::Invoke, None))
            .at(
                3_330,
                renew(
                    OpType::Info,
                    Some("TimeoutError: Timeout reading from socket"),
                ),
            )
            .fault("stop", 3_700, "pause", &["n1"], Value::Null, Value::Null);
        if tried_again {
            history
                .at(3_990, renew(OpType::Invoke, None))
                .at(3_992, renew(OpType::Ok, None));
        }
        history
            .grant(1, 6_000, 6_001, 2_000, &["n1"])
            .release(0, 7_000, OpType::Ok);
        let explained = history.explained();
        if tried_again {
            assert_ne!(causes(&explained), vec![Cause::RenewalStopped]);
            continue;
        }
        assert_eq!(causes(&explained), vec![Cause::RenewalStopped]);
        assert_eq!(
            explained[0].sentence,
            "process 0's last renewal came back at 3.330s without success (TimeoutError: \
             Timeout reading from socket) while n1 was paused at 2.200s, resumed at 3.700s; no \
             renewal followed, and nothing told the holder it had lost the lock, though the fault was over at 3.700s, \
             before its lease ended: one more renewal would have kept the lock: its lease ended at \
             4.660s; process 1 was granted at 6.001s; process 0 went on as holder until 7.000s"
        );
    }
}

/// From a busy run of `python-redis-lock-renewal-dies` (seed 7): process 0's renewal was
/// asked while n1 was paused, the lease ran out in the pause, the second grant came at the
/// resume, and the renewal came back failed 7 ms after it. A renewal asked after the second
/// grant is no story of this kind.
#[test]
fn a_renewal_in_flight_when_the_lease_ran_out_that_then_failed_is_renewal_stopped() {
    for asked_after_the_grant in [false, true] {
        let mut history = HistoryBuilder::default();
        workers(&mut history);
        history.grant(0, 1_000, 1_001, 3_000, &["n1"]);
        history.fault("start", 1_700, "pause", &["n1"], Value::Null, Value::Null);
        if !asked_after_the_grant {
            history.at(3_000, renew(OpType::Invoke, None));
        }
        history.grant(1, 4_000, 4_012, 3_000, &["n1"]).fault(
            "stop",
            4_014,
            "pause",
            &["n1"],
            Value::Null,
            Value::Null,
        );
        if asked_after_the_grant {
            history.at(4_016, renew(OpType::Invoke, None));
        }
        history
            .at(
                4_019,
                renew(
                    OpType::Info,
                    Some("TimeoutError: Timeout reading from socket"),
                ),
            )
            .release(0, 9_000, OpType::Ok);
        let explained = history.explained();
        if asked_after_the_grant {
            assert_ne!(causes(&explained), vec![Cause::RenewalStopped]);
        } else {
            assert_eq!(causes(&explained), vec![Cause::RenewalStopped]);
        }
    }
}

#[test]
fn a_pause_of_another_worker_does_not_make_a_zombie() {
    let mut history = HistoryBuilder::default();
    workers(&mut history);
    history
        .grant(0, 1_000, 1_001, 1_000, &["n1"])
        .fault(
            "start",
            1_100,
            "client-pause",
            &["client-2"],
            json!({"pause_ms": 4000}),
            Value::Null,
        )
        .grant(1, 2_500, 2_501, 5_000, &["n1"])
        .release(0, 5_100, OpType::Ok);
    assert_eq!(causes(&history.explained()), vec![Cause::SlowHolder]);
}

#[test]
fn a_holder_whose_links_were_cut_just_after_its_grant_is_cut_off() {
    let mut history = HistoryBuilder::default();
    workers(&mut history);
    history
        .grant(0, 1_000, 1_001, 1_000, &["n1"])
        .fault(
            "start",
            1_050,
            "link-drop-holder",
            &["g0->n1"],
            Value::Null,
            json!({"holder": 0, "granted_by": ["n1"]}),
        )
        .grant(1, 2_500, 2_501, 5_000, &["n1"])
        .fault(
            "stop",
            4_000,
            "link-drop-holder",
            &["g0->n1"],
            Value::Null,
            Value::Null,
        )
        .release(0, 5_100, OpType::Ok);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::CutOffHolder]);
    assert!(explained[0].sentence.starts_with(
        "process 0 was cut off just after its grant at 1.001s (link-drop-holder, the links to n1 \
         from client group g0 were cut at 1.050s, restored at 4.000s)"
    ), "{}", explained[0].sentence);
}

/// The holder asks its library whether it still holds the lock (`held`), at `at_ms`.
fn told(history: &mut HistoryBuilder, process: u64, at_ms: u64, held: bool) {
    let op = |kind| Op::new(Process::Client(process), kind, "held").key("lock");
    history
        .at(at_ms, op(OpType::Invoke))
        .at(at_ms + 1, op(OpType::Ok).value(held));
}

#[test]
fn a_holder_told_it_still_held_after_the_next_grant_and_its_cut_is_stale_ownership() {
    // kazoo's `is_acquired` after the session was lost (#282): the holder, cut off, lost its
    // session; after the cut it asked and was told yes. Told yes only while it was still cut
    // off, or told no, it is the cut-off holder it was.
    for (asks, cause) in [
        (
            &[(3_000, true), (4_500, true), (4_800, true)][..],
            Cause::StaleOwnership,
        ),
        (&[(3_000, true)][..], Cause::CutOffHolder),
        (&[(3_000, true), (4_500, false)][..], Cause::CutOffHolder),
    ] {
        let mut history = HistoryBuilder::default();
        workers(&mut history);
        history
            .grant(0, 1_000, 1_001, 1_000, &["n1"])
            .renewed_silently();
        history
            .fault(
                "start",
                1_050,
                "link-drop-holder",
                &["g0->n1"],
                Value::Null,
                json!({"holder": 0, "granted_by": ["n1"]}),
            )
            .grant(1, 2_500, 2_501, 5_000, &["n1"])
            .fault(
                "stop",
                4_000,
                "link-drop-holder",
                &["g0->n1"],
                Value::Null,
                Value::Null,
            );
        for &(at, held) in asks {
            told(&mut history, 0, at, held);
        }
        history.release(0, 5_100, OpType::Ok);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![cause], "asked {asks:?}");
        if cause == Cause::StaleOwnership {
            assert_eq!(
                explained[0].sentence,
                "process 0 asked its library at 4.800s whether it still held the lock and was \
                 told yes, 2.3 s after process 1 was granted it and 0.8 s after the last fault \
                 on it was over (link-drop-holder, 1.050s-4.000s); it was told yes 3 times in \
                 its hold; its lease ended at 2.000s; process 1 was granted at 2.501s; process \
                 0 went on as holder until 5.100s"
            );
        }
    }
}

#[test]
fn a_silently_renewed_holder_cut_off_after_its_promised_lease_is_cut_off_all_the_same() {
    // Curator under load (zookeeper-cut-off-holder, busy): the acquire took 1.8 of its 2 s,
    // so the lease as promised ended before the cut; the session lived on until the cut.
    // Without silent renewal, the holder had already outlived its lease: the cut explains
    // nothing.
    for (silent, cause) in [(true, Cause::CutOffHolder), (false, Cause::Unexplained)] {
        let mut history = HistoryBuilder::default();
        workers(&mut history);
        history.grant(0, 1_000, 2_800, 2_000, &["n1"]);
        if silent {
            history.renewed_silently();
        }
        history
            .fault(
                "start",
                3_100,
                "link-drop-holder",
                &["g0->n1"],
                Value::Null,
                json!({"holder": 0, "granted_by": ["n1"]}),
            )
            .grant(1, 5_000, 5_001, 2_000, &["n1"])
            .release(0, 6_000, OpType::Ok);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![cause], "silent: {silent}");
        if silent {
            assert!(
                explained[0].sentence.starts_with(
                    "process 0 was granted at 2.800s a lock its library renews silently, and \
                     was cut off during its hold (link-drop-holder, the links to n1 from client \
                     group g0 were cut at 3.100s"
                ),
                "{}",
                explained[0].sentence
            );
        }
    }
}

#[test]
fn a_late_release_that_succeeded_between_two_live_leases_is_a_hijack() {
    // A release that failed deleted nothing: in a run with no fault, the lock kept no key.
    for (outcome, cause) in [
        (OpType::Ok, Cause::Hijack),
        (OpType::Fail, Cause::NoExclusion),
    ] {
        let mut history = HistoryBuilder::default();
        workers(&mut history);
        history
            .grant(0, 1_000, 1_001, 1_000, &["n1"])
            .grant(1, 2_500, 2_501, 5_000, &["n1"])
            .release(0, 3_000, outcome)
            .grant(2, 3_500, 3_501, 5_000, &["n1"]);
        let explained = history.explained();
        // Process 0 was a slow holder over process 1's grant; process 2's came after its
        // release deleted process 1's key.
        assert_eq!(
            causes(&explained),
            vec![Cause::SlowHolder, cause],
            "{outcome:?}"
        );
        if cause == Cause::Hijack {
            assert_eq!(
                explained[1].sentence,
                "process 0 released the key at 3.000s, after its own lease had ended at \
                 2.000s, and so deleted process 1's key: process 2 was granted at 3.501s \
                 while process 1's lease ran until 7.500s"
            );
        }
    }
}

#[test]
fn a_release_that_never_came_back_may_have_deleted_the_next_holders_key() {
    // del-release under link faults (fault sweep, busy, seed 2): process 0's DEL, asked while
    // its links were slowed by about a second, timed out; process 1 was granted after it was
    // asked and lost its key before process 2 was granted, with no fault on n1 itself. A
    // release that failed deleted nothing. (The link faults are left out: no rule needs them.)
    for outcome in [OpType::Info, OpType::Fail] {
        let mut history = HistoryBuilder::default();
        workers(&mut history);
        let release = |kind| Op::new(Process::Client(0), kind, "release").key("lock");
        history
            .grant(0, 4_767, 4_771, 2_000, &["n1"])
            .at(6_023, release(OpType::Invoke))
            .grant(1, 6_775, 6_782, 2_000, &["n1"])
            .at(7_024, release(outcome))
            .grant(2, 7_684, 7_687, 2_000, &["n1"])
            .release(1, 7_840, OpType::Ok);
        let explained = history.explained();
        match outcome {
            OpType::Info => {
                assert_eq!(causes(&explained), vec![Cause::Hijack]);
                assert_eq!(
                    explained[0].sentence,
                    "process 0's release asked at 6.023s never came back (it gave up at \
                     7.024s), and a release that checks no token deletes whoever holds the key \
                     whenever it lands: it may have deleted process 1's key: process 2 was \
                     granted at 7.687s while process 1's lease ran until 8.775s"
                );
            }
            // No fault in this history: a lock that kept no key.
            _ => assert_eq!(causes(&explained), vec![Cause::NoExclusion]),
        }
    }
}

#[test]
fn a_release_held_up_by_a_paused_server_that_deleted_the_key_set_meanwhile_is_a_hijack() {
    // del-release under `kill,pause` (fault sweep, seed 2): n1 is paused; process 0's release
    // (a DEL, no token) and process 1's acquire wait in it. Resumed, n1 sets process 1's key,
    // then deletes it for process 0, which is granted again: both hold the lock.
    let mut history = HistoryBuilder::default();
    workers(&mut history);
    let release = |kind| Op::new(Process::Client(0), kind, "release").key("lock");
    let mut asked = Op::new(Process::Client(1), OpType::Invoke, "acquire").key("lock");
    asked.ttl_ms = Some(2_000);
    let mut granted = Op::new(Process::Client(1), OpType::Ok, "acquire")
        .key("lock")
        .token("t1")
        .nodes(vec!["n1".into()]);
    granted.validity_ms = Some(2_000);
    history
        .grant(0, 5_000, 5_001, 2_000, &["n1"])
        .fault("start", 6_617, "pause", &["n1"], Value::Null, Value::Null)
        .at(6_643, asked)
        .at(6_765, release(OpType::Invoke))
        .fault("stop", 7_208, "pause", &["n1"], Value::Null, Value::Null)
        .at(7_224, release(OpType::Ok))
        .grant(0, 7_225, 7_226, 2_000, &["n1"])
        .at(7_227, granted)
        .release(1, 7_800, OpType::Ok)
        .release(0, 8_400, OpType::Ok);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::Hijack]);
    assert_eq!(
        explained[0].sentence,
        "process 0 released the key at 6.765s, a release held up until 7.224s (one that checks \
         no token deletes whoever holds the key by then), and so deleted process 1's key, set \
         while the release was held up: process 0 was granted at 7.226s while process 1's \
         lease ran until 8.643s"
    );
}

#[test]
fn a_release_of_a_holder_whose_key_was_gone_or_of_the_next_holder_itself_is_a_hijack() {
    // Process 1's key went (nothing says how: a kill long before) and process 0 took the
    // lock; process 1's release, within its own lease, deleted process 0's key. In a run with
    // no fault at all, the lock let process 0 in beside process 1, and nothing says process 0
    // ever had a key to delete: no exclusion, twice.
    for faulty in [true, false] {
        let mut history = HistoryBuilder::default();
        if faulty {
            history
                .fault("start", 10, "kill", &["n2"], Value::Null, Value::Null)
                .fault("stop", 20, "kill", &["n2"], Value::Null, Value::Null);
        }
        history
            .grant(1, 500, 501, 5_000, &["n1"])
            .grant(0, 1_000, 1_001, 5_000, &["n1"])
            .release(1, 2_500, OpType::Ok)
            .grant(2, 3_000, 3_001, 5_000, &["n1"]);
        let explained = history.explained();
        let expected = match faulty {
            true => vec![Cause::Unexplained, Cause::Hijack],
            false => vec![Cause::NoExclusion, Cause::NoExclusion],
        };
        assert_eq!(causes(&explained), expected);
    }
    let mut history = HistoryBuilder::default();
    history
        .fault("start", 10, "kill", &["n2"], Value::Null, Value::Null)
        .fault("stop", 20, "kill", &["n2"], Value::Null, Value::Null)
        .grant(1, 500, 501, 5_000, &["n1"])
        .grant(0, 1_000, 1_001, 5_000, &["n1"])
        .release(1, 2_500, OpType::Ok)
        .grant(2, 3_000, 3_001, 5_000, &["n1"]);
    let explained = history.explained();
    assert!(
        explained[1]
            .sentence
            .starts_with("process 1 released the key at 2.500s when its own key was gone already"),
        "{}",
        explained[1].sentence
    );

    // A zombie's release deletes the next holder's key, and the zombie takes the lock again.
    let mut history = HistoryBuilder::default();
    workers(&mut history);
    history
        .grant(0, 1_000, 1_001, 1_000, &["n1"])
        .grant(1, 2_500, 2_501, 5_000, &["n1"])
        .release(0, 3_000, OpType::Ok)
        .grant(0, 3_500, 3_501, 5_000, &["n1"]);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::SlowHolder, Cause::Hijack]);
    assert!(
        explained[1].sentence.ends_with(
            "and so deleted process 1's key: process 0 was granted at 3.501s while process 1's \
         lease ran until 7.500s"
        ),
        "{}",
        explained[1].sentence
    );
}

#[test]
fn a_release_still_in_flight_when_the_first_was_granted_may_have_deleted_its_key() {
    // Process 0's DEL was invoked just before process 1's grant and came back after it.
    let mut history = HistoryBuilder::default();
    history
        .grant(0, 1_000, 1_001, 1_000, &["n1"])
        .grant(1, 2_999, 3_001, 5_000, &["n1"])
        .release(0, 3_000, OpType::Ok)
        .grant(2, 3_001, 3_002, 5_000, &["n1"]);
    assert_eq!(causes(&history.explained()), vec![Cause::Hijack]);
}

#[test]
fn a_release_by_a_holder_granted_after_the_first_on_its_nodes_hijacks_nothing() {
    // Process 1 could be granted only once process 0's key was gone from n1: its release
    // deleted its own key, whatever process 2's grant then overlapped. Nothing else happened,
    // so the lock kept no key: never a hijack.
    let mut history = HistoryBuilder::default();
    history
        .grant(0, 1_000, 1_001, 5_000, &["n1"])
        .grant(1, 2_000, 2_001, 5_000, &["n1"])
        .release(1, 2_500, OpType::Ok)
        .grant(2, 3_000, 3_001, 5_000, &["n1"]);
    let explained = history.explained();
    assert_eq!(
        causes(&explained),
        vec![Cause::NoExclusion, Cause::NoExclusion]
    );
}

#[test]
fn a_release_on_another_master_hijacks_nothing() {
    let mut history = HistoryBuilder::default();
    history
        .grant(0, 1_000, 1_001, 5_000, &["n1"])
        .grant(1, 1_200, 1_201, 5_000, &["n2"])
        .release(1, 1_500, OpType::Ok)
        .grant(2, 2_000, 2_001, 5_000, &["n1"]);
    let explained = history.explained();
    assert!(
        !causes(&explained).contains(&Cause::Hijack),
        "{explained:?}"
    );
}

/// The redis-py adapter on `single` under `kill`, as issue 34 found it: process 2 held the
/// lock when n1 was killed; n1 came back empty and granted process 0, whose release (with
/// redis-py's token check) deleted its own key, and then process 1. Both double grants are
/// the restart's; process 0's release hijacked nothing, whether the grants name n1 or not.
#[test]
fn a_release_after_the_restart_that_lost_the_first_key_is_no_hijack() {
    for nodes in [&["n1"][..], &[]] {
        let mut history = HistoryBuilder::default();
        history
            .grant(2, 500, 501, 2_000, nodes)
            .fault("start", 900, "kill", &["n1"], Value::Null, Value::Null)
            .fault("stop", 969, "kill", &["n1"], Value::Null, Value::Null)
            .grant(0, 973, 974, 2_000, nodes)
            .release(0, 1_031, OpType::Ok)
            .grant(1, 1_039, 1_040, 2_000, nodes);
        let explained = history.explained();
        assert_eq!(
            causes(&explained),
            vec![Cause::RestartHazard, Cause::RestartHazard],
            "nodes {nodes:?}: {explained:#?}"
        );
    }
    let mut history = HistoryBuilder::default();
    history
        .grant(2, 500, 501, 2_000, &[])
        .fault("start", 900, "kill", &["n1"], Value::Null, Value::Null)
        .fault("stop", 969, "kill", &["n1"], Value::Null, Value::Null)
        .grant(0, 973, 974, 2_000, &[]);
    assert_eq!(
        history.explained()[0].sentence,
        "the grants do not name their nodes; process 2 was granted at 0.501s and process 0 \
         at 0.974s, while process 2's lease ran until 2.500s, across this: n1 was killed at \
         0.900s, back at 0.969s; it came back without process 2's key"
    );
}

/// rslock under `kill-holder`, busy: three masters were killed while process 0's acquire was
/// under way, after they had voted for it, and came back empty before process 1 asked. Named
/// or not, the restart lost the key; a kill before the acquire was asked loses nothing.
#[test]
fn a_kill_while_the_first_acquire_was_under_way_is_the_restart_hazard() {
    for nodes in [&["n1", "n3", "n5"][..], &[]] {
        for (killed_at, cause) in [(1_150, Cause::RestartHazard), (900, Cause::Unexplained)] {
            let masters = ["n1", "n3", "n5"];
            let mut history = HistoryBuilder::default();
            // In time order once explained: the kill falls inside process 0's acquire (1.0 s
            // to 1.2 s), or before it.
            history
                .grant(0, 1_000, 1_200, 2_000, nodes)
                .fault(
                    "start",
                    killed_at,
                    "kill",
                    &masters,
                    Value::Null,
                    Value::Null,
                )
                .fault("stop", 1_230, "kill", &masters, Value::Null, Value::Null)
                .grant(1, 1_300, 1_310, 2_000, nodes);
            let explained = history.explained();
            assert_eq!(
                causes(&explained),
                vec![cause],
                "nodes {nodes:?}, killed at {killed_at}: {explained:#?}"
            );
            // Both rules say that the node may have voted before it went down.
            if cause == Cause::RestartHazard {
                let said = match nodes.is_empty() {
                    true => {
                        "it came back without process 0's key (it went down while the \
                             acquire asked at 1.000s was under way, after it may have voted)"
                    }
                    false => {
                        "came back at 1.230s without the key (it went down while the \
                              acquire asked at 1.000s was under way, after it may have voted)"
                    }
                };
                assert!(
                    explained[0].sentence.contains(said),
                    "{}",
                    explained[0].sentence
                );
            }
        }
    }
}

/// The redis-py Sentinel adapter on a busy machine: 1.5 s after the Sentinels named n3 in
/// n2's place, a client still connected to n2 was granted there.
#[test]
fn unnamed_grants_soon_after_a_master_was_replaced_are_a_failover() {
    let mut promoted = master(&["n2", "n3"]);
    promoted.measured = Some(json!({"from": ["n2"], "by": "sentinel"}));
    let mut history = HistoryBuilder::default();
    history
        .at(100, master(&["n2"]))
        .at(10_911, promoted)
        .at(11_935, master(&["n3"]))
        .grant(3, 13_480, 13_483, 5_000, &[])
        .grant(0, 13_830, 13_833, 5_000, &[]);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::Failover]);
    assert!(
        explained[0].sentence.contains(
            "across this: n2 was master until 11.935s, and a client still connected to it \
             could be granted there until it was made a replica"
        ),
        "{}",
        explained[0].sentence
    );
    // Long after the change, nothing explains it.
    let mut history = HistoryBuilder::default();
    history
        .at(100, master(&["n2"]))
        .at(1_000, master(&["n3"]))
        .grant(3, 13_480, 13_483, 5_000, &[])
        .grant(0, 13_830, 13_833, 5_000, &[]);
    assert_eq!(causes(&history.explained()), vec![Cause::Unexplained]);
}

#[test]
fn unnamed_grants_across_a_promotion_are_a_failover_and_across_nothing_unexplained() {
    // The failover nemesis asked the Sentinels; a kill let them promote on their own.
    let mut promoted = master(&["n2"]);
    promoted.measured = Some(json!({"from": ["n1"], "by": "sentinel"}));
    for (fault, measured) in [("failover", json!({"master": "n1"})), ("kill", Value::Null)] {
        let mut history = HistoryBuilder::default();
        history
            .at(100, master(&["n1"]))
            .grant(0, 1_000, 1_001, 5_000, &[])
            .fault("start", 1_200, fault, &["n1"], Value::Null, measured)
            .at(1_900, promoted.clone())
            .grant(1, 2_000, 2_001, 5_000, &[]);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![Cause::Failover], "{fault}");
        assert!(
            explained[0]
                .sentence
                .ends_with("the master that granted process 1 had not received process 0's key"),
            "{}",
            explained[0].sentence
        );
    }

    let mut history = HistoryBuilder::default();
    history
        .grant(0, 1_000, 1_001, 5_000, &[])
        .fault(
            "start",
            500,
            "client-pause",
            &["client-3"],
            Value::Null,
            Value::Null,
        )
        .grant(1, 2_000, 2_001, 5_000, &[]);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::Unexplained]);
    assert!(explained[0]
        .sentence
        .contains("the grants do not name the nodes that gave them"));
}

#[test]
fn a_waiter_cut_off_past_its_session_and_granted_after_the_cut_lost_its_session_in_acquire() {
    // Curator's InterProcessMutex (CURATOR-604): process 0 waits behind process 1 and is cut
    // off for 2.95 s, past its 2 s session; granted after the cut on its lost session's node,
    // it holds on when the servers expire that session and grant process 1 again. A cut
    // shorter than the session, or a lock with no session, explains nothing of the kind.
    for (cut_until, silent, cause) in [
        (4_000, true, Cause::SessionLostInAcquire),
        (2_500, true, Cause::SlowHolder),
        (4_000, false, Cause::SlowHolder),
    ] {
        let mut history = HistoryBuilder::default();
        workers(&mut history);
        history.grant(1, 900, 901, 2_000, &[]).renewed_silently();
        let mut asked = Op::new(Process::Client(0), OpType::Invoke, "acquire").key("lock");
        asked.ttl_ms = Some(2_000);
        history.at(1_000, asked);
        let links = &["g0->n1", "g0->n2", "g0->n3"];
        // Logged at 1.050s, acting from 1.020s: the sentence gives when it acted.
        let measured =
            json!({"after_grant_to": 1, "group": "g0", "granted_by": [], "began_ms": 1_020.0});
        history.fault(
            "start",
            1_050,
            "link-drop-waiter",
            links,
            Value::Null,
            measured,
        );
        let kill: &[&str] = &["n2"];
        for (f, at, fault, nodes) in [
            ("start", 2_000, "kill-primary", kill),
            ("stop", 2_300, "kill-primary", kill),
            ("stop", cut_until, "link-drop-waiter", links),
        ] {
            history.fault(f, at, fault, nodes, Value::Null, Value::Null);
        }
        history.release(1, 4_100, OpType::Ok);
        let mut granted = Op::new(Process::Client(0), OpType::Ok, "acquire")
            .key("lock")
            .token("t0")
            .nodes(Vec::new());
        granted.validity_ms = Some(2_000);
        if silent {
            granted.renewal = Some(crate::Renewal::Silent);
        }
        history
            .at(4_200, granted)
            .grant(1, 4_101, 6_000, 2_000, &[])
            .renewed_silently()
            .release(0, 7_000, OpType::Ok);
        let explained = history.explained();
        assert_eq!(
            causes(&explained),
            vec![cause],
            "cut until {cut_until}, silent {silent}"
        );
        if cause == Cause::SessionLostInAcquire {
            assert_eq!(
                explained[0].sentence,
                "process 0 asked for the lock at 1.000s and, while it waited, was cut off for \
                 3.0 s, longer than its 2.0 s session (link-drop-waiter, the links to n1, n2 \
                 and n3 from client group g0, 1.020s-4.000s; n2 killed in the cut, each \
                 election after giving every session, the lost one too, a fresh timeout): \
                 granted at 4.200s, after the \
                 cut, it held the lock by the place its lost session had taken in the lock's \
                 queue, which the servers delete when they expire that session; its lease \
                 ended at 4.200s; process 1 was granted at 6.000s; process 0 went on as holder \
                 until 7.000s"
            );
        }
    }
}

#[test]
fn a_session_lock_whose_connection_was_reset_under_its_holder_lost_its_connection() {
    // pg-advisory under link faults (seed 1): process 0 holds a session lock on n1 and renews
    // it by pings; its client group's links to n1 are reset and n1 grants process 1 at once,
    // while process 0's lease, by its last ping, still runs; its next ping is refused. A
    // slowed link ends no session, and a lock that does not live with a connection is no
    // such story.
    for (fault, connection, cause) in [
        ("link-reset", true, Cause::ConnectionLost),
        ("link-drop", true, Cause::ConnectionLost),
        ("link-latency", true, Cause::Unexplained),
        ("link-reset", false, Cause::Unexplained),
    ] {
        let mut history = HistoryBuilder::default();
        workers(&mut history);
        history.grant(0, 1_000, 1_001, 2_000, &["n1"]);
        if connection {
            history.with_connection();
        }
        let renewed = |kind| Op::new(Process::Client(0), kind, "renew").key("lock");
        let links = &["g0->n1"];
        history
            .renew(0, 1_600, 1_602, renewed(OpType::Ok))
            .fault("start", 1_900, fault, links, Value::Null, Value::Null)
            .grant(1, 1_000, 1_905, 2_000, &["n1"])
            .renew(
                0,
                2_200,
                2_201,
                renewed(OpType::Fail).error("the session is gone: its connection closed"),
            )
            .fault("stop", 2_300, fault, links, Value::Null, Value::Null)
            .release(0, 2_400, OpType::Fail)
            .release(1, 3_000, OpType::Ok);
        let explained = history.explained();
        assert_eq!(
            causes(&explained),
            vec![cause],
            "{fault}, connection {connection}"
        );
        if fault == "link-reset" && connection {
            assert_eq!(
                explained[0].sentence,
                "process 0's lock lived with its connection to n1, and during its hold the \
                 links to n1 from client group g0 were reset at 1.900s: the session ended with \
                 the connection, and the lock with it; n1 granted process 1 at 1.905s, while \
                 process 0 went on as holder until 2.400s; its last renewal came back at \
                 2.201s with: the session is gone: its connection closed"
            );
            assert!(explained[0].spells.iter().all(|s| s.fault == fault));
        }
    }
}

#[test]
fn a_session_lock_holder_past_its_refused_renewal_lost_its_connection() {
    // pg-advisory-xact under link faults (seed 1): the reset ends process 0's session and its
    // next ping is refused, which ends its lease; process 1 is granted after that, while
    // process 0 still holds out its hold: a stale double grant, and the same story.
    let mut history = HistoryBuilder::default();
    workers(&mut history);
    history
        .grant(0, 1_000, 1_001, 2_000, &["n1"])
        .with_connection();
    let renewed = |kind| Op::new(Process::Client(0), kind, "renew").key("lock");
    let links = &["g0->n1"];
    history
        .fault(
            "start",
            1_500,
            "link-reset",
            links,
            Value::Null,
            Value::Null,
        )
        .renew(
            0,
            1_800,
            1_801,
            renewed(OpType::Fail).error("the session is gone: its connection closed"),
        )
        .fault("stop", 2_000, "link-reset", links, Value::Null, Value::Null)
        .grant(1, 1_000, 2_100, 2_000, &["n1"])
        .release(0, 2_700, OpType::Fail)
        .release(1, 3_000, OpType::Ok);
    let explained = history.explained();
    assert_eq!(causes(&explained), vec![Cause::ConnectionLost]);
    assert!(
        explained[0].sentence.contains(
            "the links to n1 from client group g0 were reset at 1.500s, restored at 2.000s"
        ),
        "{}",
        explained[0].sentence
    );
}

#[test]
fn a_session_lock_whose_renewal_got_no_answer_on_a_slowed_link_lost_its_connection() {
    // mysql-get-lock under link faults (seed 1): process 0's ping meets its group's slowed
    // link and gets no reply in time; MariaDB's client gives such a connection up, and n1
    // grants process 1. Without the unanswered renewal a slowed link explains nothing.
    for (unanswered, cause) in [(true, Cause::ConnectionLost), (false, Cause::Unexplained)] {
        let mut history = HistoryBuilder::default();
        workers(&mut history);
        history
            .grant(0, 1_000, 1_001, 2_000, &["n1"])
            .with_connection();
        let renewed = |kind| Op::new(Process::Client(0), kind, "renew").key("lock");
        let links = &["g0->n1"];
        let answer = match unanswered {
            true => renewed(OpType::Info).error("no reply within 666 ms"),
            false => renewed(OpType::Ok),
        };
        history
            .fault(
                "start",
                1_100,
                "link-latency",
                links,
                Value::Null,
                Value::Null,
            )
            .renew(0, 1_600, 2_266, answer)
            .fault(
                "stop",
                2_300,
                "link-latency",
                links,
                Value::Null,
                Value::Null,
            )
            .grant(1, 1_000, 2_400, 2_000, &["n1"])
            .release(0, 2_900, OpType::Fail)
            .release(1, 3_000, OpType::Ok);
        let explained = history.explained();
        assert_eq!(causes(&explained), vec![cause], "unanswered {unanswered}");
        if unanswered {
            assert!(
                explained[0].sentence.contains(
                    "its renewal asked at 1.600s got no answer by 2.266s (no reply within \
                     666 ms), on a connection that had stopped carrying its requests"
                ),
                "{}",
                explained[0].sentence
            );
        }
    }
}
