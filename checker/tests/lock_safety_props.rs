//! Property tests of the lock-safety checker on histories of a correct lock, and of that lock
//! with one hold moved.
//!
//! A generated [`Model`] is laid out from one timeline per key of what a correct lock allows:
//! holds that follow one another (touching at most), and `info` acquires whose ttl window fits
//! between two holds. `fail` acquires land anywhere. Each becomes a [`Group`] of ops, and the
//! groups are dealt to processes so that no process ever has two at once.

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::Index;
use splitbrain_checker::lock_safety::check;
use splitbrain_checker::{Op, OpType, Process, Valid};

/// Where every timeline starts, in ms: later than any acquire's latency, so no time is negative.
const START: u64 = 100;

/// How a generated hold ends.
#[derive(Debug, Clone)]
enum HoldEnd {
    /// A release invoked at the hold's end completes `after` ms later with `outcome`; the lease
    /// outlasts the hold by `slack` ms.
    Release {
        outcome: OpType,
        after: u64,
        slack: u64,
    },
    /// The lease runs out: its `ttl_ms`, or a shorter `validity_ms` if `validity`. A release
    /// may follow `late_release` ms after, and the process holds the lock until then (rule 1):
    /// a correct lock's next holder waits for it.
    Expire {
        validity: bool,
        late_release: Option<u64>,
    },
}

/// One step of a key's timeline, `gap` ms after the previous one ended.
#[derive(Debug, Clone)]
enum Step {
    /// A hold of `duration` ms whose acquire was invoked `latency` ms before it began.
    Hold {
        gap: u64,
        latency: u64,
        duration: u64,
        end: HoldEnd,
        who: Index,
    },
    /// An acquire that times out after `latency` ms and may hold the lock for its `ttl` ms.
    Info {
        gap: u64,
        ttl: u64,
        latency: u64,
        who: Index,
    },
}

/// An acquire that fails, invoked `permille` of the way through the history.
#[derive(Debug, Clone)]
struct Fail {
    permille: u64,
    key: Index,
    latency: u64,
    who: Index,
}

/// The ops of one step, all by one process.
#[derive(Debug, Clone)]
struct Group {
    key: usize,
    /// `(ms, op)` in time order; the process, index and time are set by [`Model::render`].
    ops: Vec<(u64, Op)>,
    /// First and last ms the process is busy with this group.
    span: (u64, u64),
    /// For a hold, its window `[start, end)` in ms as the checker's rule 1 derives it.
    hold: Option<(u64, u64)>,
    /// Picks the process among those free when the group starts.
    who: Index,
    process: u64,
}

impl Group {
    fn new(key: usize, ops: Vec<(u64, Op)>, busy_until: u64, who: Index) -> Group {
        let span = (ops[0].0, busy_until.max(ops[ops.len() - 1].0));
        Group {
            key,
            ops,
            span,
            hold: None,
            who,
            process: 0,
        }
    }
}

/// A generated history before rendering.
#[derive(Debug, Clone)]
struct Model {
    groups: Vec<Group>,
}

fn key_name(key: usize) -> String {
    format!("lock-{key}")
}

/// An op of the placeholder process 0 on `key`.
fn op(key: usize, kind: OpType, f: &str) -> Op {
    Op::new(Process::Client(0), kind, f).key(key_name(key))
}

impl Model {
    /// Lays out one timeline per key plus the failed acquires, then deals the groups to
    /// processes from a pool of `processes`, growing it when every process is busy.
    fn lay_out(timelines: &[Vec<Step>], fails: &[Fail], processes: usize) -> Model {
        let mut groups = Vec::new();
        for (key, steps) in timelines.iter().enumerate() {
            let mut cursor = START;
            for step in steps {
                let (group, next) = match step {
                    Step::Hold {
                        gap,
                        latency,
                        duration,
                        end,
                        who,
                    } => {
                        let start = cursor + gap;
                        let group = hold(key, start, *latency, *duration, end, *who);
                        let (_, held_until) = group.hold.expect("a hold group has a hold");
                        (group, held_until)
                    }
                    Step::Info {
                        gap,
                        ttl,
                        latency,
                        who,
                    } => {
                        let at = cursor + gap;
                        let mut acquire = op(key, OpType::Invoke, "acquire");
                        acquire.ttl_ms = Some(*ttl);
                        let info = op(key, OpType::Info, "acquire").error("timeout");
                        let ops = vec![(at, acquire), (at + latency, info)];
                        // The lock may be taken until the lease runs out: the next step waits.
                        (Group::new(key, ops, 0, *who), at + ttl)
                    }
                };
                cursor = next;
                groups.push(group);
            }
        }
        let end = groups.iter().map(|g| g.span.1).max().unwrap_or(START);
        for fail in fails {
            let key = fail.key.index(timelines.len());
            let mut acquire = op(key, OpType::Invoke, "acquire");
            acquire.ttl_ms = Some(1_000);
            let at = fail.permille * end / 1_000;
            let ops = vec![
                (at, acquire),
                (at + fail.latency, op(key, OpType::Fail, "acquire")),
            ];
            groups.push(Group::new(key, ops, 0, fail.who));
        }
        let mut model = Model { groups };
        model.deal(processes);
        model
    }

