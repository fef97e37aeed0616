#!/usr/bin/env python3
"""Records the functions `splitbrain check` runs, for the linker to lay them out together.

Runs the release binary under callgrind on a one-line history and on the test fixture's
Redlock run (1,022 ops, with its test.json), and writes every function either ran, by
symbol name, sorted, to harness/link/check.order, which harness/build.rs hands the linker.
The names hold for one toolchain and one Cargo.lock: run this again after updating either,
or after changing what a check runs (a stale list costs start time, never correctness).

    cargo build --release && python3 harness/link/order.py [path/to/splitbrain]
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

HARNESS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(HARNESS, "tests/fixtures/redlock-redlock-lock-kill/20261130T004506")
# A function callgrind names, without the `'2` it adds to a function called within itself.
NAMED = re.compile(r"^c?fn=\(\d+\) (.+?)(?:'\d+)?$")


def host_tuple():
    return subprocess.run(["rustc", "--print", "host-tuple"], capture_output=True, text=True,
                          check=True).stdout.strip()


def functions_run(splitbrain, history, work):
    """Symbol names of the functions `splitbrain check history` runs."""
    profile = os.path.join(work, "callgrind.out")
    out = os.path.join(work, "out")
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={profile}",
         splitbrain, "check", history, "--out", out],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    if not os.path.exists(profile):
        sys.exit(f"callgrind wrote no profile of {splitbrain} check {history}")
    names = set()
    with open(profile) as f:
        for line in f:
            match = NAMED.match(line)
            # Addresses without a symbol, and callgrind's own frames, cannot be ordered.
            if match and not match[1].startswith(("0x", "(")):
                names.add(match[1])
    return names


def main():
    if not shutil.which("valgrind"):
        sys.exit("order.py runs splitbrain under valgrind: install it (apt-get install valgrind)")
    splitbrain = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(HARNESS), "target", host_tuple(), "release", "splitbrain")
    names = set()
    with tempfile.TemporaryDirectory() as work:
        one_line = os.path.join(work, "history.jsonl")
        with open(one_line, "w") as f:
            f.write('{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire",'
                    '"key":"lock","ttl_ms":1000}\n')
        names |= functions_run(splitbrain, one_line, work)
        run = os.path.join(work, "run")
        os.mkdir(run)
        for name in ("history.jsonl", "test.json"):
            shutil.copy(os.path.join(FIXTURE, name), run)
        names |= functions_run(splitbrain, os.path.join(run, "history.jsonl"), work)
    if not names:
        sys.exit(f"callgrind recorded no functions of {splitbrain}")
    path = os.path.join(HARNESS, "link", "check.order")
    with open(path, "w") as f:
        f.write("# The functions `splitbrain check` runs: written by harness/link/order.py.\n")
        f.writelines(name + "\n" for name in sorted(names))
    print(f"{len(names)} functions written to {path}")


if __name__ == "__main__":
    main()
