//! Property tests of the fencing checker: grants issued one after another with increasing
//! fences, each followed by its holder's storage accesses, and the same with two fences swapped.

mod common;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use splitbrain_checker::fencing::check;
use splitbrain_checker::{Op, OpType, Process, Valid};

/// One grant, `gap` ms after the previous holder finished: its acquire takes `latency` ms,
/// then its holder makes `accesses` storage accesses of 1 ms each under its fence.
#[derive(Debug, Clone)]
struct Grant {
    gap: u64,
    latency: u64,
    fence_step: u64,
    accesses: usize,
}

fn grant() -> impl Strategy<Value = Grant> {
    (1..20u64, 1..20u64, 1..5u64, 0..3usize).prop_map(|(gap, latency, fence_step, accesses)| {
        Grant {
            gap,
            latency,
            fence_step,
            accesses,
        }
    })
}

/// The sequential history of `grants`, grant `i` by process `i` with fence `fences[i]`.
fn history(grants: &[Grant], fences: &[u64]) -> Vec<Op> {
    let mut timed = Vec::new();
    let mut cursor = 0;
    for (i, (grant, &fence)) in grants.iter().zip(fences).enumerate() {
        let process = Process::Client(i as u64);
        let acquire = |kind| Op::new(process, kind, "acquire").key("lock");
        let invoke = cursor + grant.gap;
        cursor = invoke + grant.latency;
        timed.push((invoke, acquire(OpType::Invoke)));
        timed.push((cursor, acquire(OpType::Ok).fence(Some(fence))));
        for access in 0..grant.accesses {
            let f = if access % 2 == 0 { "read" } else { "add" };
            let op = |kind| Op::new(process, kind, f).key("doc").fence(Some(fence));
            timed.push((cursor + 1, op(OpType::Invoke)));
            timed.push((cursor + 2, op(OpType::Ok)));
            cursor += 2;
        }
    }
    common::render(timed)
}

/// Increasing fences: each grant's is its predecessor's plus its step.
fn increasing(grants: &[Grant]) -> Vec<u64> {
    grants
        .iter()
        .scan(0, |fence, grant| {
            *fence += grant.fence_step;
            Some(*fence)
        })
        .collect()
}

proptest! {
    #[test]
    fn sequential_grants_with_increasing_fences_are_valid(grants in vec(grant(), 0..40)) {
        let result = check(&history(&grants, &increasing(&grants)));
        prop_assert_eq!(result.valid, Valid::True, "{:#?}", result);
        prop_assert_eq!(result.grants_checked, grants.len());
        let accesses: usize = grants.iter().map(|g| g.accesses).sum();
        prop_assert_eq!(result.storage_accesses_checked, accesses);
    }

    #[test]
    fn swapping_two_sequential_grants_fences_is_out_of_order(
        grants in vec(grant(), 2..40),
        first in any::<Index>(),
        second in any::<Index>(),
    ) {
        let (a, b) = (first.index(grants.len()), second.index(grants.len()));
        prop_assume!(a != b);
        let (earlier, later) = (a.min(b), a.max(b));
        let mut fences = increasing(&grants);
        fences.swap(earlier, later);
        let result = check(&history(&grants, &fences));
        prop_assert_eq!(result.valid, Valid::False);
        prop_assert!(result.out_of_order_grant_count >= 1);
        prop_assert_eq!(result.duplicate_fence_count, 0);
        let named = result
            .out_of_order_grants
            .iter()
            .any(|pair| pair.later.process == Process::Client(later as u64));
        prop_assert!(named, "grant {} not reported: {:#?}", later, result);
    }

    #[test]
    fn overlapping_grants_may_have_their_fences_in_any_order(
        fences in (1..40u64).prop_flat_map(|n| Just((1..=n).collect::<Vec<u64>>()).prop_shuffle())
    ) {
        // Every acquire is invoked before the first returns.
        let n = fences.len() as u64;
        let mut timed = Vec::new();
        for (i, &fence) in fences.iter().enumerate() {
            let acquire = |kind| Op::new(Process::Client(i as u64), kind, "acquire").key("lock");
            timed.push((i as u64, acquire(OpType::Invoke)));
            timed.push((n + i as u64, acquire(OpType::Ok).fence(Some(fence))));
        }
        let result = check(&common::render(timed));
        prop_assert_eq!(result.valid, Valid::True, "{:#?}", result);
    }
}
