//! Histories of correct objects, for the linearizability checker's tests and benchmarks.
//!
//! [`object_history`] runs clients against a real object of one of the checker's models, with
//! the model's operation conventions. Each operation takes effect at one instant between its
//! invoke and its completion (its linearization point), so the history is linearizable by
//! construction. Some operations time out (`info`): half of those take effect, at any time
//! after their invoke, even after the client gave up; the process is then retired and the
//! client goes on under a new one, as in Jepsen. A lock's timed-out acquire never takes effect
//! and its timed-out release always does, so that no lock is held forever by a retired process.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use serde_json::{json, Value};

use super::SplitMix64;
use crate::{Op, OpType, Process};

/// The shape of a simulated run against a correct object.
#[derive(Debug, Clone)]
pub struct ObjectWorkload {
    /// A linearizability model's name: the object simulated and its operations.
    pub model: &'static str,
    /// Ops in the history. The simulation stops at this count, leaving some ops uncompleted.
    pub ops: usize,
    /// Concurrent clients.
    pub processes: u64,
    /// Objects (keys) the clients spread their operations over; one means no `key` field.
    pub keys: usize,
    /// Percent of operations that time out.
    pub info_percent: u64,
    /// Equal workloads give equal histories.
    pub seed: u64,
}

/// The linearizability benchmark's scenarios, by name: cas-register histories with one key
/// and 5, 10 or 20 processes, of 100 to 10,000 ops; 10 keys and 50 clients; 100 keys and
/// 100,000 ops. About a tenth of the operations time out.
pub fn linearizability_scenarios() -> Vec<(String, ObjectWorkload)> {
    let workload = |ops, processes, keys| ObjectWorkload {
        model: "cas-register",
        ops,
        processes,
        keys,
        info_percent: 10,
        seed: 1,
    };
    let mut scenarios = Vec::new();
    for processes in [5, 10, 20] {
        for ops in [100, 1_000, 10_000] {
            scenarios.push((
                format!("1key_{processes}p_{ops}ops"),
                workload(ops, processes, 1),
            ));
        }
    }
    scenarios.push(("10keys_50p_2000ops".to_string(), workload(2_000, 50, 10)));
    scenarios.push((
        "100keys_200p_100000ops".to_string(),
        workload(100_000, 200, 100),
    ));
    scenarios
}

/// Simulates `workload` and returns its history, ops in time order.
///
/// # Panics
///
/// If the model is not one of the checker's.
pub fn object_history(workload: &ObjectWorkload) -> Vec<Op> {
    let object = Object::new(workload.model);
    let mut sim = Sim {
        rng: SplitMix64(workload.seed),
        ops: Vec::with_capacity(workload.ops),
        objects: vec![object; workload.keys.max(1)],
        workload: workload.clone(),
        calls: Vec::new(),
        queue: BinaryHeap::new(),
        sequence: 0,
        next_element: 0,
    };
    let mut clients: Vec<Client> = (0..workload.processes)
        .map(|process| Client {
            process,
            holds: vec![false; sim.objects.len()],
        })
        .collect();
    for client in 0..clients.len() {
        let at = sim.rng.below(MS);
        sim.schedule(at, Event::Invoke { client });
    }
    while sim.ops.len() < workload.ops {
        let Some(Reverse((now, _, event))) = sim.queue.pop() else {
            break;
        };
        match event {
            Event::Invoke { client } => sim.invoke(&clients[client], client, now),
            Event::Effect { call } => sim.take_effect(call),
            Event::Complete { call } => sim.complete(&mut clients, call, now),
        }
    }
    sim.ops
}

const MS: u64 = 1_000_000;
/// How long a client waits before it gives up on an operation.
const TIMEOUT: u64 = 5 * MS;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Invoke { client: usize },
    Effect { call: usize },
    Complete { call: usize },
}

struct Client {
    process: u64,
    /// For locks: whether the client holds each key's lock.
    holds: Vec<bool>,
}

/// An operation in flight.
struct InFlight {
    client: usize,
    process: u64,
    key: usize,
    f: &'static str,
    value: Option<Value>,
    timed_out: bool,
    /// How the object answered, once the operation took effect.
    answer: Option<(OpType, Option<Value>)>,
}

struct Sim {
    rng: SplitMix64,
    ops: Vec<Op>,
    objects: Vec<Object>,
    workload: ObjectWorkload,
    calls: Vec<InFlight>,
    queue: BinaryHeap<Reverse<(u64, u64, Event)>>,
    sequence: u64,
    /// The next element a set's add adds: every add's is new.
    next_element: u64,
}

impl Sim {
    fn schedule(&mut self, at: u64, event: Event) {
        self.sequence += 1;
        self.queue.push(Reverse((at, self.sequence, event)));
    }

