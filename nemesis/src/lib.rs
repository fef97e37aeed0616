//! splitbrain's faults ([`faults`], one file each), their seeded schedule ([`schedule`]), and
//! the runner that injects them into a deployment, heals them and verifies the heal
//! ([`Nemesis`]).

pub mod faults;
pub mod links;
pub mod roles;
mod runner;
pub mod schedule;
pub mod script;

pub use faults::{all_faults, find_fault, Action, Elsewhere, Fault, Layout, Target, FAULTS};
pub use runner::{heal, nemesis_op, Nemesis, NemesisError, NemesisOptions};
