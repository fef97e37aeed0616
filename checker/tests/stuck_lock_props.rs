//! Property tests of the stuck-lock checker: leases one after another on one key, refusals
//! only while some lease may be live, and then one refusal after every lease has run out.

mod common;

use std::time::Duration;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use splitbrain_checker::stuck_lock::check;
use splitbrain_checker::{Op, OpType, Process, Valid};

const BOUND: Duration = Duration::from_millis(200);

/// An acquire `gap` ms after the previous lease ran out, with a `ttl` ms lease, that took
/// `latency` ms and returned `ok`, or `info` if not `granted`; its lease runs out `ttl` ms
/// after its completion.
#[derive(Debug, Clone)]
struct Lease {
    gap: u64,
    ttl: u64,
    latency: u64,
    granted: bool,
}

/// A refused acquire invoked `permille` of the way into the lease `during`, that took
/// `latency` ms: perhaps well after the lease ran out.
#[derive(Debug, Clone)]
struct Refusal {
    during: Index,
    permille: u64,
    latency: u64,
    split_vote: bool,
}

fn lease() -> impl Strategy<Value = Lease> {
    (
        0..1_000u64,
        1..1_000u64,
        1..50u64,
        prop::bool::weighted(0.8),
    )
        .prop_map(|(gap, ttl, latency, granted)| Lease {
            gap,
            ttl,
            latency,
            granted,
        })
}

fn refusal() -> impl Strategy<Value = Refusal> {
    (any::<Index>(), 0..1_000u64, 1..2_000u64, any::<bool>()).prop_map(
        |(during, permille, latency, split_vote)| Refusal {
            during,
            permille,
            latency,
            split_vote,
        },
    )
}

/// The ops of `leases` and `refusals`, each acquire by its own process, and when the last
/// lease runs out.
fn correct_lock(leases: &[Lease], refusals: &[Refusal]) -> (Vec<(u64, Op)>, u64) {
    let mut timed = Vec::new();
    let mut windows = Vec::new();
    let mut cursor = 0;
    for lease in leases {
        let invoke = cursor + lease.gap;
        // The key may live a TTL past the acquire's completion, `ok` or `info` alike.
        cursor = invoke + lease.latency + lease.ttl;
        windows.push((invoke, cursor));
        let outcome = if lease.granted {
            OpType::Ok
        } else {
            OpType::Info
        };
        timed.extend(acquire(
            timed.len(),
            invoke,
            lease.ttl,
            lease.latency,
            outcome,
            None,
        ));
    }
    for refusal in refusals {
        let (start, end) = windows[refusal.during.index(windows.len())];
        let invoke = start + (end - start) * refusal.permille / 1_000;
        let error = if refusal.split_vote {
            "split vote: 2/5"
        } else {
            "held: by another client"
        };
        timed.extend(acquire(
            timed.len(),
            invoke,
            1_000,
            refusal.latency,
            OpType::Fail,
            Some(error),
        ));
    }
    (timed, cursor)
}

/// An acquire by process `process` invoked at `invoke` ms asking for `ttl` ms.
fn acquire(
    process: usize,
    invoke: u64,
    ttl: u64,
    latency: u64,
    outcome: OpType,
    error: Option<&str>,
) -> [(u64, Op); 2] {
    let op = |kind| Op::new(Process::Client(process as u64), kind, "acquire").key("lock");
    let mut request = op(OpType::Invoke);
    request.ttl_ms = Some(ttl);
    let mut completion = op(outcome);
    completion.error = error.map(str::to_string);
    [(invoke, request), (invoke + latency, completion)]
}

proptest! {
    #[test]
    fn refusals_while_a_lease_may_be_live_are_not_stuck(
        leases in vec(lease(), 1..30),
        refusals in vec(refusal(), 0..30),
    ) {
        let (timed, _) = correct_lock(&leases, &refusals);
        let result = check(&common::render(timed), BOUND, None);
        prop_assert_eq!(result.valid, Valid::True, "{:#?}", result);
        // Split votes are not evidence about the key, and are not counted.
        let held = refusals.iter().filter(|r| !r.split_vote).count();
        prop_assert_eq!(result.held_refusals, held);
    }

    #[test]
    fn a_refusal_after_every_lease_ran_out_is_stuck(
        leases in vec(lease(), 1..30),
        refusals in vec(refusal(), 0..30),
        late in 1..1_000u64,
    ) {
        let (mut timed, free_from) = correct_lock(&leases, &refusals);
        let bound = BOUND.as_millis() as u64;
        // Invoked just after the last lease ran out; refused more than the bound after it.
        let stuck = acquire(timed.len(), free_from + 1, 1_000, bound + late, OpType::Fail, Some("held"));
        timed.extend(stuck);
        let result = check(&common::render(timed), BOUND, None);
        prop_assert_eq!(result.valid, Valid::False);
        prop_assert_eq!(result.stuck_period_count, 1);
        let period = &result.stuck_periods[0];
        prop_assert_eq!(period.free_from_ms, free_from as f64);
        prop_assert_eq!(period.first_refused_ms, (free_from + 1 + bound + late) as f64);
        prop_assert!(!period.recovered);
    }
}