    fn invoke(&mut self, client: &Client, index: usize, now: u64) {
        let key = self.rng.below(self.objects.len() as u64) as usize;
        self.next_element += 1;
        let (f, value) =
            self.objects[key].request(&mut self.rng, client.holds[key], self.next_element);
        let timed_out = self.rng.below(100) < self.workload.info_percent;
        let call = self.calls.len();
        self.emit(now, client.process, OpType::Invoke, key, f, value.clone());
        let effect_after = 1 + self.rng.below(2 * MS);
        if !timed_out {
            self.schedule(now + effect_after, Event::Effect { call });
            let answer_after = 1 + self.rng.below(2 * MS);
            self.schedule(now + effect_after + answer_after, Event::Complete { call });
        } else {
            let takes_effect = match f {
                "acquire" => false,
                "release" => true,
                _ => self.rng.below(2) == 0,
            };
            if takes_effect {
                let late = self.rng.below(3 * TIMEOUT);
                self.schedule(now + 1 + late, Event::Effect { call });
            }
            self.schedule(now + TIMEOUT, Event::Complete { call });
        }
        self.calls.push(InFlight {
            client: index,
            process: client.process,
            key,
            f,
            value,
            timed_out,
            answer: None,
        });
    }

    fn take_effect(&mut self, call: usize) {
        let call = &mut self.calls[call];
        let answer = self.objects[call.key].apply(call.f, call.value.as_ref(), call.process);
        call.answer = Some(answer);
    }

    fn complete(&mut self, clients: &mut [Client], call: usize, now: u64) {
        let call = &self.calls[call];
        let (kind, value) = if call.timed_out {
            (OpType::Info, call.value.clone())
        } else {
            call.answer
                .clone()
                .expect("an answer comes after its effect")
        };
        let (index, process, key, f) = (call.client, call.process, call.key, call.f);
        self.emit(now, process, kind, key, f, value);
        let client = &mut clients[index];
        match (f, kind) {
            (_, OpType::Info) => {
                client.process += self.workload.processes;
                client.holds.fill(false);
            }
            ("acquire", OpType::Ok) => client.holds[key] = true,
            ("release", OpType::Ok) => client.holds[key] = false,
            _ => {}
        }
        let think = self.rng.below(MS);
        self.schedule(now + think, Event::Invoke { client: index });
    }

    fn emit(
        &mut self,
        now: u64,
        process: u64,
        kind: OpType,
        key: usize,
        f: &str,
        value: Option<Value>,
    ) {
        let mut op = Op::new(Process::Client(process), kind, f).at(self.ops.len() as u64, now);
        if self.objects.len() > 1 {
            op = op.key(format!("k{key}"));
        }
        op.value = value;
        self.ops.push(op);
    }
}

/// A real object of one of the models.
#[derive(Debug, Clone)]
enum Object {
    Register { cas: bool, value: Value },
    Lock { holder: Option<u64> },
    Set(Vec<u64>),
    Counter(i64),
    Registers(BTreeMap<String, Value>),
}

/// The values registers take: few, so that reads often match several writes.
const VALUES: u64 = 5;
const REGISTERS: [&str; 3] = ["x", "y", "z"];

impl Object {
    fn new(model: &str) -> Object {
        match model {
            "register" | "cas-register" => Object::Register {
                cas: model == "cas-register",
                value: Value::Null,
            },
            "mutex" | "owner-mutex" => Object::Lock { holder: None },
            "set" => Object::Set(Vec::new()),
            "counter" => Object::Counter(0),
            "multi-register" => Object::Registers(BTreeMap::new()),
            other => panic!("no simulation of model {other}"),
        }
    }

    /// The operation a client invokes next; `element` is a fresh value for a set's add.
    fn request(
        &self,
        rng: &mut SplitMix64,
        holds: bool,
        element: u64,
    ) -> (&'static str, Option<Value>) {
        let roll = rng.below(4);
        match self {
            Object::Register { cas, .. } => match roll {
                0 | 1 => ("read", None),
                2 if *cas => ("cas", Some(json!([rng.below(VALUES), rng.below(VALUES)]))),
                _ => ("write", Some(json!(rng.below(VALUES)))),
            },
            Object::Lock { .. } if holds => ("release", None),
            Object::Lock { .. } => ("acquire", None),
            Object::Set(_) if roll == 0 => ("read", None),
            Object::Set(_) => ("add", Some(json!(element))),
            Object::Counter(_) if roll == 0 => ("read", None),
            Object::Counter(_) => ("add", Some(json!(1 + rng.below(5)))),
            Object::Registers(_) => {
                let mut named = serde_json::Map::new();
                for register in REGISTERS {
                    if rng.below(2) == 0 || named.is_empty() && register == "z" {
                        named.insert(register.to_string(), json!(rng.below(VALUES)));
                    }
                }
                if roll < 2 {
                    named.values_mut().for_each(|v| *v = Value::Null);
                    ("read", Some(Value::Object(named)))
                } else {
                    ("write", Some(Value::Object(named)))
                }
            }
        }
    }

