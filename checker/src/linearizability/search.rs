//! The search for a linearization of one key's operations: Wing and Gong's algorithm with
//! Lowe's improvements, as in Porcupine, plus refinements for `info` operations.
//!
//! - **Entries.** Each `ok` operation has a call entry (at its invoke) and a return entry (at its
//!   completion), in history order, in a doubly linked list over arrays. An operation can be
//!   linearized next when its call comes before the first return still in the list: its
//!   operation must have taken effect before it returned, and those invoked later came after.
//! - **Depth first.** Linearizing an operation steps the model and lifts its entries out of the
//!   list; a dead end (a return reached with no operation before it the model allows) pops the
//!   last one, unlifts it (the links it left still point at its neighbours) and tries the next
//!   candidate. The stack is explicit: no recursion, whatever the history's size.
//! - **Cache** (Lowe). Every configuration entered (linearized operations, model state) is
//!   remembered, and one seen before, or dominated by one seen before, is not entered again:
//!   everything reachable from it has been searched (see `cache.rs`).
//! - **Reads first.** An operation the model marks as a read ([`Model::is_read`]) that the
//!   model allows now is linearized at once, and nothing else is tried in its place: a read
//!   leaves the state as it is, so any linearization from here can be rearranged to begin
//!   with it. If nothing follows from it, nothing follows from here. Without this, the search
//!   tries writes before concurrent reads of the old value, and backtracks.
//! - **Dead ends seen early.** For a model whose refusals can be final (a set never loses an
//!   element, so a read that lacks one never passes again: [`Model::never_allows`]), a
//!   configuration where a candidate, or one of the next few operations, is refused for good is
//!   left at once, rather than after searching everything that follows it.
//! - **`info` operations** have no return entry: they may take effect any time after their
//!   invoke, or never, so the search is done once every `ok` operation is linearized. They sit
//!   in a list of their own and are tried only after every `ok` candidate at a configuration,
//!   the most recently invoked first: most `info` operations never took effect, and one that
//!   did most likely did soon after its invoke. Two `info` operations that the model sees as
//!   equal (two writes of one value) are interchangeable once both are invoked, so only the
//!   earliest one not yet linearized is tried: k pending equal writes cost k + 1 branches, not
//!   2^k. And an `info` operation that would leave the state as it is (a write of the value
//!   held) is not tried: leaving it for later can only do better.
//! - **Limits.** Time and memory are checked as the search goes: the cache and the stack are
//!   charged to the [`Budget`] all keys share, and running out stops the search, never the
//!   process.
//! - **Explanation.** The deepest stack seen is kept (copied only where it differs from the
//!   last copy, so at constant amortized cost per step); if the search fails, it is the longest
//!   linearizable prefix, and the candidates after it are those the model refused.

use std::mem::size_of;

use super::budget::{Budget, Memory, Stop};
use super::cache::{Cache, Linearized};
use super::calls::PartCalls;
use super::explanation::{Explanation, LinearizedOp, OpSummary, RefusedOp, EXPLAINED_OPS};
use super::model::{Model, Values};

/// The end of a list, and "no operation".
const NONE: u32 = u32::MAX;
/// The head of a list.
const HEAD: u32 = 0;
/// How many operations past the candidates are checked for [`Model::never_allows`].
const LOOKAHEAD: usize = 64;
/// Loop iterations between two looks at the clock and the other keys.
const CHECK_EVERY: u32 = 1 << 10;

/// How one key's search ended.
pub(crate) enum PartOutcome {
    Linearizable,
    NotLinearizable(Box<Explanation>),
    Stopped(Stop),
}

/// One key's operations as a model `M` prepared them.
pub(crate) struct Prepared<'h, M: Model> {
    pub model: &'h M,
    pub values: Values,
    /// The calls that take part in the search, `ok` ones first, each in history order.
    pub calls: PartCalls<'h>,
    /// `ops[i]` is `calls.calls[i]` prepared.
    pub ops: Vec<M::Op>,
    /// How many of `ops` completed `ok`; the rest are `info` (or never completed).
    pub ok_count: usize,
    /// Operations that passed whatever their place (nil reads).
    pub passing: usize,
}

