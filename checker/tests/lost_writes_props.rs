//! Property tests of the lost-writes checker: random adds, each by its own process and of any
//! outcome, and a final read after them all.

mod common;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use splitbrain_checker::lost_writes::check;
use splitbrain_checker::{Op, OpType, Process, Valid};

/// When the final read is invoked, in ms: after every add has completed.
const FINAL_READ: u64 = 2_000;

/// One add: invoked at `start` ms, completed `latency` ms later with `outcome` (`None`: never).
#[derive(Debug, Clone)]
struct Add {
    start: u64,
    latency: u64,
    outcome: Option<OpType>,
    /// For an add of unknown outcome, whether it took effect.
    applied: bool,
}

fn add() -> impl Strategy<Value = Add> {
    let outcome = prop_oneof![
        3 => Just(Some(OpType::Ok)),
        1 => Just(Some(OpType::Fail)),
        1 => Just(Some(OpType::Info)),
        1 => Just(None),
    ];
    (0..1_000u64, 1..50u64, outcome, any::<bool>()).prop_map(
        |(start, latency, outcome, applied)| Add {
            start,
            latency,
            outcome,
            applied,
        },
    )
}

/// The ids (their indices) a correct storage holds after `adds`.
fn stored(adds: &[Add]) -> Vec<i64> {
    (0..adds.len() as i64)
        .filter(|&id| {
            let add = &adds[id as usize];
            match add.outcome {
                Some(OpType::Ok) => true,
                Some(OpType::Fail) => false,
                _ => add.applied,
            }
        })
        .collect()
}

/// The history of `adds`, add `i` adding id `i` as process `i`, then a final read of `read`.
fn history(adds: &[Add], read: Vec<i64>) -> Vec<Op> {
    let mut timed = Vec::new();
    for (id, add) in adds.iter().enumerate() {
        let op = |kind| {
            Op::new(Process::Client(id as u64), kind, "add")
                .key("doc")
                .value(id as i64)
        };
        timed.push((add.start, op(OpType::Invoke)));
        if let Some(outcome) = add.outcome {
            timed.push((add.start + add.latency, op(outcome)));
        }
    }
    let reader = Process::Client(adds.len() as u64);
    timed.push((
        FINAL_READ,
        Op::new(reader, OpType::Invoke, "read").key("doc"),
    ));
    timed.push((
        FINAL_READ + 1,
        Op::new(reader, OpType::Ok, "read").key("doc").value(read),
    ));
    common::render(timed)
}

fn count(adds: &[Add], outcome: Option<OpType>) -> usize {
    adds.iter().filter(|a| a.outcome == outcome).count()
}

proptest! {
    #[test]
    fn a_read_holding_every_acknowledged_id_is_valid(adds in vec(add(), 0..60)) {
        let result = check(&history(&adds, stored(&adds)));
        prop_assert_eq!(result.valid, Valid::True, "{:#?}", result);
        prop_assert_eq!(result.lost_count, 0);
        prop_assert_eq!(result.attempted, adds.len());
        prop_assert_eq!(result.acknowledged, count(&adds, Some(OpType::Ok)));
        prop_assert_eq!(result.rejected, count(&adds, Some(OpType::Fail)));
        let unknown: Vec<&Add> = adds
            .iter()
            .filter(|a| matches!(a.outcome, None | Some(OpType::Info)))
            .collect();
        prop_assert_eq!(result.unknown, unknown.len());
        prop_assert_eq!(result.recovered, unknown.iter().filter(|a| a.applied).count());
    }

    #[test]
    fn dropping_an_acknowledged_id_from_the_read_loses_exactly_it(
        adds in vec(add(), 1..60),
        pick in any::<Index>(),
    ) {
        let acknowledged: Vec<i64> = (0..adds.len() as i64)
            .filter(|&id| adds[id as usize].outcome == Some(OpType::Ok))
            .collect();
        prop_assume!(!acknowledged.is_empty());
        let dropped = acknowledged[pick.index(acknowledged.len())];
        let read = stored(&adds).into_iter().filter(|&id| id != dropped).collect();
        let result = check(&history(&adds, read));
        prop_assert_eq!(result.valid, Valid::False);
        prop_assert_eq!(result.lost_count, 1);
        prop_assert_eq!(&result.keys[0].lost, &vec![dropped]);
    }

    #[test]
    fn the_order_of_the_read_does_not_matter(
        (adds, read) in vec(add(), 0..60).prop_flat_map(|adds| {
            let read = stored(&adds);
            (Just(adds), Just(read).prop_shuffle())
        })
    ) {
        prop_assert_eq!(check(&history(&adds, read)).valid, Valid::True);
    }
}
