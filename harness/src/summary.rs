//! The plain-text summary printed at the end of a run or a check.

use std::collections::BTreeMap;
use std::fmt::Write;

use splitbrain_checker::linearizability::Linearizability;
use splitbrain_checker::lock_safety::DoubleGrant;
use splitbrain_checker::stats::Stats;
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
    if let Some(pace) = &results.pace {
        let _ = writeln!(out, "  pace     {pace}");
    }
    if results.coverage.grants > 0 || results.coverage.master_changes.is_some() {
        let _ = writeln!(out, "  coverage {}", results.coverage.line());
    }
    let stats = &results.acquisition;
    if stats.attempts > 0 {
        let _ = writeln!(
            out,
            "  acquire  {} attempts, {} granted ({:.1}/s); refused: {} held, {} split vote ({:.1}%), \
             {} unavailable; {} unknown; grant latency mean {:.1} ms, p99 {:.1} ms",
            stats.attempts,
            stats.grants,
            stats.grants_per_second,
            stats.refused_held,
            stats.refused_split_vote,
            stats.split_vote_share * 100.0,
            stats.refused_unavailable,
            stats.unknown,
            stats.grant_latency.mean_ms,
            stats.grant_latency.p99_ms
        );
    }
    let safety = &results.lock_safety;
    let fenced = match safety.fenced_double_grant_count {
        0 => String::new(),
        n => format!(
            "; {n} zombie overlap{} fenced off by the storage",
            plural(n)
        ),
    };
    let _ = writeln!(
        out,
        "  holds    {} grants checked, {} acquires with unknown outcome{fenced}",
        safety.holds, safety.unknown_acquires
    );
    let writes = &results.lost_writes;
    if writes.attempted > 0 {
        let _ = writeln!(
            out,
            "  writes   {} attempted: {} acknowledged, {} rejected, {} unknown ({} of those landed); \
             {} lost ({:.1}% of acknowledged), {} unexpected",
            writes.attempted,
            writes.acknowledged,
            writes.rejected,
            writes.unknown,
            writes.recovered,
            writes.lost_count,
            100.0 * writes.lost_count as f64 / writes.acknowledged.max(1) as f64,
            writes.unexpected_count
        );
    }
    if let Some(result) = &results.linearizability {
        linearizability_lines(&mut out, result, results.linearizability_counts);
    }
    let fencing = &results.fencing;
    if fencing.grants_checked > 0 {
        let _ = writeln!(
            out,
            "  fencing  {} fenced grants, {} fenced storage accesses, {} refused as stale",
            fencing.grants_checked,
            fencing.storage_accesses_checked,
            fencing.rejected_storage_accesses
        );
    }
    let interrupted = if results.interrupted {
        " (run interrupted)"
    } else {
        ""
    };
    let _ = writeln!(out, "  verdict  {}{interrupted}", verdict(results));
    for (i, grant) in safety.double_grants.iter().take(SHOWN).enumerate() {
        let _ = writeln!(out, "    #{} {}", i + 1, describe(grant));
    }
    if safety.possible_double_grant_count > 0 {
        let _ = writeln!(
            out,
            "    {} possible double grant{} from {} unknown acquire{}",
            safety.possible_double_grant_count,
            plural(safety.possible_double_grant_count),
            safety.possible_double_grant_acquires,
            plural(safety.possible_double_grant_acquires)
        );
    }
    for group in safety.possible_double_grant_groups.iter().take(SHOWN) {
        let _ = writeln!(
            out,
            "      process {}'s acquire at {} on {}, unknown, could overlap {} hold{}; first: {}",
            group.unknown_acquire.process,
            seconds(group.unknown_acquire.start_ms),
            group.key,
            group.overlapped_holds,
            plural(group.overlapped_holds),
            describe(&group.first)
        );
    }
    for key in writes.keys.iter().filter(|k| k.lost_count > 0) {
        let _ = writeln!(
            out,
            "    lost from {}: ids {}",
            key.key,
            list(&key.lost, key.lost_count, SHOWN * 4)
        );
    }
    for pair in fencing
        .duplicate_fences
        .iter()
        .chain(&fencing.out_of_order_grants)
        .chain(&fencing.stale_storage_accesses)
        .take(SHOWN)
    {
        let _ = writeln!(
            out,
            "    fencing on {}: {} by process {} at {} carried {}, after {} by process {} at {} carried {}",
            pair.key,
            pair.later.f,
            pair.later.process,
            seconds(pair.later.invoke_ms),
            pair.later.fence,
            pair.earlier.f,
            pair.earlier.process,
            seconds(pair.earlier.invoke_ms),
            pair.earlier.fence
        );
    }
    for period in results.stuck_lock.stuck_periods.iter().take(SHOWN) {
        let _ = writeln!(
            out,
            "    stuck {}: no lease explains the key after {}, yet {} attempts were refused for {:.1} s{}",
            period.key,
            seconds(period.free_from_ms),
            period.refused_attempts,
            period.stuck_ms / 1000.0,
            if period.recovered { "" } else { ", until the end of the run" }
        );
    }
    if let Some(error) = &results.error {
        let _ = writeln!(out, "  error    {error}");
    }
    out
}

