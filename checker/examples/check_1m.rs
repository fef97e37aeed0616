//! Times the lock-safety checker on a synthetic one-million-op history, for timing and memory.
//!
//! ```text
//! cargo run --release -p splitbrain-checker --example check_1m -- MODE
//! ```
//!
//! MODE is one of:
//!
//! - `generate`: only build the history (the baseline for peak memory);
//! - `check`: build it and run the lock-safety check;
//! - `write FILE [OPS]`: build it (or one of OPS ops: 10000000 for the ten-million-op goal)
//!   and write it to FILE as JSON lines, for `splitbrain check FILE`;
//! - `parse FILE`: read FILE with `read_history`.
//!
//! Run under `/usr/bin/time -v` to see the peak RSS of each mode.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::process::ExitCode;
use std::time::Instant;

use splitbrain_checker::testing::{lock_history, LockWorkload};
use splitbrain_checker::{lock_safety, read_history, Op};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["generate"] => {
            generate(DEFAULT_OPS);
            Ok(())
        }
        ["check"] => {
            check(&generate(DEFAULT_OPS));
            Ok(())
        }
        ["write", path] => write(&generate(DEFAULT_OPS), path),
        ["write", path, ops] => match ops.parse() {
            Ok(ops) => write(&generate(ops), path),
            Err(e) => Err(format!("OPS `{ops}`: {e}").into()),
        },
        ["parse", path] => parse(path),
        _ => Err("usage: check_1m generate | check | write FILE [OPS] | parse FILE".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

const DEFAULT_OPS: usize = 1_000_000;

fn generate(ops: usize) -> Vec<Op> {
    let started = Instant::now();
    let history = lock_history(&LockWorkload {
        ops,
        ..LockWorkload::default()
    });
    let span_s = history.last().map_or(0, |op| op.time) as f64 / 1e9;
    let nemesis = history.iter().filter(|op| op.process.is_nemesis()).count();
    println!(
        "generated {} ops ({nemesis} nemesis) spanning {span_s:.1} s in {:.2?}",
        history.len(),
        started.elapsed()
    );
    history
}

fn check(history: &[Op]) {
    let started = Instant::now();
    let result = lock_safety::check(history);
    println!(
        "checked in {:.2?}: {}, {} holds, {} unknown acquires, {} double grants, {} possible",
        started.elapsed(),
        result.valid.label(),
        result.holds,
        result.unknown_acquires,
        result.double_grant_count,
        result.possible_double_grant_count
    );
}

fn write(history: &[Op], path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut out = BufWriter::new(File::create(path)?);
    for op in history {
        serde_json::to_writer(&mut out, op)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    println!("wrote {path}");
    Ok(())
}

fn parse(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let history = read_history(BufReader::new(File::open(path)?))?;
    println!(
        "parsed {} ops in {:.2?}",
        history.ops.len(),
        started.elapsed()
    );
    Ok(())
}
