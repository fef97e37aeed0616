#!/usr/bin/env python3
"""What `splitbrain check` costs on a one-line history, next to a trivial Rust binary's start.

Both are run alternately, 300 times a round for 5 rounds, and the CPU time (user + system)
of the children is read from getrusage; the median round of each is printed, and the ratio.
The trivial binary (`fn main() {}`) is built with the same rustc, optimised, as rustc
links by default (dynamically); the same linked statically is measured beside them as the
floor of starting a program at all. Give a splitbrain built by the static recipe
(docs/measurements.md) to measure that one.

    cargo build --release && python3 harness/benches/check_start.py [path/to/splitbrain]
"""

import os
import resource
import subprocess
import sys
import tempfile

RUNS = 300
ROUNDS = 5


def cost_per_run(command, runs):
    """Mean CPU milliseconds and page faults of `command` over `runs` runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(runs):
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return spent / runs * 1000, (after.ru_minflt - before.ru_minflt) / runs


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    splitbrain = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        root, "target", "release", "splitbrain")
    with tempfile.TemporaryDirectory() as work:
        source = os.path.join(work, "trivial.rs")
        trivial = os.path.join(work, "trivial")
        with open(source, "w") as f:
            f.write("fn main() {}\n")
        subprocess.run(["rustc", "-O", source, "-o", trivial], check=True)
        static = os.path.join(work, "trivial-static")
        subprocess.run(["rustc", "-O", "-C", "target-feature=+crt-static", "-C",
                        "relocation-model=static", source, "-o", static], check=True)
        history = os.path.join(work, "history.jsonl")
        with open(history, "w") as f:
            f.write('{"index":0,"time":0,"process":0,"type":"invoke","f":"acquire",'
                    '"key":"lock","ttl_ms":1000}\n')
        check = [splitbrain, "check", history]
        # The first check writes results.json; the ones measured find it as it would be.
        subprocess.run(check, stdout=subprocess.DEVNULL, check=False)
        baseline, floor, checks = [], [], []
        for _ in range(ROUNDS):
            baseline.append(cost_per_run([trivial], RUNS))
            floor.append(cost_per_run([static], RUNS))
            checks.append(cost_per_run(check, RUNS))
    middle = ROUNDS // 2
    # The median round of each, by CPU; a page fault is the kernel mapping code or data.
    baseline, floor, checks = (sorted(rounds)[middle] for rounds in (baseline, floor, checks))
    for name, (ms, faults) in (("trivial Rust binary:", baseline),
                               ("trivial Rust binary, linked static:", floor),
                               ("splitbrain check, one-line history:", checks)):
        print(f"{name:<37}{ms:.2f} ms CPU per run, {faults:.0f} page faults")
    print(f"ratio check / trivial: {checks[0] / baseline[0]:.2f}")


if __name__ == "__main__":
    main()
