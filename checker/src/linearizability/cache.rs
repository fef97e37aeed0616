//! The configurations a search has entered (Lowe's cache), and the bitsets that name them.
//!
//! A configuration is the set of linearized operations and the model state. Two refinements
//! over a plain set of (bitset, state) pairs:
//!
//! - **Dominance.** Configurations with the same linearized `ok` operations and the same state
//!   differ only in which `info` operations took effect. The one with fewer of those (a subset)
//!   can do everything the other can: `info` operations have no return to meet, so the others
//!   are just more options. So a configuration is skipped when the cache holds one with the same
//!   `ok` operations and state and a subset of its `info` ones, not only an equal one. Among
//!   other things, this skips an `info` operation that leaves the state as it was. Subset
//!   checks cost a scan, so each (`ok` operations, state) keeps at most
//!   [`DOMINATING_SETS`] sets of `info` operations to check against, the smallest seen; further
//!   configurations are matched exactly, in a table of their own.
//! - **Compact keys.** `ok` operations are numbered in invoke order and mostly linearized in
//!   about that order, so their bitset is a run of full words, a few words of recent activity,
//!   and zeros. The cache stores the number of full words and the words of activity only.
//!
//! Bitsets' hashes are kept incrementally (Zobrist: a random word per operation, xored in and
//! out), so a step costs one hash of the model state.

use std::hash::{Hash, Hasher};
use std::mem::size_of;

use hashbrown::HashTable;

use super::budget::{Memory, Stop};

/// What the allocator adds to each allocation, for memory estimates.
const ALLOCATION_OVERHEAD: usize = 16;
/// Sets of `info` operations kept per (`ok` operations, state) for subset checks.
pub(super) const DOMINATING_SETS: usize = 8;

/// The operations linearized so far: `ok` operations `0..ok_count`, `info` ones after.
pub(super) struct Linearized {
    ok_count: usize,
    ok: Vec<u64>,
    /// Leading words of `ok` with every bit set.
    full_words: usize,
    /// Words of `ok` up to the last one with a bit set.
    used_words: usize,
    ok_hash: u64,
    info: Vec<u64>,
    info_hash: u64,
    /// A random word per operation.
    zobrist: Vec<u64>,
}

impl Linearized {
    pub fn new(ok_count: usize, info_count: usize) -> Linearized {
        let mut seed = SplitMix64(0x5eed);
        Linearized {
            ok_count,
            ok: vec![0; ok_count.div_ceil(64)],
            full_words: 0,
            used_words: 0,
            ok_hash: 0,
            info: vec![0; info_count.div_ceil(64)],
            info_hash: 0,
            zobrist: (0..ok_count + info_count).map(|_| seed.next()).collect(),
        }
    }

    pub fn contains(&self, op: u32) -> bool {
        let (words, bit) = self.locate(op);
        words[bit / 64] & (1 << (bit % 64)) != 0
    }

    /// Adds `op` if it is absent, removes it if present.
    pub fn flip(&mut self, op: u32) {
        let op = op as usize;
        if op >= self.ok_count {
            let bit = op - self.ok_count;
            self.info[bit / 64] ^= 1 << (bit % 64);
            self.info_hash ^= self.zobrist[op];
            return;
        }
        let word = op / 64;
        self.ok[word] ^= 1 << (op % 64);
        self.ok_hash ^= self.zobrist[op];
        if self.ok[word] & (1 << (op % 64)) != 0 {
            self.used_words = self.used_words.max(word + 1);
            while self.ok.get(self.full_words) == Some(&u64::MAX) {
                self.full_words += 1;
            }
        } else {
            self.full_words = self.full_words.min(word);
            while self.used_words > 0 && self.ok[self.used_words - 1] == 0 {
                self.used_words -= 1;
            }
        }
    }

    fn locate(&self, op: u32) -> (&[u64], usize) {
        let op = op as usize;
        if op < self.ok_count {
            (&self.ok, op)
        } else {
            (&self.info, op - self.ok_count)
        }
    }