/// Searches one key's operations for a linearization within `budget`.
pub(crate) fn search<M: Model>(part: &Prepared<'_, M>, budget: &Budget) -> PartOutcome {
    if let Some(stop) = budget.stop() {
        return PartOutcome::Stopped(stop);
    }
    let mut search = Search::new(part, budget);
    let outcome = match search.run() {
        Ok(true) => PartOutcome::Linearizable,
        Ok(false) => PartOutcome::NotLinearizable(Box::new(search.explain())),
        Err(stop) => PartOutcome::Stopped(stop),
    };
    budget.add_states(search.states);
    outcome
}

/// A doubly linked list of entries over arrays; node 0 is the head.
struct List {
    next: Vec<u32>,
    prev: Vec<u32>,
    /// The entry's operation, shifted left once; the low bit is set on return entries.
    entry: Vec<u32>,
    /// Where the entry is in the history.
    position: Vec<usize>,
}

impl List {
    /// A list of `entries` (position, operation, is return), which must be sorted.
    fn new(entries: impl ExactSizeIterator<Item = (usize, u32, bool)>) -> List {
        let len = entries.len() + 1;
        let mut list = List {
            next: (1..len as u32).chain([NONE]).collect(),
            prev: [NONE].into_iter().chain(0..len as u32 - 1).collect(),
            entry: vec![NONE; len],
            position: vec![0; len],
        };
        for (node, (position, op, is_return)) in (1..).zip(entries) {
            list.entry[node] = op << 1 | u32::from(is_return);
            list.position[node] = position;
        }
        list
    }

    fn first(&self) -> u32 {
        self.next[0]
    }

    fn op(&self, node: u32) -> u32 {
        self.entry[node as usize] >> 1
    }

    fn is_return(&self, node: u32) -> bool {
        self.entry[node as usize] & 1 == 1
    }

    fn position(&self, node: u32) -> usize {
        self.position[node as usize]
    }

    fn unlink(&mut self, node: u32) {
        let (prev, next) = (self.prev[node as usize], self.next[node as usize]);
        self.next[prev as usize] = next;
        if next != NONE {
            self.prev[next as usize] = prev;
        }
    }

    /// Puts back a node unlinked last (among those still out).
    fn relink(&mut self, node: u32) {
        let (prev, next) = (self.prev[node as usize], self.next[node as usize]);
        self.next[prev as usize] = node;
        if next != NONE {
            self.prev[next as usize] = node;
        }
    }
}

/// Where the search looks for the next candidate.
#[derive(Clone, Copy)]
enum Cursor {
    /// At a node of the `ok` list, looking for a read the model allows: linearized at once.
    Read(u32),
    /// At a node of the `ok` list.
    Ok(u32),
    /// At a node of the `info` list, going back towards its head: every call before the first
    /// return left is a candidate, the most recent first.
    Info(u32),
    /// At a dead end.
    Backtrack,
}

/// What came of trying to linearize an operation next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Linearize {
    /// The model does not allow it here.
    Refused,
    /// The configuration it leads to was entered before, or one that dominates it.
    Seen,
    Entered,
}

/// One linearized operation on the stack.
struct Frame<S> {
    op: u32,
    /// A read linearized at once: if nothing follows from it, nothing follows from the
    /// configuration before it either.
    forced: bool,
    state_before: S,
}

struct Search<'p, 'h, M: Model> {
    part: &'p Prepared<'h, M>,
    budget: &'p Budget,
    ok: List,
    info: List,
    /// Each operation's call node: in `ok` for `ok` operations, in `info` for the others.
    call_node: Vec<u32>,
    /// Each `ok` operation's return node.
    return_node: Vec<u32>,
    /// For each `info` operation, the previous one the model sees as equal, or [`NONE`].
    twin_before: Vec<u32>,
    linearized: Linearized,
    remaining_ok: usize,
    state: M::State,
    stack: Vec<Frame<M::State>>,
    cache: Cache<M::State>,
    best: Vec<(u32, M::State)>,
    /// How much of `stack` `best` was copied from and still agrees with.
    best_shared: usize,
    memory: Memory<'p>,
    /// Configurations entered.
    states: u64,
}