/// The summary of a linearizability check on its own (an EDN history).
pub fn render_linearizability(title: &str, result: &Linearizability, evidence: &Stats) -> String {
    let mut out = format!("\n{title}\n");
    linearizability_lines(&mut out, result, true);
    let verdict = match (result.valid, &evidence.reason) {
        (Valid::False, _) => "INVALID: not linearizable".to_string(),
        (_, Some(reason)) => format!("unknown: {reason}"),
        (Valid::True, None) => "valid: linearizable".to_string(),
        (Valid::Unknown, None) => format!(
            "unknown: {}",
            result.cause.as_deref().unwrap_or("not searched to the end")
        ),
    };
    let _ = writeln!(out, "  verdict  {verdict}");
    out
}

/// The linearizability result: the model, how far the search went, and for a key that is
/// not linearizable, what the search could not place next.
fn linearizability_lines(out: &mut String, result: &Linearizability, counts: bool) {
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
    for failure in result.failures.iter().take(SHOWN) {
        let explanation = &failure.explanation;
        let _ = writeln!(
            out,
            "    key {}: after {} op{} linearized, none of these could come next:",
            failure.key.as_deref().unwrap_or("(no key)"),
            explanation.linearized_count,
            plural(explanation.linearized_count)
        );
        for refused in explanation.refused.iter().take(SHOWN) {
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
    let coverage = &results.coverage;
    if coverage.faults > 0 && coverage.no_failover() {
        "; but the master never changed: no fault made the deployment fail over"
    } else if coverage.grants > 0 && coverage.leases_live_at_promotion == Some(0) {
        "; but no lease a demoted master granted was still running when another master was \
         promoted: the failovers took longer than the leases lasted"
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

/// The first `at_most` of `count` ids (of which `ids` holds the first few).
fn list(ids: &[i64], count: usize, at_most: usize) -> String {
    let shown: Vec<String> = ids.iter().take(at_most).map(i64::to_string).collect();
    let more = count.saturating_sub(shown.len());
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
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

/// One line for a double grant: who, when, how long, under which faults.
pub fn describe(grant: &DoubleGrant) -> String {
    let faults: Vec<String> = grant
        .faults
        .iter()
        .map(|f| {
            let stop = f.stop_ms.map_or("end".to_string(), seconds);
            let on = if f.nodes.is_empty() {
                String::new()
            } else {
                format!(" {}", f.nodes.join(","))
            };
            format!("{}{on} {}-{}", f.fault, seconds(f.start_ms), stop)
        })
        .collect();
    let nodes = |n: &Option<Vec<String>>| {
        n.as_ref()
            .filter(|n| !n.is_empty())
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
