//! splitbrain's faults ([`faults`], one file each), their seeded schedule ([`schedule`]), and
//! the runner that injects them into a deployment and heals them ([`Nemesis`]).

pub mod faults;
mod runner;
pub mod schedule;

pub use faults::{find_fault, Fault, FAULTS};
pub use runner::{nemesis_op, verify_healed, Nemesis, NemesisError, NemesisOptions};