impl<'p, 'h, M: Model> Search<'p, 'h, M> {
    fn new(part: &'p Prepared<'h, M>, budget: &'p Budget) -> Self {
        let calls = &part.calls.calls;
        let ok_count = part.ok_count;
        let mut ok_entries: Vec<(usize, u32, bool)> = Vec::with_capacity(2 * ok_count);
        for (op, call) in calls[..ok_count].iter().enumerate() {
            let returned = call.return_position.expect("ok calls come first");
            ok_entries.push((call.invoke_position, op as u32, false));
            ok_entries.push((returned, op as u32, true));
        }
        ok_entries.sort_unstable();
        let info_entries =
            (ok_count..calls.len()).map(|op| (calls[op].invoke_position, op as u32, false));
        let ok = List::new(ok_entries.into_iter());
        let info = List::new(info_entries);

        let mut call_node = vec![NONE; calls.len()];
        let mut return_node = vec![NONE; ok_count];
        for node in 1..ok.entry.len() as u32 {
            let op = ok.op(node) as usize;
            if ok.is_return(node) {
                return_node[op] = node;
            } else {
                call_node[op] = node;
            }
        }
        for node in 1..info.entry.len() as u32 {
            call_node[info.op(node) as usize] = node;
        }
        let mut last_equal: std::collections::HashMap<&M::Op, u32> = Default::default();
        let twin_before = (ok_count..calls.len())
            .map(|op| last_equal.insert(&part.ops[op], op as u32).unwrap_or(NONE))
            .collect();
        Search {
            part,
            budget,
            ok,
            info,
            call_node,
            return_node,
            twin_before,
            linearized: Linearized::new(ok_count, calls.len() - ok_count),
            remaining_ok: ok_count,
            state: part.model.init(),
            stack: Vec::new(),
            cache: Cache::new(),
            best: Vec::new(),
            best_shared: 0,
            memory: Memory::new(budget),
            states: 0,
        }
    }

    /// Whether every `ok` operation can be linearized; `Err` if the search had to stop.
    fn run(&mut self) -> Result<bool, Stop> {
        // The initial configuration, so that an `info` operation leaving it as it is is
        // dominated.
        let state_bytes = self.part.model.state_heap_bytes(&self.state);
        self.cache
            .enter(&self.linearized, &self.state, state_bytes, &mut self.memory)?;
        let mut cursor = Cursor::Read(self.ok.first());
        let mut ticks = 0u32;
        while self.remaining_ok > 0 {
            ticks = ticks.wrapping_add(1);
            if ticks.is_multiple_of(CHECK_EVERY) {
                if let Some(stop) = self.budget.stop() {
                    return Err(stop);
                }
            }
            cursor = match cursor {
                Cursor::Read(node) if node == NONE || self.ok.is_return(node) => {
                    if M::NEVER_ALLOWS && self.refused_for_good_ahead(node) {
                        Cursor::Backtrack
                    } else {
                        Cursor::Ok(self.ok.first())
                    }
                }
                Cursor::Read(node) => {
                    let op = self.ok.op(node);
                    let model = self.part.model;
                    let prepared = &self.part.ops[op as usize];
                    let read = model.is_read(prepared);
                    match read.then(|| self.try_linearize(op, true)).transpose()? {
                        Some(Linearize::Entered) => Cursor::Read(self.ok.first()),
                        // A configuration this read leads to was searched in full already.
                        Some(Linearize::Seen) => Cursor::Backtrack,
                        _ if M::NEVER_ALLOWS && model.never_allows(&self.state, prepared) => {
                            Cursor::Backtrack
                        }
                        _ => Cursor::Read(self.ok.next[node as usize]),
                    }
                }
                Cursor::Ok(node) if node == NONE => Cursor::Info(self.last_info_before(usize::MAX)),
                Cursor::Ok(node) if self.ok.is_return(node) => {
                    Cursor::Info(self.last_info_before(self.ok.position(node)))
                }
                Cursor::Ok(node) => match self.try_linearize(self.ok.op(node), false)? {
                    Linearize::Entered => Cursor::Read(self.ok.first()),
                    _ => Cursor::Ok(self.ok.next[node as usize]),
                },
                Cursor::Info(HEAD) | Cursor::Backtrack => match self.backtrack() {
                    Some(cursor) => cursor,
                    None => return Ok(false),
                },
                Cursor::Info(node) => {
                    let op = self.info.op(node);
                    let twin = self.twin_before[op as usize - self.part.ok_count];
                    let earliest_of_its_kind = twin == NONE || self.linearized.contains(twin);
                    if earliest_of_its_kind && self.try_linearize(op, false)? == Linearize::Entered
                    {
                        Cursor::Read(self.ok.first())
                    } else {
                        Cursor::Info(self.info.prev[node as usize])
                    }
                }
            };
        }
        Ok(true)
    }

