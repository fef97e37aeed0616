//! The checkers that read a history as a stream forget what no later op can change (holds
//! that ended before everything still open began, completions older than every pending op).
//! Forgetting must never change a finding: each is checked here against the same checker
//! forgetting nothing, on long synthetic histories full of double grants, unknown acquires and
//! fencing tokens out of order.

use serde::Serialize;

use crate::fencing::FencingChecker;
use crate::lock_safety::LockSafetyChecker;
use crate::stream::{replay, Checker, Outline};
use crate::stuck_lock::StuckLockChecker;
use crate::testing::{lock_history, LockWorkload};
use crate::{Op, OpType};

/// A correct lock's history, broken: every 40th refused acquire is granted instead (a double
/// grant, its holder never releasing), every grant carries a fence, and the broken grants
/// carry one already issued (out of order).
fn broken_history(seed: u64, keys: usize) -> Vec<Op> {
    let workload = LockWorkload {
        ops: 30_000,
        processes: 12,
        keys,
        seed,
    };
    let mut history = lock_history(&workload);
    let (mut fence, mut refused) = (100, 0);
    for op in history.iter_mut().filter(|op| op.f == "acquire") {
        match op.kind {
            OpType::Fail => {
                refused += 1;
                if refused % 40 == 0 {
                    op.kind = OpType::Ok;
                    op.fence = Some(fence - 3);
                }
            }
            OpType::Ok => {
                fence += 1;
                op.fence = Some(fence);
            }
            _ => {}
        }
    }
    history
}

/// The result of `checker` forgetting as it goes, at every event, and of the same checker
/// forgetting nothing (it forgets only when the outline says the ops came in time order).
fn both<C: Checker>(history: &[Op], checker: impl Fn(&Outline) -> C) -> (String, String)
where
    C::Output: Serialize,
{
    let outline = Outline::of(history);
    assert!(outline.in_time_order);
    let mut remembering = outline.clone();
    remembering.in_time_order = false;
    let json = |result: C::Output| serde_json::to_string_pretty(&result).unwrap();
    (
        json(replay(history, checker(&outline))),
        json(replay(history, checker(&remembering))),
    )
}

#[test]
fn lock_safety_finds_the_same_when_it_forgets() {
    for seed in 1..=3 {
        let history = broken_history(seed, 3);
        let (forgetting, remembering) = both(&history, |outline| {
            let mut checker = LockSafetyChecker::new(outline);
            checker.forget_every = 1;
            checker
        });
        assert_eq!(forgetting, remembering, "seed {seed}");
        let result: serde_json::Value = serde_json::from_str(&forgetting).unwrap();
        assert!(
            result["double_grant_count"].as_u64().unwrap() > 10,
            "{result}"
        );
        assert!(result["possible_double_grant_count"].as_u64().unwrap() > 0);
    }
}

/// Grants of one key by `processes` processes, each acquiring over and over, an acquire taking
/// 1 to 60 ms (so many complete while another is pending); fences are issued in order of
/// completion, but every seventh grant carries one issued three grants before.
fn slow_grants(seed: u64, processes: u64) -> Vec<Op> {
    let mut state = seed;
    let mut random = |below: u64| {
        // SplitMix64: any fixed sequence does.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % below
    };
    let mut ops = Vec::new();
    for process in 0..processes {
        let mut at = random(10) * 1_000_000;
        for _ in 0..1_000 {
            let acquire =
                |kind| Op::new(crate::Process::Client(process), kind, "acquire").key("lock");
            ops.push(acquire(OpType::Invoke).at(0, at));
            at += (1 + random(60)) * 1_000_000;
            ops.push(acquire(OpType::Ok).at(0, at));
            at += (1 + random(5)) * 1_000_000;
        }
    }
    ops.sort_by_key(|op| op.time);
    let mut grants = 0;
    for (index, op) in ops.iter_mut().enumerate() {
        op.index = index as u64;
        if op.kind == OpType::Ok {
            grants += 1;
            op.fence = Some(if grants % 7 == 0 { grants - 3 } else { grants });
        }
    }
    ops
}