    /// Gives each group, in order of start, a process that is free then, as its `who` picks.
    fn deal(&mut self, processes: usize) {
        let mut order: Vec<usize> = (0..self.groups.len()).collect();
        order.sort_by_key(|&g| self.groups[g].span.0);
        let mut busy_until: Vec<Option<u64>> = vec![None; processes];
        for g in order {
            let group = &mut self.groups[g];
            let free: Vec<usize> = (0..busy_until.len())
                .filter(|&p| busy_until[p].is_none_or(|until| until < group.span.0))
                .collect();
            let p = if free.is_empty() {
                busy_until.push(None);
                busy_until.len() - 1
            } else {
                free[group.who.index(free.len())]
            };
            busy_until[p] = Some(group.span.1);
            group.process = p as u64;
        }
    }

    /// The history: every group's ops by its process, in time order.
    fn render(&self) -> Vec<Op> {
        let mut timed: Vec<(u64, Op)> = self
            .groups
            .iter()
            .flat_map(|g| {
                g.ops.iter().map(|(ms, op)| {
                    let mut op = op.clone();
                    op.process = Process::Client(g.process);
                    (*ms, op)
                })
            })
            .collect();
        // Stable: a process's ops never share a time, so each process's order is kept.
        timed.sort_by_key(|(ms, _)| *ms);
        timed
            .into_iter()
            .enumerate()
            .map(|(index, (ms, op))| op.at(index as u64, ms * 1_000_000))
            .collect()
    }

    /// Moves one hold so that it begins inside another hold on the same key, overlapping it by
    /// at least 1 ms. It keeps its process unless that one is busy at the new time, in which case
    /// the first free process (perhaps a new one) takes it, never the other hold's. Returns the
    /// model, the key and both processes, or `None` if no key has two holds.
    fn with_overlap(mut self, pair: Index, offset: Index) -> Option<(Model, usize, u64, u64)> {
        let holds: Vec<usize> = (0..self.groups.len())
            .filter(|&g| self.groups[g].hold.is_some())
            .collect();
        let pairs: Vec<(usize, usize)> = holds
            .iter()
            .flat_map(|&i| holds.iter().map(move |&j| (i, j)))
            .filter(|&(i, j)| i != j && self.groups[i].key == self.groups[j].key)
            .collect();
        if pairs.is_empty() {
            return None;
        }
        let (i, j) = pairs[pair.index(pairs.len())];
        let window = |g: usize| self.groups[g].hold.expect("only holds are paired");
        let ((start, end), from) = (window(i), window(j).0);
        let target = start + offset.index((end - start) as usize) as u64;
        // `t + target - from` never underflows: every op is at most 50 ms before its hold,
        // and every hold starts at or after START.
        let moved = &mut self.groups[j];
        for (ms, _) in &mut moved.ops {
            *ms = *ms + target - from;
        }
        moved.span = (moved.span.0 + target - from, moved.span.1 + target - from);
        moved.hold = moved.hold.map(|(s, e)| (target, e + target - s));
        let (span, process) = (moved.span, moved.process);
        let busy = |p: u64| {
            self.groups.iter().enumerate().any(|(g, other)| {
                g != j && other.process == p && other.span.0 <= span.1 && span.0 <= other.span.1
            })
        };
        let free = std::iter::once(process)
            .chain(0..)
            .find(|&p| !busy(p))
            .expect("some process is free");
        self.groups[j].process = free;
        let (key, first, second) = (
            self.groups[i].key,
            self.groups[i].process,
            self.groups[j].process,
        );
        Some((self, key, first, second))
    }
}

/// A hold on `key` from `start` for `duration` ms; see [`HoldEnd`].
fn hold(key: usize, start: u64, latency: u64, duration: u64, end: &HoldEnd, who: Index) -> Group {
    let invoke = start - latency;
    let stop = start + duration;
    let lease = stop - invoke;
    let mut acquire = op(key, OpType::Invoke, "acquire");
    let mut ok = op(key, OpType::Ok, "acquire");
    let release = op(key, OpType::Invoke, "release");
    let mut after = Vec::new();
    match end {
        HoldEnd::Release {
            outcome,
            after: latency,
            slack,
        } => {
            acquire.ttl_ms = Some(lease + slack);
            after.push((stop, release));
            after.push((stop + latency, op(key, *outcome, "release")));
        }
        HoldEnd::Expire {
            validity,
            late_release,
        } => {
            if *validity {
                acquire.ttl_ms = Some(lease + 1_000);
                ok.validity_ms = Some(lease);
            } else {
                acquire.ttl_ms = Some(lease);
            }
            if let Some(late) = late_release {
                after.push((stop + late, release));
                after.push((stop + late + 1, op(key, OpType::Ok, "release")));
            }
        }
    }
    let held_until = match end {
        HoldEnd::Expire {
            late_release: Some(late),
            ..
        } => stop + late,
        _ => stop,
    };
    let mut ops = vec![(invoke, acquire), (start, ok)];
    ops.extend(after);
    let mut group = Group::new(key, ops, stop, who);
    group.hold = Some((start, held_until));
    group
}

