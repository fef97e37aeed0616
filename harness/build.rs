//! Lays out `splitbrain`'s code so that what `splitbrain check` runs sits together.
//!
//! The kernel maps a program's code as it first runs it, 64 KiB around each page touched.
//! Checking a small history runs about 900 functions of std, clap, serde_json and the
//! checkers, which the linker would scatter over 11 MB of code: 95 to 124 page faults instead
//! of 68, and 10 to 20% more CPU for a check of a one-line history (README, Measurements).
//! `link/check.order` names those functions (their symbols, as `link/order.py` recorded them
//! under callgrind), and the linker puts them first. A name the build does not have is
//! skipped, and names drift (a new toolchain, changed code, once even a comment changed
//! here renamed some generic instances): the layout is then partly scattered again, never
//! wrong.

fn main() {
    println!("cargo:rerun-if-changed=link/check.order");
    // Only LLD reads the list; rustc links this target with its own LLD (from Rust 1.90).
    if std::env::var("TARGET").as_deref() == Ok("x86_64-unknown-linux-gnu") {
        let order = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("link/check.order");
        println!(
            "cargo:rustc-link-arg-bin=splitbrain=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=splitbrain=-Wl,--no-warn-symbol-ordering");
    }
}