/// Zombies: in each of `rounds` rounds process A is granted with a fence and a 10 ms lease,
/// B is granted after the lease, and A then writes (refused, but every fifth time accepted)
/// and releases. In every other round A's lock lives in its write's transaction instead
/// (`ends_with_write`): the write ends the hold, and its outcome comes back after B's release,
/// when the overlap is already found.
fn zombies(rounds: u64) -> Vec<Op> {
    let mut ops = Vec::new();
    let ms = 1_000_000;
    for round in 0..rounds {
        let t = round * 100 * ms;
        let (a, b) = (
            crate::Process::Client(2 * round),
            crate::Process::Client(2 * round + 1),
        );
        let op = |process, kind, f: &str, at: u64| Op::new(process, kind, f).key("lock").at(0, at);
        let mut grant = op(a, OpType::Invoke, "acquire", t);
        grant.ttl_ms = Some(10);
        ops.push(grant.clone());
        let in_transaction = round % 2 == 1;
        ops.push(
            op(a, OpType::Ok, "acquire", t + ms)
                .fence(Some(2 * round))
                .ends_with_write(in_transaction),
        );
        ops.push(op(a, OpType::Invoke, "read", t + 2 * ms).fence(Some(2 * round)));
        ops.push(op(a, OpType::Ok, "read", t + 3 * ms));
        let mut second = op(b, OpType::Invoke, "acquire", t + 15 * ms);
        second.ttl_ms = Some(10);
        ops.push(second);
        ops.push(op(b, OpType::Ok, "acquire", t + 16 * ms).fence(Some(2 * round + 1)));
        let written = if round % 5 == 0 {
            OpType::Ok
        } else {
            OpType::Fail
        };
        ops.push(
            op(a, OpType::Invoke, "add", t + 20 * ms)
                .fence(Some(2 * round))
                .value(round),
        );
        if in_transaction {
            ops.push(op(a, written, "add", t + 30 * ms));
        } else {
            ops.push(op(a, written, "add", t + 21 * ms));
            ops.push(op(a, OpType::Invoke, "release", t + 22 * ms));
            ops.push(op(a, OpType::Ok, "release", t + 23 * ms));
        }
        ops.push(op(b, OpType::Invoke, "release", t + 24 * ms));
        ops.push(op(b, OpType::Ok, "release", t + 25 * ms));
    }
    ops.sort_by_key(|op| op.time);
    for (index, op) in ops.iter_mut().enumerate() {
        op.index = index as u64;
    }
    ops
}

#[test]
fn lock_safety_settles_fenced_zombies_the_same_when_it_forgets() {
    let history = zombies(1_000);
    let (forgetting, remembering) = both(&history, |outline| {
        let mut checker = LockSafetyChecker::new(outline);
        checker.forget_every = 1;
        checker
    });
    assert_eq!(forgetting, remembering);
    let result: serde_json::Value = serde_json::from_str(&forgetting).unwrap();
    assert_eq!(result["fenced_double_grant_count"], 800, "{result}");
    assert_eq!(result["stale_double_grant_count"], 200);
}

#[test]
fn fencing_finds_the_same_when_it_forgets() {
    for seed in 1..=3 {
        let history = slow_grants(seed, 8);
        let (forgetting, remembering) = both(&history, |outline| {
            let mut checker = FencingChecker::new(outline);
            checker.forget_every = 1;
            checker
        });
        assert_eq!(forgetting, remembering, "seed {seed}");
        let result: serde_json::Value = serde_json::from_str(&forgetting).unwrap();
        assert!(result["out_of_order_grant_count"].as_u64().unwrap() > 100);
    }
}

#[test]
fn stuck_lock_finds_the_same_when_it_sweeps_early() {
    for seed in 1..=3 {
        let mut history = broken_history(seed, 2);
        // Leases of 2 ms, which holders outlive, and refusals that say the key was held: keys
        // that refuse everyone past every lease.
        for op in history.iter_mut() {
            if op.kind == OpType::Fail {
                op.error = Some("held: by another client".into());
            }
            if op.ttl_ms.is_some() {
                op.ttl_ms = Some(2);
            }
        }
        let bound = std::time::Duration::from_millis(1);
        let (early, at_the_end) = both(&history, |outline| {
            let mut checker = StuckLockChecker::new(outline, bound, None);
            checker.sweep_every = 1;
            checker
        });
        assert_eq!(early, at_the_end, "seed {seed}");
        let result: serde_json::Value = serde_json::from_str(&early).unwrap();
        assert!(
            result["stuck_period_count"].as_u64().unwrap() > 10,
            "{result}"
        );
    }
}
