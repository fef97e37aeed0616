//! Arbitrary bytes read as an EDN history, plain and with independent keys, and every history
//! read checked with every linearizability model under tight limits: nothing may panic.

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use splitbrain_checker::linearizability::{check, Limits, MODELS};
use splitbrain_checker::{read_edn_history, EdnOptions, Op};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for independent in [false, true] {
        if let Ok(history) = read_edn_history(text, EdnOptions { independent }) {
            check_with_every_model(&history);
        }
    }
});

fn check_with_every_model(history: &[Op]) {
    let limits = Limits {
        time: Duration::from_millis(50),
        memory_bytes: 16 << 20,
    };
    for model in MODELS {
        let _ = check(history, model, limits);
    }
}