fn gap() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0), 1..50u64]
}

fn hold_end() -> impl Strategy<Value = HoldEnd> {
    let outcome = prop_oneof![Just(OpType::Ok), Just(OpType::Fail), Just(OpType::Info)];
    prop_oneof![
        (outcome, 1..20u64, 0..1_000u64).prop_map(|(outcome, after, slack)| HoldEnd::Release {
            outcome,
            after,
            slack
        }),
        (any::<bool>(), option::of(0..100u64)).prop_map(|(validity, late_release)| {
            HoldEnd::Expire {
                validity,
                late_release,
            }
        }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (gap(), 1..=50u64, 1..300u64, hold_end(), any::<Index>()).prop_map(
            |(gap, latency, duration, end, who)| Step::Hold {
                gap,
                latency,
                duration,
                end,
                who
            }
        ),
        1 => (gap(), 1..500u64, 1..1_000u64, any::<Index>()).prop_map(
            |(gap, ttl, latency, who)| Step::Info {
                gap,
                ttl,
                latency,
                who
            }
        ),
    ]
}

fn fail() -> impl Strategy<Value = Fail> {
    (0..=1_000u64, any::<Index>(), 1..50u64, any::<Index>()).prop_map(
        |(permille, key, latency, who)| Fail {
            permille,
            key,
            latency,
            who,
        },
    )
}

/// Histories of a correct lock: 1 to 3 keys, 1 to 6 processes to begin with.
fn correct_history() -> impl Strategy<Value = Model> {
    (
        vec(vec(step(), 0..12), 1..=3),
        vec(fail(), 0..20),
        1..=6usize,
    )
        .prop_map(|(timelines, fails, processes)| Model::lay_out(&timelines, &fails, processes))
}

/// A correct history with one hold moved into another's: the model, key and both processes.
fn overlapping_history() -> impl Strategy<Value = (Model, usize, u64, u64)> {
    (correct_history(), any::<Index>(), any::<Index>())
        .prop_filter_map("needs two holds on one key", |(model, pair, offset)| {
            model.with_overlap(pair, offset)
        })
}

/// The history with the acquire `ok`s picked by `mask` (bit n for the nth, cyclically) made
/// `info`.
fn oks_made_info(mut history: Vec<Op>, mask: u64) -> Vec<Op> {
    let oks = history
        .iter_mut()
        .filter(|op| op.f == "acquire" && op.kind == OpType::Ok);
    for (n, op) in oks.enumerate() {
        if mask >> (n % 64) & 1 == 1 {
            op.kind = OpType::Info;
        }
    }
    history
}

proptest! {
    #[test]
    fn a_correct_lock_is_valid(model in correct_history()) {
        let history = model.render();
        let result = check(&history);
        prop_assert_eq!(result.valid, Valid::True, "{:#?}", result);
        let oks = history
            .iter()
            .filter(|op| op.f == "acquire" && op.kind == OpType::Ok)
            .count();
        prop_assert_eq!(result.holds, oks);
    }

    #[test]
    fn a_hold_moved_into_another_is_a_double_grant(
        (model, key, first, second) in overlapping_history()
    ) {
        let result = check(&model.render());
        prop_assert_eq!(result.valid, Valid::False);
        prop_assert!(result.double_grant_count >= 1);
        let (a, b) = (Process::Client(first), Process::Client(second));
        let named = result.double_grants.iter().any(|g| {
            let pair = (g.first.process, g.second.process);
            g.key == key_name(key) && (pair == (a, b) || pair == (b, a))
        });
        prop_assert!(named, "no double grant of {} and {} on {}: {:#?}", a, b, key, result);
    }

    #[test]
    fn an_unknown_acquire_never_makes_a_valid_history_invalid(
        model in correct_history(),
        mask in any::<u64>(),
    ) {
        let history = model.render();
        prop_assert_eq!(check(&history).valid, Valid::True);
        prop_assert_ne!(check(&oks_made_info(history, mask)).valid, Valid::False);
    }

    #[test]
    fn an_unknown_acquire_never_adds_a_double_grant(
        (model, ..) in overlapping_history(),
        mask in any::<u64>(),
    ) {
        let history = model.render();
        let before = check(&history).double_grant_count;
        let after = check(&oks_made_info(history, mask)).double_grant_count;
        prop_assert!(after <= before, "{} double grants became {}", before, after);
    }
}
