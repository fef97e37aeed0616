//! splitbrain end to end: the `splitbrain` binary run as its users run it, against real
//! servers in real containers (and, for bad input and stored histories, against none).
//!
//! One test binary rather than one a file: its tests share the test threads from the first to
//! the last, where a binary of its own would wait alone for its slowest test, and it is linked
//! once. `cargo test -p splitbrain --test end_to_end etcd::` runs one file's tests.

mod support;

mod algorithms;
mod bad_input;
mod check;
mod cli;
mod cluster;
mod etcd;
mod faults;
mod kleppmann;
mod libraries;
mod mariadb;
mod matrix;
mod output;
mod postgres;
mod replay;
mod replication;
mod report;
mod restart_hazard;
mod runs;
mod servers;
mod zookeeper;
