//! Runs the linearizability checker once on each benchmark scenario and prints its wall time,
//! verdict, states explored, the checker's own estimate of its peak memory, and the peak heap
//! it really used (counted by a global allocator, above the history's own).
//!
//! ```text
//! cargo run --release -p splitbrain-checker --example linearizability_memory [SCENARIO...]
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use splitbrain_checker::linearizability::{check, find_model, Limits};
use splitbrain_checker::testing::{linearizability_scenarios, object_history};

/// The system allocator, counting the bytes live and the most live at once.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() {
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    let model = find_model("cas-register").expect("a registered model");
    println!("scenario                   ops     time      verdict  states    estimate    heap");
    for (name, workload) in linearizability_scenarios() {
        if !wanted.is_empty() && !wanted.contains(&name) {
            continue;
        }
        let history = object_history(&workload);
        let baseline = LIVE.load(Ordering::Relaxed);
        PEAK.store(baseline, Ordering::Relaxed);
        let started = Instant::now();
        let result = check(&history, model, Limits::default()).expect("a well-formed history");
        let elapsed = started.elapsed();
        let heap = PEAK.load(Ordering::Relaxed) - baseline;
        println!(
            "{name:<24} {:>7} {:>9.2?} {:>8} {:>9} {:>8.1} MiB {:>6.1} MiB",
            history.len(),
            elapsed,
            result.valid.label(),
            result.states_explored,
            result.peak_cache_bytes as f64 / (1 << 20) as f64,
            heap as f64 / (1 << 20) as f64,
        );
    }
}
