//! splitbrain's history model and checkers.
//!
//! A checker is a pure function from a history to a result; nothing here touches Docker or the
//! network, so the crate can check histories recorded by any tool.

pub mod acquisition;
pub mod acquisition_stats;
pub mod coverage;
pub mod edn;
pub mod every;
pub mod explain;
pub mod fencing;
pub mod history;
pub mod holds;
pub mod linearizability;
pub mod lock_safety;
pub mod lost_writes;
mod op_line;
pub mod operation;
pub mod stats;
pub mod stream;
#[cfg(test)]
mod stream_forgets;
pub mod stuck_lock;
#[doc(hidden)]
pub mod testing;
pub mod timeline;
mod verdict;
pub mod windows;

pub use edn::{read_edn_history, EdnOptions};
pub use history::{read_history, HistoryError, HistoryReader, Op, OpType, Process, Renewal};
pub use verdict::{Checked, Valid, REPORTED_VIOLATIONS};