    fn ok_tail(&self) -> &[u64] {
        &self.ok[self.full_words..self.used_words]
    }

    /// The `info` bitset without its trailing zero words.
    fn info_set(&self) -> &[u64] {
        let used = self
            .info
            .iter()
            .rposition(|&word| word != 0)
            .map_or(0, |last| last + 1);
        &self.info[..used]
    }
}

/// Configurations with one set of `ok` operations and one state.
struct Entry<S> {
    hash: u64,
    full_words: usize,
    ok_tail: Box<[u64]>,
    state: S,
    /// The smallest sets of `info` operations seen with them, none a subset of another: the
    /// first, and up to [`DOMINATING_SETS`] - 1 more.
    info: Box<[u64]>,
    more_info: Vec<Box<[u64]>>,
}

impl<S> Entry<S> {
    fn dominates(&self, info: &[u64]) -> bool {
        is_subset(&self.info, info) || self.more_info.iter().any(|set| is_subset(set, info))
    }

    /// Keeps `info`, which no set here is a subset of, among the dominating sets if it is a
    /// subset of one of them or there is room; `false` if it was not kept.
    fn keep(&mut self, info: &[u64], memory: &mut Memory) -> Result<bool, Stop> {
        let kept_before = self.more_info.len();
        let before = set_bytes(&self.info) + set_list_bytes(&self.more_info);
        // The most the list can grow by: the new set, and the list doubling.
        let bound = set_bytes(info) + self.more_info.capacity().max(4) * size_of::<Box<[u64]>>();
        memory.charge(bound)?;
        self.more_info.retain(|seen| !is_subset(info, seen));
        let kept = if is_subset(info, &self.info) {
            self.info = info.into();
            true
        } else if self.more_info.len() < kept_before || kept_before + 1 < DOMINATING_SETS {
            self.more_info.push(info.into());
            true
        } else {
            false
        };
        memory.free(before + bound);
        memory.charge(set_bytes(&self.info) + set_list_bytes(&self.more_info))?;
        Ok(kept)
    }
}

/// A configuration matched exactly: an entry's `ok` operations and state, and a set of `info`
/// operations.
struct Exact {
    hash: u64,
    entry: u32,
    info: Box<[u64]>,
}

/// The configurations entered.
pub(super) struct Cache<S> {
    entries: Vec<Entry<S>>,
    /// `entries` by `ok` operations and state.
    by_ok_and_state: HashTable<u32>,
    exact: HashTable<Exact>,
}

impl<S: Clone + Eq + Hash> Cache<S> {
    pub fn new() -> Self {
        Cache {
            entries: Vec::new(),
            by_ok_and_state: HashTable::new(),
            exact: HashTable::new(),
        }
    }

    /// Records the configuration (`linearized`, `state`) as entered, if no configuration
    /// entered before is it or dominates it. `Ok(false)`: one does, and it need not be
    /// entered. `state_bytes` is what the state holds on the heap.
    pub fn enter(
        &mut self,
        linearized: &Linearized,
        state: &S,
        state_bytes: usize,
        memory: &mut Memory,
    ) -> Result<bool, Stop> {
        let hash = linearized.ok_hash ^ hash_state(state);
        let info = linearized.info_set();
        let entries = &self.entries;
        let same_ok_and_state = |&index: &u32| {
            let entry = &entries[index as usize];
            entry.hash == hash
                && entry.full_words == linearized.full_words
                && *entry.ok_tail == *linearized.ok_tail()
                && entry.state == *state
        };
        let Some(&index) = self.by_ok_and_state.find(hash, same_ok_and_state) else {
            self.add_entry(hash, linearized, state, state_bytes, memory)?;
            return Ok(true);
        };
        let entry = &mut self.entries[index as usize];
        if entry.dominates(info) {
            return Ok(false);
        }
        if entry.keep(info, memory)? {
            return Ok(true);
        }
        let hash = linearized.info_hash ^ u64::from(index).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let same =
            |exact: &Exact| exact.hash == hash && exact.entry == index && *exact.info == *info;
        if self.exact.find(hash, same).is_some() {
            return Ok(false);
        }
        grow_if_full(&mut self.exact, |exact| exact.hash, memory)?;
        memory.charge(set_bytes(info))?;
        self.exact.insert_unique(
            hash,
            Exact {
                hash,
                entry: index,
                info: info.into(),
            },
            |exact| exact.hash,
        );
        Ok(true)
    }

