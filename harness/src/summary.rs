//! The plain-text summary printed at the end of a run or a check.

use std::collections::BTreeMap;
use std::fmt::Write;

use splitbrain_checker::lock_safety::DoubleGrant;
use splitbrain_checker::Valid;

use crate::results::Results;

/// How many violations the summary spells out.
const SHOWN: usize = 3;

/// Renders the summary: ops, faults, verdict and the first violations.
pub fn render(title: &str, results: &Results) -> String {
    let mut out = String::new();
    let ops = &results.ops;
    let _ = writeln!(out, "\n{title}");
    let _ = writeln!(
        out,
        "  ops      {} client ops: {} invoked; {} ok, {} fail, {} info",
        ops.total - ops.nemesis,
        ops.invoke,
        ops.ok,
        ops.fail,
        ops.info
    );
    for (f, outcomes) in &ops.by_f {
        let parts: Vec<String> = outcomes.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let _ = writeln!(out, "           {f}: {}", parts.join(", "));
    }
    let _ = writeln!(out, "  faults   {}", faults_line(results));
    let safety = &results.lock_safety;
    let _ = writeln!(
        out,
        "  holds    {} grants checked, {} acquires with unknown outcome",
        safety.holds, safety.unknown_acquires
    );
    let verdict = match results.valid {
        Valid::True => "valid: no two processes held a lock at once".to_string(),
        Valid::False => format!(
            "INVALID: {} double grant{}",
            safety.double_grant_count,
            plural(safety.double_grant_count)
        ),
        Valid::Unknown => format!(
            "unknown: {} possible double grant{} involving acquires whose outcome is unknown",
            safety.possible_double_grant_count,
            plural(safety.possible_double_grant_count)
        ),
    };
    let interrupted = if results.interrupted {
        " (run interrupted)"
    } else {
        ""
    };
    let _ = writeln!(out, "  verdict  {verdict}{interrupted}");
    let shown = if results.valid == Valid::False {
        &safety.double_grants
    } else {
        &safety.possible_double_grants
    };
    for (i, grant) in shown.iter().take(SHOWN).enumerate() {
        let _ = writeln!(out, "    #{} {}", i + 1, describe(grant));
    }
    if let Some(error) = &results.error {
        let _ = writeln!(out, "  error    {error}");
    }
    out
}

fn faults_line(results: &Results) -> String {
    if results.faults.is_empty() {
        return "none".into();
    }
    let mut by_fault: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &results.faults {
        *by_fault.entry(&f.fault).or_default() += 1;
    }
    by_fault
        .iter()
        .map(|(fault, n)| format!("{fault} x{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line for a double grant: who, when, how long, under which faults.
pub fn describe(grant: &DoubleGrant) -> String {
    let faults: Vec<String> = grant
        .faults
        .iter()
        .map(|f| {
            let stop = f.stop_ms.map_or("end".to_string(), seconds);
            format!(
                "{} {} {}-{}",
                f.fault,
                f.nodes.join(","),
                seconds(f.start_ms),
                stop
            )
        })
        .collect();
    let nodes = |n: &Option<Vec<String>>| {
        n.as_ref()
            .map(|n| format!(" on {}", n.join(",")))
            .unwrap_or_default()
    };
    let stale = if grant.kind == "stale" {
        "[stale: a holder outlived its lease] "
    } else {
        ""
    };
    format!(
        "{stale}key {}: process {} held it from {}{} and process {} from {}{}, overlapping {:.1} ms; faults: {}",
        grant.key,
        grant.first.process,
        seconds(grant.first.start_ms),
        nodes(&grant.first.nodes),
        grant.second.process,
        seconds(grant.second.start_ms),
        nodes(&grant.second.nodes),
        grant.overlap_ms,
        if faults.is_empty() { "none".to_string() } else { faults.join("; ") }
    )
}

fn seconds(ms: f64) -> String {
    format!("{:.3}s", ms / 1000.0)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
