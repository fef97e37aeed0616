//! splitbrain's history model and checkers.
//!
//! A checker is a pure function from a history to a result; nothing here touches Docker or the
//! network, so the crate can check histories recorded by any tool.

pub mod acquisition;
pub mod edn;
pub mod every;
pub mod explain;
pub mod history;
pub mod holds;
pub mod linearizability;
mod op_line;
pub mod operation;
pub mod shown_windows;
pub mod stream;
#[cfg(test)]
mod stream_forgets;
#[doc(hidden)]
pub mod testing;
pub mod timeline;
mod verdict;
pub mod windows;
pub mod words;

/// Declares the checkers, each a module whose `CHECKER` is its [`every::Registration`], and
/// lists them in [`CHECKERS`]: a new checker is its file and its name here.
macro_rules! checkers {
    ($($checker:ident),* $(,)?) => {
        $(pub mod $checker;)*

        /// Every checker a lock history goes through, in the order the summary and the report
        /// show them; the stats checker first, whose verdict explains every other's when
        /// nothing was tested.
        pub const CHECKERS: &[every::Registration] = &[$($checker::CHECKER),*];
    };
}

checkers![
    stats,
    coverage,
    acquisition_stats,
    lock_safety,
    lost_writes,
    fencing,
    stuck_lock,
    starvation,
];

pub use edn::{read_edn_history, EdnOptions};
pub use history::{read_history, HistoryError, HistoryReader, Op, OpType, Process, Renewal};
pub use verdict::{Checked, Valid, REPORTED_VIOLATIONS};