    /// Whether one of the next [`LOOKAHEAD`] `ok` operations invoked from `node` on (not yet
    /// candidates) will never be allowed from here: each must still be linearized, so nothing
    /// follows from this configuration.
    fn refused_for_good_ahead(&self, mut node: u32) -> bool {
        let mut looked = 0;
        while node != NONE && looked < LOOKAHEAD {
            if !self.ok.is_return(node) {
                looked += 1;
                let op = &self.part.ops[self.ok.op(node) as usize];
                if self.part.model.never_allows(&self.state, op) {
                    return true;
                }
            }
            node = self.ok.next[node as usize];
        }
        false
    }

    /// The node of the last `info` call not yet linearized that was invoked before `position`;
    /// the head if there is none.
    fn last_info_before(&self, position: usize) -> u32 {
        let info_calls = &self.part.calls.calls[self.part.ok_count..];
        let mut invoked = info_calls.partition_point(|call| call.invoke_position < position);
        while invoked > 0 {
            let op = (self.part.ok_count + invoked - 1) as u32;
            if !self.linearized.contains(op) {
                return self.call_node[op as usize];
            }
            invoked -= 1;
        }
        HEAD
    }

    /// Linearizes `op` next if the model allows it and the configuration it leads to is new.
    fn try_linearize(&mut self, op: u32, forced: bool) -> Result<Linearize, Stop> {
        let model = self.part.model;
        let Some(next) = model.step(&self.state, &self.part.ops[op as usize]) else {
            return Ok(Linearize::Refused);
        };
        if op as usize >= self.part.ok_count && next == self.state {
            // Dominated by the configuration it leaves, where the operation is still to come.
            return Ok(Linearize::Seen);
        }
        self.linearized.flip(op);
        let state_bytes = model.state_heap_bytes(&next);
        let entered = self
            .cache
            .enter(&self.linearized, &next, state_bytes, &mut self.memory);
        if entered != Ok(true) {
            self.linearized.flip(op);
            return entered.map(|_| Linearize::Seen);
        }
        self.states += 1;
        let stack_capacity = self.stack.capacity();
        self.stack.push(Frame {
            op,
            forced,
            state_before: std::mem::replace(&mut self.state, next),
        });
        let grown = self.stack.capacity() - stack_capacity;
        self.memory
            .charge(grown * size_of::<Frame<M::State>>() + state_bytes)?;
        if (op as usize) < self.part.ok_count {
            self.ok.unlink(self.call_node[op as usize]);
            self.ok.unlink(self.return_node[op as usize]);
            self.remaining_ok -= 1;
        } else {
            self.info.unlink(self.call_node[op as usize]);
        }
        self.keep_if_best().map(|()| Linearize::Entered)
    }

    /// Undoes linearizations up to the last one that has an alternative; `None` if none has.
    fn backtrack(&mut self) -> Option<Cursor> {
        loop {
            let frame = self.stack.pop()?;
            self.memory
                .free(self.part.model.state_heap_bytes(&self.state));
            self.best_shared = self.best_shared.min(self.stack.len());
            self.state = frame.state_before;
            self.linearized.flip(frame.op);
            let op = frame.op as usize;
            let call = self.call_node[op] as usize;
            if op >= self.part.ok_count {
                self.info.relink(call as u32);
                return Some(Cursor::Info(self.info.prev[call]));
            }
            self.ok.relink(self.return_node[op]);
            self.ok.relink(call as u32);
            self.remaining_ok += 1;
            if !frame.forced {
                return Some(Cursor::Ok(self.ok.next[call]));
            }
        }
    }

