//! Printing that never ends a run. A run whose output goes nowhere (a pipe into `head` that
//! has closed, `2>/dev/full`, a terminal that went away) still goes on to its end, writes its
//! history, results and report, and exits with its verdict's code. `stdoutln!` panics when a
//! write fails; these macros drop the error instead, since there is no one left to tell.
//! `clippy::print_stdout` and `print_stderr` (main.rs) keep `stdoutln!` and the like out.

use std::fmt::Arguments;
use std::io::Write;

/// `print!` that ignores a failed write.
macro_rules! stdout {
    ($($arg:tt)*) => { $crate::output::to_stdout(format_args!($($arg)*)) };
}

/// `stdoutln!` that ignores a failed write.
macro_rules! stdoutln {
    () => { $crate::output::to_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::to_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprint!` that ignores a failed write.
macro_rules! stderr {
    ($($arg:tt)*) => { $crate::output::to_stderr(format_args!($($arg)*)) };
}

/// `stderrln!` that ignores a failed write.
macro_rules! stderrln {
    ($($arg:tt)*) => { $crate::output::to_stderr(format_args!("{}\n", format_args!($($arg)*))) };
}

pub fn to_stdout(text: Arguments) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_fmt(text).and_then(|()| out.flush());
}

pub fn to_stderr(text: Arguments) {
    let _ = std::io::stderr().lock().write_fmt(text);
}
