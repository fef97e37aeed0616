//! Synthetic histories for tests, benchmarks and examples; not a stable API.
//!
//! [`object_history`] simulates clients of a correct, linearizable object of any
//! linearizability model, and [`HistoryBuilder`] writes small histories by hand.
//!
//! [`lock_history`] simulates Jepsen-style clients of a *correct* lock service: processes
//! contend on a few keys with `acquire` and `release`, a nemesis starts and stops faults every
//! few seconds, and acquires and releases now and then time out (`info`), far more often while a
//! fault is active. A process whose op timed out is retired and replaced, as in Jepsen. Since the
//! simulated service never grants a held lock, the history has no double grant; its timed-out
//! acquires may still overlap later holds, so its verdict is `valid` or `unknown`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::{Op, OpType, Process};

mod objects;

pub use objects::{linearizability_scenarios, object_history, HistoryBuilder, ObjectWorkload};

/// The shape of a synthetic lock run.
#[derive(Debug, Clone)]
pub struct LockWorkload {
    /// Ops in the history. The simulation stops at this count, leaving some ops uncompleted.
    pub ops: usize,
    /// Concurrent client processes.
    pub processes: u64,
    /// Lock keys the clients contend on.
    pub keys: usize,
    /// Equal workloads give equal histories.
    pub seed: u64,
}

impl Default for LockWorkload {
    /// One million ops by 50 processes on 10 keys.
    fn default() -> Self {
        LockWorkload {
            ops: 1_000_000,
            processes: 50,
            keys: 10,
            seed: 1,
        }
    }
}

/// Simulates `workload` and returns its history, ops in time order.
pub fn lock_history(workload: &LockWorkload) -> Vec<Op> {
    let mut sim = Sim {
        rng: SplitMix64(workload.seed),
        ops: Vec::with_capacity(workload.ops),
        target: workload.ops,
        clients: (0..workload.processes)
            .map(|process| Client {
                process,
                state: State::Idle,
            })
            .collect(),
        keys: (0..workload.keys).map(|k| format!("lock-{k}")).collect(),
        free_at: vec![0; workload.keys],
        fault: None,
        tokens: 0,
    };
    // Actors are the clients, then the nemesis; each always has exactly one event queued.
    let nemesis = sim.clients.len();
    let mut queue: BinaryHeap<Reverse<(u64, usize)>> = (0..nemesis)
        .map(|client| Reverse((0, client)))
        .chain([Reverse((5_000 * MS, nemesis))])
        .collect();
    while sim.ops.len() < sim.target {
        let Reverse((now, actor)) = queue.pop().expect("every actor has an event queued");
        let wait = if actor == nemesis {
            sim.nemesis(now)
        } else {
            sim.client(actor, now)
        };
        queue.push(Reverse((now + wait, actor)));
    }
    sim.ops
}

const MS: u64 = 1_000_000;
/// The lease every acquire asks for; holds are far shorter, so they always end by release.
const TTL_MS: u64 = 500;
const FAULTS: [&str; 3] = ["partition", "pause", "kill"];
const NODES: [&str; 5] = ["n1", "n2", "n3", "n4", "n5"];

struct Sim {
    rng: SplitMix64,
    ops: Vec<Op>,
    target: usize,
    clients: Vec<Client>,
    keys: Vec<String>,
    /// When the service will next grant each key: its holder's release, or its lease's end.
    free_at: Vec<u64>,
    /// The active fault and its nodes.
    fault: Option<(&'static str, Vec<String>)>,
    tokens: u64,
}

struct Client {
    process: u64,
    state: State,
}

/// What a client does at its next event.
enum State {
    /// Invokes an acquire on a random key.
    Idle,
    /// Completes its acquire.
    Acquiring { key: usize, token: String },
    /// Invokes its release.
    Holding { key: usize, token: String },
    /// Completes its release.
    Releasing { key: usize, token: String },
}

impl Sim {
    /// Runs client `c`'s next event at `now`; returns the time until its following one.
    fn client(&mut self, c: usize, now: u64) -> u64 {
        let process = Process::Client(self.clients[c].process);
        let (next, wait) = match std::mem::replace(&mut self.clients[c].state, State::Idle) {
            State::Idle => {
                let key = self.rng.below(self.keys.len() as u64) as usize;
                self.tokens += 1;
                let token = self.tokens.to_string();
                let mut op = self.op(process, OpType::Invoke, "acquire", key, &token);
                op.ttl_ms = Some(TTL_MS);
                self.emit(now, op);
                (State::Acquiring { key, token }, self.latency())
            }
            State::Acquiring { key, token } => {
                let free = self.free_at[key] <= now;
                if free {
                    self.free_at[key] = now + TTL_MS * MS;
                }
                if self.timed_out() {
                    // The grant (if any) is lost on the way back: the lease just runs out.
                    self.emit(now, self.op(process, OpType::Info, "acquire", key, &token));
                    self.retire(c);
                    (State::Idle, self.think())
                } else if free {
                    self.emit(now, self.op(process, OpType::Ok, "acquire", key, &token));
                    (State::Holding { key, token }, self.between_ms(1, 5))
                } else {
                    self.emit(now, self.op(process, OpType::Fail, "acquire", key, &token));
                    (State::Idle, self.think())
                }
            }
            State::Holding { key, token } => {
                self.emit(
                    now,
                    self.op(process, OpType::Invoke, "release", key, &token),
                );
                (State::Releasing { key, token }, self.latency())
            }
            State::Releasing { key, token } => {
                if self.timed_out() {
                    // The release never reached the service: the lease runs out.
                    self.emit(now, self.op(process, OpType::Info, "release", key, &token));
                    self.retire(c);
                } else {
                    self.free_at[key] = now;
                    self.emit(now, self.op(process, OpType::Ok, "release", key, &token));
                }
                (State::Idle, self.think())
            }
        };
        self.clients[c].state = next;
        wait
    }