    /// Copies the stack into `best` if it is the deepest yet, from where the two differ.
    fn keep_if_best(&mut self) -> Result<(), Stop> {
        if self.stack.len() <= self.best.len() {
            return Ok(());
        }
        let model = self.part.model;
        let capacity = self.best.capacity();
        for (_, state) in self.best.drain(self.best_shared..) {
            self.memory.free(model.state_heap_bytes(&state));
        }
        let mut heap = 0;
        for depth in self.best_shared..self.stack.len() {
            let after = self
                .stack
                .get(depth + 1)
                .map_or(&self.state, |frame| &frame.state_before);
            heap += model.state_heap_bytes(after);
            self.best.push((self.stack[depth].op, after.clone()));
        }
        self.best_shared = self.stack.len();
        let grown = self.best.capacity() - capacity;
        self.memory
            .charge(grown * size_of::<(u32, M::State)>() + heap)
    }

    /// The explanation of a failed search: the deepest stack, and what came after it.
    fn explain(&self) -> Explanation {
        let part = self.part;
        let (model, values, calls) = (part.model, &part.values, &part.calls.calls);
        let mut linearized = vec![false; calls.len()];
        for &(op, _) in &self.best {
            linearized[op as usize] = true;
        }
        let init = model.init();
        let state = self.best.last().map_or(&init, |(_, state)| state);
        let refused = self.refused_after(&linearized, state);

        let shown = self.best.len().saturating_sub(EXPLAINED_OPS);
        let state_before = match shown {
            0 => &init,
            _ => &self.best[shown - 1].1,
        };
        Explanation {
            linearized_count: self.best.len(),
            state_before: model.describe_state(state_before, values),
            linearized: self.best[shown..]
                .iter()
                .map(|(op, after)| LinearizedOp {
                    op: OpSummary::of(&calls[*op as usize]),
                    state_after: model.describe_state(after, values),
                })
                .collect(),
            refused_count: refused.len(),
            refused: refused
                .iter()
                .take(EXPLAINED_OPS)
                .map(|&op| {
                    let prepared = &part.ops[op as usize];
                    RefusedOp {
                        op: OpSummary::of(&calls[op as usize]),
                        state: model.describe_state(state, values),
                        reason: match model.step(state, prepared) {
                            None if model.never_allows(state, prepared) => {
                                format!("{}, for good", model.refusal(state, prepared, values))
                            }
                            None => model.refusal(state, prepared, values),
                            Some(_) => "the model allows it here, but no linearization of \
                                        the rest follows"
                                .to_string(),
                        },
                    }
                })
                .collect(),
        }
    }

    /// The operations that could come after those `linearized`, where the state is `state`:
    /// the candidates, then any of the next few the model refuses for good.
    fn refused_after(&self, linearized: &[bool], state: &M::State) -> Vec<u32> {
        let is_pending = |node: u32| !linearized[self.ok.op(node) as usize];
        let mut refused = Vec::new();
        // The failed search has put every entry back: walk the lists as the history has them.
        let mut node = self.ok.first();
        while node != NONE && !(is_pending(node) && self.ok.is_return(node)) {
            if is_pending(node) {
                refused.push(self.ok.op(node));
            }
            node = self.ok.next[node as usize];
        }
        let first_return = match node {
            NONE => usize::MAX,
            _ => self.ok.position(node),
        };
        let mut info = self.info.first();
        while info != NONE && self.info.position(info) < first_return {
            if !linearized[self.info.op(info) as usize] {
                refused.push(self.info.op(info));
            }
            info = self.info.next[info as usize];
        }
        let mut looked = 0;
        while node != NONE && looked < LOOKAHEAD {
            let op = self.ok.op(node);
            if is_pending(node) && !self.ok.is_return(node) {
                looked += 1;
                if self
                    .part
                    .model
                    .never_allows(state, &self.part.ops[op as usize])
                {
                    refused.push(op);
                }
            }
            node = self.ok.next[node as usize];
        }
        refused
    }
}
