//! splitbrain's history model and checkers.
//!
//! A checker is a pure function from a history to a result; nothing here touches Docker or the
//! network, so the crate can check histories recorded by any tool.

pub mod history;
pub mod lock_safety;
#[doc(hidden)]
pub mod testing;
mod verdict;

pub use history::{read_history, HistoryError, Op, OpType, Process};
pub use verdict::Valid;
