//! Links `splitbrain` as a position-dependent executable on Linux.
//!
//! A position-independent one (the default) has its 33,000 pointers in read-only data
//! relocated by the loader at every start, which touches about 140 pages: a third of what
//! `splitbrain check` costs on a small history. Linked at a fixed address, the linker
//! resolves them once. The code is compiled as position-independent either way; only the
//! final link changes.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=splitbrain=-no-pie");
    }
}