    /// Does `f` at this instant; the answer the client will get.
    fn apply(&mut self, f: &str, request: Option<&Value>, process: u64) -> (OpType, Option<Value>) {
        match (self, f) {
            (Object::Register { value, .. }, "read") => (OpType::Ok, Some(value.clone())),
            (Object::Register { value, .. }, "write") => {
                *value = request.cloned().unwrap_or_default();
                (OpType::Ok, request.cloned())
            }
            (Object::Register { value, .. }, _) => {
                let pair = request
                    .and_then(Value::as_array)
                    .expect("cas [expected, new]");
                if *value == pair[0] {
                    *value = pair[1].clone();
                    (OpType::Ok, request.cloned())
                } else {
                    (OpType::Fail, request.cloned())
                }
            }
            (Object::Lock { holder }, "acquire") if holder.is_none() => {
                *holder = Some(process);
                (OpType::Ok, None)
            }
            (Object::Lock { .. }, "acquire") => (OpType::Fail, None),
            (Object::Lock { holder }, _) => {
                *holder = None;
                (OpType::Ok, None)
            }
            (Object::Set(elements), "add") => {
                elements.push(request.and_then(Value::as_u64).expect("an element"));
                (OpType::Ok, request.cloned())
            }
            (Object::Set(elements), _) => (OpType::Ok, Some(json!(elements))),
            (Object::Counter(total), "add") => {
                *total += request.and_then(Value::as_i64).expect("a delta");
                (OpType::Ok, request.cloned())
            }
            (Object::Counter(total), _) => (OpType::Ok, Some(json!(total))),
            (Object::Registers(registers), f) => {
                let named = request
                    .and_then(Value::as_object)
                    .expect("{register: value}");
                let mut answer = named.clone();
                for (register, value) in answer.iter_mut() {
                    if f == "write" {
                        registers.insert(register.clone(), value.clone());
                    } else {
                        *value = registers.get(register).cloned().unwrap_or_default();
                    }
                }
                (OpType::Ok, Some(Value::Object(answer)))
            }
        }
    }
}

/// Writes small histories by hand: ops numbered in order, one millisecond apart.
///
/// ```
/// # use splitbrain_checker::testing::HistoryBuilder;
/// # use serde_json::json;
/// let history = HistoryBuilder::default()
///     .invoke(1, "write", json!(1))
///     .ok(1, "write", json!(1))
///     .build();
/// assert_eq!(history.len(), 2);
/// ```
#[derive(Debug, Default, Clone)]
pub struct HistoryBuilder {
    ops: Vec<Op>,
    key: Option<String>,
}

impl HistoryBuilder {
    /// Ops added from now on name `key`.
    pub fn on(&mut self, key: &str) -> &mut Self {
        self.key = Some(key.to_string());
        self
    }

    pub fn invoke(&mut self, process: u64, f: &str, value: impl Into<Option<Value>>) -> &mut Self {
        self.client(process, OpType::Invoke, f, value.into())
    }

    pub fn ok(&mut self, process: u64, f: &str, value: impl Into<Option<Value>>) -> &mut Self {
        self.client(process, OpType::Ok, f, value.into())
    }

    pub fn info(&mut self, process: u64, f: &str, value: impl Into<Option<Value>>) -> &mut Self {
        self.client(process, OpType::Info, f, value.into())
    }

    pub fn fail(&mut self, process: u64, f: &str, value: impl Into<Option<Value>>) -> &mut Self {
        self.client(process, OpType::Fail, f, value.into())
    }

    /// A nemesis op: `start` or `stop` of a fault.
    pub fn nemesis(&mut self, f: &str) -> &mut Self {
        self.push(Op::new(Process::NEMESIS, OpType::Info, f))
    }

    /// An operation invoked and completed before the next one: invoke, then `ok` with `value`.
    pub fn call(&mut self, process: u64, f: &str, value: impl Into<Option<Value>>) -> &mut Self {
        let value = value.into();
        let invoke_value = if f == "read" { None } else { value.clone() };
        self.invoke(process, f, invoke_value).ok(process, f, value)
    }

    /// `op` at `ms` milliseconds into the run, numbered in the order it was added: a test
    /// that writes a history lane by lane adds its ops out of time order and builds it with
    /// [`HistoryBuilder::build_in_time_order`].
    pub fn at(&mut self, ms: u64, op: Op) -> &mut Self {
        let index = self.ops.len() as u64;
        self.ops.push(op.at(index, ms * MS));
        self
    }

    /// The op added last, for what the builder's methods do not set.
    pub fn last_mut(&mut self) -> Option<&mut Op> {
        self.ops.last_mut()
    }

    pub fn build(&self) -> Vec<Op> {
        self.ops.clone()
    }

    /// The history sorted by time (ops at one time keep the order they were added in), and
    /// numbered again in that order, as a recorder would have written it.
    pub fn build_in_time_order(&self) -> Vec<Op> {
        let mut ops = self.build();
        ops.sort_by_key(|op| op.time);
        for (index, op) in ops.iter_mut().enumerate() {
            op.index = index as u64;
        }
        ops
    }

    fn client(&mut self, process: u64, kind: OpType, f: &str, value: Option<Value>) -> &mut Self {
        let mut op = Op::new(Process::Client(process), kind, f);
        op.key = self.key.clone();
        op.value = value;
        self.push(op)
    }

    fn push(&mut self, op: Op) -> &mut Self {
        let index = self.ops.len() as u64;
        self.ops.push(op.at(index, index * MS));
        self
    }
}