    fn add_entry(
        &mut self,
        hash: u64,
        linearized: &Linearized,
        state: &S,
        state_bytes: usize,
        memory: &mut Memory,
    ) -> Result<(), Stop> {
        let entries = &self.entries;
        grow_if_full(
            &mut self.by_ok_and_state,
            |&i| entries[i as usize].hash,
            memory,
        )?;
        let capacity = self.entries.capacity();
        if self.entries.len() == capacity {
            memory.charge(capacity.max(4) * size_of::<Entry<S>>())?;
        }
        let info = linearized.info_set();
        memory.charge(set_bytes(linearized.ok_tail()) + set_bytes(info) + state_bytes)?;
        let index = self.entries.len() as u32;
        self.entries.push(Entry {
            hash,
            full_words: linearized.full_words,
            ok_tail: linearized.ok_tail().into(),
            state: state.clone(),
            info: info.into(),
            more_info: Vec::new(),
        });
        let entries = &self.entries;
        self.by_ok_and_state
            .insert_unique(hash, index, |&i| entries[i as usize].hash);
        Ok(())
    }
}

/// Doubles a full table, charging the bigger table before it is allocated.
fn grow_if_full<T>(
    table: &mut HashTable<T>,
    hash: impl Fn(&T) -> u64,
    memory: &mut Memory,
) -> Result<(), Stop> {
    if table.len() < table.capacity() {
        return Ok(());
    }
    let before = table_bytes::<T>(table.capacity());
    let wanted = (2 * table.capacity()).max(64);
    let estimate = table_bytes::<T>(wanted) - before;
    memory.charge(estimate)?;
    table.reserve(wanted - table.len(), hash);
    memory.free(estimate);
    memory.charge(table_bytes::<T>(table.capacity()) - before)
}

/// Whether every bit of `small` is set in `large`.
fn is_subset(small: &[u64], large: &[u64]) -> bool {
    small.len() <= large.len() && small.iter().zip(large).all(|(s, l)| s & !l == 0)
}

/// The heap bytes of a boxed bitset.
fn set_bytes(words: &[u64]) -> usize {
    match words.len() {
        0 => 0,
        n => n * 8 + ALLOCATION_OVERHEAD,
    }
}

/// The heap bytes of a list of boxed bitsets.
fn set_list_bytes(sets: &Vec<Box<[u64]>>) -> usize {
    let list = match sets.capacity() {
        0 => 0,
        capacity => capacity * size_of::<Box<[u64]>>() + ALLOCATION_OVERHEAD,
    };
    list + sets.iter().map(|set| set_bytes(set)).sum::<usize>()
}

/// The bytes of a hash table holding `capacity` entries of `T`, as hashbrown lays it out.
fn table_bytes<T>(capacity: usize) -> usize {
    let buckets = if capacity < 8 {
        capacity + 1
    } else {
        (capacity * 8 / 7).next_power_of_two()
    };
    buckets * (size_of::<T>() + 1)
}

/// The hash of a model state, with the Fx multiply-rotate hash: states are a few words.
fn hash_state<S: Hash>(state: &S) -> u64 {
    let mut hasher = FxHasher(0);
    state.hash(&mut hasher);
    hasher.0
}

struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let mut tail = [0; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.add(u64::from_le_bytes(tail));
    }

    fn write_u8(&mut self, n: u8) {
        self.add(n.into());
    }

    fn write_u32(&mut self, n: u32) {
        self.add(n.into());
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// SplitMix64, for the Zobrist words: fixed, so that runs repeat.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
