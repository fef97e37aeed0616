//! Arbitrary bytes read as a JSON-lines history, and every history read checked with every
//! linearizability model under tight limits: nothing may panic.

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use splitbrain_checker::linearizability::{check, Limits, MODELS};
use splitbrain_checker::read_history;

fuzz_target!(|data: &[u8]| {
    if let Ok(read) = read_history(data) {
        let limits = Limits {
            time: Duration::from_millis(50),
            memory_bytes: 16 << 20,
        };
        for model in MODELS {
            let _ = check(&read.ops, model, limits);
        }
    }
});