    /// Starts or stops a fault at `now`; returns the time until the nemesis acts again.
    fn nemesis(&mut self, now: u64) -> u64 {
        let (f, fault, nodes, wait) = match self.fault.take() {
            None => {
                let fault = FAULTS[self.rng.below(FAULTS.len() as u64) as usize];
                let first = self.rng.below(NODES.len() as u64) as usize;
                let count = 1 + self.rng.below(2) as usize;
                let nodes: Vec<String> = (0..count)
                    .map(|i| NODES[(first + i) % NODES.len()].to_string())
                    .collect();
                self.fault = Some((fault, nodes.clone()));
                ("start", fault, nodes, self.between_ms(1_000, 3_000))
            }
            Some((fault, nodes)) => ("stop", fault, nodes, self.between_ms(5_000, 10_000)),
        };
        let mut op = Op::new(Process::NEMESIS, OpType::Info, f).nodes(nodes);
        op.fault = Some(fault.to_string());
        self.emit(now, op);
        wait
    }

    /// A client op `f` on `key` under `token`; an `info` one timed out.
    fn op(&self, process: Process, kind: OpType, f: &str, key: usize, token: &str) -> Op {
        let op = Op::new(process, kind, f).key(&self.keys[key]).token(token);
        if kind == OpType::Info {
            op.error("timeout")
        } else {
            op
        }
    }

    fn emit(&mut self, now: u64, op: Op) {
        let index = self.ops.len() as u64;
        self.ops.push(op.at(index, now));
    }

    /// Replaces client `c`'s process by a fresh one, as Jepsen does after an `info`.
    fn retire(&mut self, c: usize) {
        self.clients[c].process += self.clients.len() as u64;
    }

    /// Whether an op times out: 1 in 2,000 normally, 1 in 50 while a fault is active.
    fn timed_out(&mut self) -> bool {
        let odds = if self.fault.is_some() { 50 } else { 2_000 };
        self.rng.below(odds) == 0
    }

    /// A round trip to the service: 0.2 to 2 ms.
    fn latency(&mut self) -> u64 {
        MS / 5 + self.rng.below(9 * MS / 5)
    }

    /// A duration of `low` ms or more, under `high` ms.
    fn between_ms(&mut self, low: u64, high: u64) -> u64 {
        low * MS + self.rng.below((high - low) * MS)
    }

    /// A client's pause between ops: up to 40 ms.
    fn think(&mut self) -> u64 {
        self.rng.below(40 * MS)
    }
}

/// SplitMix64: a tiny, fast, seedable generator, good enough for synthetic workloads.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (slightly biased for huge `n`, which is fine here).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{lock_safety, Valid};

    #[test]
    fn a_simulated_correct_lock_has_no_double_grant() {
        let workload = LockWorkload {
            ops: 50_000,
            ..LockWorkload::default()
        };
        let history = lock_history(&workload);
        assert_eq!(history.len(), workload.ops);
        assert!(history.windows(2).all(|w| w[0].time <= w[1].time));
        assert!(history.iter().any(|op| op.process.is_nemesis()));
        let result = lock_safety::check(&history);
        assert_eq!(result.double_grant_count, 0);
        assert_ne!(result.valid, Valid::False);
        assert!(result.holds > 1_000);
    }
}
