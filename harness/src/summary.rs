//! The plain-text summary printed at the end of a run or a check.

use std::collections::BTreeMap;
use std::fmt::Write;

use splitbrain_checker::coverage::Coverage;
use splitbrain_checker::linearizability::Linearizability;
use splitbrain_checker::stats::Stats;
use splitbrain_checker::Valid;

use crate::store::Results;

/// Renders the summary: ops, faults, verdict and the first `shown` violations of each kind.
pub fn render(title: &str, results: &Results, shown: usize) -> String {
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
    if let Some(pace) = &results.pace {
        let _ = writeln!(out, "  pace     {pace}");
    }
    for (label, line) in results.checkers.iter().flat_map(|(_, c)| c.summary()) {
        let _ = writeln!(out, "  {label:<8} {line}");
    }
    let checkers = results.in_verdict();
    if let Some(result) = &results.linearizability {
        linearizability_lines(&mut out, result, results.linearizability_counts, shown);
    }
    let interrupted = if results.interrupted {
        " (run interrupted)"
    } else {
        ""
    };
    let _ = writeln!(out, "  verdict  {}{interrupted}", verdict(results));
    for finding in checkers.iter().flat_map(|c| c.findings(shown)) {
        let _ = writeln!(out, "    {finding}");
    }
    if let Some(error) = &results.error {
        let _ = writeln!(out, "  error    {error}");
    }
    out
}

/// The summary of a linearizability check on its own (an EDN history).
pub fn render_linearizability(
    title: &str,
    result: &Linearizability,
    evidence: &Stats,
    shown: usize,
) -> String {
    let mut out = format!("\n{title}\n");
    linearizability_lines(&mut out, result, true, shown);
    let _ = writeln!(
        out,
        "  verdict  {}",
        linearizability_verdict(result, evidence)
    );
    out
}

/// The verdict in words of a linearizability check on its own.
pub fn linearizability_verdict(result: &Linearizability, evidence: &Stats) -> String {
    match (result.valid, &evidence.reason) {
        (Valid::False, _) => "INVALID: not linearizable".to_string(),
        (_, Some(reason)) => format!("unknown: {reason}"),
        (Valid::True, None) => "valid: linearizable".to_string(),
        (Valid::Unknown, None) => format!(
            "unknown: {}",
            result.cause.as_deref().unwrap_or("not searched to the end")
        ),
    }
}

/// The linearizability result: the model, how far the search went, and for a key that is
/// not linearizable, what the search could not place next.
fn linearizability_lines(out: &mut String, result: &Linearizability, counts: bool, shown: usize) {
    let outcome = match result.valid {
        Valid::True => "linearizable".to_string(),
        Valid::False => "NOT linearizable".to_string(),
        Valid::Unknown => format!(
            "unknown ({})",
            result.cause.as_deref().unwrap_or("not searched to the end")
        ),
    };
    let figures = format!(
        "{} over {} key{}: {outcome}; {} ops, {} states, {:.1} MiB at most",
        result.model,
        result.keys,
        plural(result.keys),
        result.ops_checked,
        result.states_explored,
        result.peak_cache_bytes as f64 / f64::from(1 << 20)
    );
    if !counts {
        // One line, after the label: a finding that is not the verdict must not read as one.
        let _ = writeln!(
            out,
            "  beside   (not in the verdict) {figures}; a mutex has no leases, so a lease that \
             ran out counts against it, and lock safety judges the leases"
        );
        return;
    }
    let _ = writeln!(out, "  model    {figures}");
    for failure in result.failures.iter().take(shown) {
        let explanation = &failure.explanation;
        let _ = writeln!(
            out,
            "    key {}: after {} op{} linearized, none of these could come next:",
            failure.key.as_deref().unwrap_or("(no key)"),
            explanation.linearized_count,
            plural(explanation.linearized_count)
        );
        for refused in explanation.refused.iter().take(shown) {
            let op = &refused.op;
            let value = op
                .value
                .as_ref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "      op {} process {} {}{value} ({:?} at {}): {}",
                op.index,
                op.process,
                op.f,
                op.outcome,
                seconds(op.invoke_ns as f64 / 1e6),
                refused.reason
            );
        }
    }
}

/// What a valid lock run's faults reached, where that limits what the verdict says.
fn reach(results: &Results) -> &'static str {
    let Some(coverage) = results.checkers.get::<Coverage>() else {
        return "";
    };
    if coverage.faults > 0 && coverage.no_failover() {
        "; but the master never changed: no fault made the deployment fail over"
    } else if coverage.grants > 0 && coverage.leases_live_at_promotion == Some(0) {
        if coverage.acked_by_demoted == Some(0) {
            "; but no master acknowledged anything after it was cut off, so every promoted \
             replica had what its master had"
        } else {
            "; but no lease a master granted after it was cut off was still running when \
             another was promoted: the failovers took longer than those leases lasted"
        }
    } else if coverage.grants == 0 {
        ""
    } else if coverage.faults == 0 {
        " (no faults were injected)"
    } else if !coverage.touched_a_holder() {
        "; but no fault touched a held lock: this run could not have found the hazard"
    } else {
        ""
    }
}

/// The verdict, with what each checker that found something found.
pub fn verdict(results: &Results) -> String {
    let checkers = results.in_verdict();
    match results.valid {
        Valid::False => {
            let found: Vec<String> = checkers.iter().flat_map(|c| c.violations()).collect();
            format!("INVALID: {}", found.join(", "))
        }
        Valid::True => {
            let mut vouched: Vec<String> = checkers.iter().filter_map(|c| c.vouches()).collect();
            if vouched.is_empty() {
                vouched.push("nothing to find fault with".into());
            }
            format!("valid: {}{}", vouched.join(", "), reach(results))
        }
        Valid::Unknown => {
            let reason = checkers
                .iter()
                .filter(|c| c.valid() == Valid::Unknown)
                .find_map(|c| c.unknown_because());
            format!(
                "unknown: {}",
                reason.unwrap_or_else(|| "the run did not finish".into())
            )
        }
    }
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
