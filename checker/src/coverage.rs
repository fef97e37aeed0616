//! Coverage: what a run exercised, from its history alone. A valid verdict means little if no
//! fault ever reached a holder; this says how many grants met a fault, how many kills came back
//! while a lease they granted could still be live, and how many pauses landed on a holder.
//!
//! Holds are lock safety's ([`crate::lock_safety`] rule 1): a grant is an `acquire` that
//! returned `ok`, held from its `ok` to its release's invoke or the end of its lease. Faults
//! are the nemesis's `start`/`stop` windows. A fault **reaches a holder** when its window
//! overlaps the hold and:
//!
//! - a node fault (`kill`, `kill-holder`, `pause`, `partition`, `partition-*`, `clock-*`,
//!   `kill-primary`, `pause-primary`, `partition-primary`, `packet-*`, `failover`) targets
//!   one of the nodes in the grant's `node` list. A grant without a `node` list (a single-server client) is
//!   reached by any node fault, and so is every grant by a node fault without targets (a
//!   `failover` names none: it moves the master of every holder);
//! - a client fault (`client-pause`, `client-crash`, targets `client-<w>`) targets the
//!   holder's worker, `process % concurrency`. Without `concurrency` it is inferred: Jepsen's
//!   workers start as processes `0..concurrency`, and a worker's process is replaced only
//!   after an `info`, so the workers are taken to be the processes up to the largest one that
//!   invoked before the first client `info` (every process, if none has one);
//! - a link fault (`link-*`, targets `g<group>-><node>`) targets a link of the holder's client
//!   group to one of the grant's nodes (to any node, for a grant without a `node` list). Worker
//!   `w` is in group `w % groups`; the history does not say how many groups there were, so
//!   where the caller does not either ([`RunFacts::client_groups`]), a link of any group counts.
//!
//! Faults of other names (from another tool's history) are counted in [`Coverage::faults`] but
//! reach no holder: coverage never claims what it cannot see.

use serde::{Deserialize, Serialize};

use crate::every::{read_as, Registration, Role};
use crate::holds::{Candidate, HoldTracker};
use crate::operation::ms;
use crate::stream::{replay, Checker, Event, Outline, RunFacts};
use crate::verdict::Checked;
use crate::windows::{Reach, Window};
use crate::{Op, OpType, Process, Valid};

/// What a run exercised. Counts are exact; `restart_ms` is `None` without a stopped kill.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Coverage {
    /// Acquires that returned `ok`.
    pub grants: usize,
    /// Grants that a fault reached (see the module doc) at some point of their hold.
    pub grants_faulted: usize,
    /// `kill`, `kill-primary` and `kill-holder` starts.
    pub kills: usize,
    /// Kills stopped (the node restarted) less than the largest `ttl_ms` asked in the history
    /// after they started: the node came back while a lease it granted could still be live.
    pub kills_back_within_ttl: usize,
    /// How long the stopped kills kept their nodes down.
    pub restart_ms: Option<Spread>,
    /// `client-pause` faults during which a worker they target held a grant.
    pub pauses_on_holder: usize,
    /// `clock-*` faults that targeted a node of a grant held while they were active.
    pub clock_faults_on_holder_node: usize,
    /// Fault starts of any kind.
    pub faults: usize,
    /// Where the history says who was master (nemesis `master` ops, on replicated
    /// deployments): how many times that changed, a failover or a split brain beginning or
    /// ending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_changes: Option<usize>,
    /// How long two or more nodes acted as master at once, in ms (with `master_changes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub two_masters_ms: Option<f64>,
    /// Updates (any `ok` op but a read) that a master acknowledged from the start of the fault
    /// after which another node was promoted until it was master again (see `at_risk`): the
    /// writes a failover puts at risk (with `master_changes`; ops that name their node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked_by_demoted: Option<usize>,
    /// Grants a master made after it was cut off (so its replicas never saw them) whose lease
    /// still ran when another node was promoted: the ones a second client could be granted
    /// beside (with `master_changes`). A lease granted before the cut-off was replicated, and
    /// the promoted replica refuses a second client as the old master did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leases_live_at_promotion: Option<usize>,
    /// The deployment's failure detector, in ms, where the run says what it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detector_ms: Option<f64>,
    /// Faults that cut nodes off or stopped them (partitions, kills, pauses).
    #[serde(default)]
    pub node_outages: usize,
    /// Of those, how many lasted longer than the failure detector (with `detector_ms`).
    #[serde(default)]
    pub outages_past_detector: usize,
}

/// The least, median and greatest of some durations, in milliseconds. The median of an even
/// count is the mean of the two middle values.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    fn of(mut values: Vec<u64>) -> Option<Spread> {
        values.sort_unstable();
        let (first, last) = (*values.first()?, *values.last()?);
        let middle = values.len() / 2;
        let median = if values.len().is_multiple_of(2) {
            (values[middle - 1] + values[middle]) / 2
        } else {
            values[middle]
        };
        Some(Spread {
            min: ms(first),
            median: ms(median),
            max: ms(last),
        })
    }
}

impl Coverage {
    /// Whether any fault reached a holder during its hold.
    pub fn touched_a_holder(&self) -> bool {
        self.grants_faulted > 0
    }

    /// Whether the history names masters, some fault cut off, stopped or crashed a node, and
    /// the master never changed: no fault made the deployment fail over. (A run of client
    /// faults alone never asked it to.)
    pub fn no_failover(&self) -> bool {
        self.node_outages > 0 && self.master_changes == Some(0)
    }

    /// One line for a user, such as `53 grants, 12 with a fault on the holder during its
    /// lease; 39 kills, 31 back within the TTL (restart 40-180 ms, median 70 ms); 3 client
    /// pauses on a holder`. Kills, pauses and clock faults are left out when there are none.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if self.grants > 0 || self.master_changes.is_none() {
            parts.push(format!(
                "{} grant{}, {} with a fault on the holder during its lease",
                self.grants,
                plural(self.grants),
                self.grants_faulted
            ));
        }
        if let Some(changes) = self.master_changes {
            let two = self
                .two_masters_ms
                .filter(|&ms| ms > 0.0)
                .map_or(String::new(), |ms| {
                    format!(", two masters at once for {:.1} s", ms / 1000.0)
                });
            parts.push(format!("{changes} master change{}{two}", plural(changes)));
        }
        if let Some(acked) = self.acked_by_demoted.filter(|&n| n > 0) {
            parts.push(format!(
                "{acked} update{} acknowledged by a master after the fault that demoted it began",
                plural(acked)
            ));
        }
        if let Some(live) = self.leases_live_at_promotion.filter(|_| self.grants > 0) {
            parts.push(format!(
                "{live} lease{} granted by a cut-off master still running when another was \
                 promoted",
                plural(live)
            ));
        }
        if let Some(detector) = self.detector_ms.filter(|_| self.node_outages > 0) {
            parts.push(format!(
                "{} of {} node outage{} outlasted the failure detector ({:.1} s)",
                self.outages_past_detector,
                self.node_outages,
                plural(self.node_outages),
                detector / 1000.0
            ));
        }
        if self.faults == 0 {
            parts.push("no faults".to_string());
        }
        if self.kills > 0 {
            let restart = self.restart_ms.map_or(String::new(), |r| {
                format!(
                    " (restart {:.0}-{:.0} ms, median {:.0} ms)",
                    r.min, r.max, r.median
                )
            });
            parts.push(format!(
                "{} kill{}, {} back within the TTL{restart}",
                self.kills,
                plural(self.kills),
                self.kills_back_within_ttl
            ));
        }
        if self.pauses_on_holder > 0 {
            parts.push(format!(
                "{} client pause{} on a holder",
                self.pauses_on_holder,
                plural(self.pauses_on_holder)
            ));
        }
        if self.clock_faults_on_holder_node > 0 {
            parts.push(format!(
                "{} clock fault{} on a holder's node",
                self.clock_faults_on_holder_node,
                plural(self.clock_faults_on_holder_node)
            ));
        }
        parts.join("; ")
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The faults that crash nodes and restart them.
const KILLS: [&str; 3] = ["kill", "kill-primary", "kill-holder"];

/// The faults that take nodes away from their peers, for the failure detector's purposes.
fn is_outage(fault: &str) -> bool {
    ["partition", "kill", "pause"]
        .iter()
        .any(|family| fault == *family || fault.starts_with(&format!("{family}-")))
}

/// Checks what a history exercised; `facts` says what the history does not.
pub fn check(ops: &[Op], facts: RunFacts) -> Coverage {
    replay(ops, CoverageChecker::new(&Outline::of(ops), facts))
}

/// Coverage passes no verdict of its own: it says what a valid verdict rests on.
impl Checked for Coverage {
    fn name(&self) -> &'static str {
        "coverage"
    }
    fn valid(&self) -> Valid {
        Valid::True
    }
    fn summary(&self) -> Vec<(&'static str, String)> {
        (self.grants > 0 || self.master_changes.is_some())
            .then(|| ("coverage", self.line()))
            .into_iter()
            .collect()
    }
}

/// Its line in the list of every checker.
pub const CHECKER: Registration = Registration {
    name: "coverage",
    role: Role::Statistics,
    start: |outline, facts| Box::new(CoverageChecker::new(outline, facts)),
    read: read_as::<Coverage>,
};

/// The coverage check as a stream: each grant is weighed against the faults (all known from
/// the outline) once its hold has ended.
pub struct CoverageChecker {
    facts: RunFacts,
    tracker: HoldTracker,
    ended: Vec<Candidate>,
    windows: Vec<Window>,
    /// Per window, whether it reached a holder.
    reached: Vec<bool>,
    workers: u64,
    groups: Option<u64>,
    largest_ttl_ms: Option<u64>,
    grants: usize,
    grants_faulted: usize,
    masters: Option<Masters>,
}

/// What the nemesis `master` ops say, and the counts they make possible.
struct Masters {
    records: usize,
    two_masters: u64,
    at_risk: Vec<AtRisk>,
    acked: usize,
    live: usize,
}

impl CoverageChecker {
    pub fn new(outline: &Outline, facts: RunFacts) -> CoverageChecker {
        let windows = outline.windows();
        let records: Vec<&Op> = outline
            .nemesis
            .iter()
            .filter(|op| op.f == "master")
            .collect();
        let masters = (!records.is_empty()).then(|| {
            let end = outline.end;
            let two_masters: u64 = records
                .iter()
                .enumerate()
                .filter(|(_, op)| op.node.as_ref().is_some_and(|nodes| nodes.len() > 1))
                .map(|(i, op)| {
                    let until = records.get(i + 1).map_or(end, |next| next.time);
                    until.saturating_sub(op.time)
                })
                .sum();
            Masters {
                records: records.len(),
                two_masters,
                at_risk: at_risk(&records, &windows, end),
                acked: 0,
                live: 0,
            }
        });
        CoverageChecker {
            workers: facts
                .concurrency
                .filter(|&c| c > 0)
                .unwrap_or_else(|| outline.inferred_concurrency()) as u64,
            groups: facts.client_groups.filter(|&g| g > 0).map(|g| g as u64),
            facts,
            tracker: HoldTracker::new(outline),
            ended: Vec::new(),
            reached: vec![false; windows.len()],
            windows,
            largest_ttl_ms: outline.longest_ttl_ms,
            grants: 0,
            grants_faulted: 0,
            masters,
        }
    }

    fn grant_ended(&mut self, grant: &Candidate) {
        self.grants += 1;
        let mut faulted = false;
        for (window, reached) in self.windows.iter().zip(self.reached.iter_mut()) {
            if window.start < grant.end
                && window.stop > grant.start
                && reaches_holder(window, grant, self.workers, self.groups)
            {
                faulted = true;
                *reached = true;
            }
        }
        self.grants_faulted += usize::from(faulted);
        if let (Some(masters), Some([node])) = (&mut self.masters, grant.nodes.as_deref()) {
            let live = masters.at_risk.iter().any(|r| {
                r.node == *node
                    && grant.start >= r.from
                    && (grant.start..grant.end).contains(&r.promoted)
            });
            masters.live += usize::from(live);
        }
    }
}

impl Checker for CoverageChecker {
    type Output = Coverage;

    fn observe(&mut self, event: Event<'_>) {
        if let (Event::Complete { completion, .. }, Some(masters)) = (event, &mut self.masters) {
            if completion.kind == OpType::Ok && completion.f != "read" {
                masters.acked += usize::from(masters.risked(&completion.node, completion.time));
            }
        }
        self.tracker.observe(event, &mut self.ended);
        for grant in std::mem::take(&mut self.ended) {
            if grant.certain {
                self.grant_ended(&grant);
            }
        }
    }

    fn finish(mut self) -> Coverage {
        self.tracker.finish(&mut self.ended);
        for grant in std::mem::take(&mut self.ended) {
            if grant.certain {
                self.grant_ended(&grant);
            }
        }
        let windows = &self.windows;
        let kills: Vec<&Window> = windows
            .iter()
            .filter(|w| KILLS.contains(&w.fault.as_str()))
            .collect();
        let downtimes: Vec<u64> = kills
            .iter()
            .filter(|w| w.stopped)
            .map(|w| w.stop.saturating_sub(w.start))
            .collect();
        let outages: Vec<&Window> = windows.iter().filter(|w| is_outage(&w.fault)).collect();
        let count_on_holder = |is_kind: &dyn Fn(&str) -> bool| {
            windows
                .iter()
                .zip(&self.reached)
                .filter(|(w, reached)| **reached && is_kind(&w.fault))
                .count()
        };
        let detector_ms = self.facts.detector_ms;
        Coverage {
            grants: self.grants,
            grants_faulted: self.grants_faulted,
            kills: kills.len(),
            kills_back_within_ttl: self.largest_ttl_ms.map_or(0, |ttl| {
                let ttl_ns = ttl.saturating_mul(1_000_000);
                downtimes.iter().filter(|&&down| down < ttl_ns).count()
            }),
            restart_ms: Spread::of(downtimes),
            pauses_on_holder: count_on_holder(&|fault| fault == "client-pause"),
            clock_faults_on_holder_node: count_on_holder(&|fault| fault.starts_with("clock-")),
            faults: windows.len(),
            detector_ms: detector_ms.map(|d| d as f64),
            node_outages: outages.len(),
            outages_past_detector: detector_ms.map_or(0, |detector| {
                let detector_ns = detector.saturating_mul(1_000_000);
                outages
                    .iter()
                    .filter(|w| w.stop.saturating_sub(w.start) > detector_ns)
                    .count()
            }),
            ..self
                .masters
                .map(|masters| masters.coverage(self.facts.majority_commits))
                .unwrap_or_default()
        }
    }
}

impl Masters {
    /// Whether an op acknowledged by `node` at `time` was at risk (see [`AtRisk`]).
    fn risked(&self, node: &Option<Vec<String>>, time: u64) -> bool {
        let [node] = node.as_deref().unwrap_or_default() else {
            return false;
        };
        self.at_risk
            .iter()
            .any(|r| r.node == *node && (r.from..r.until).contains(&time))
    }

    fn coverage(&self, majority_commits: bool) -> Coverage {
        // Without a change of master nothing was demoted, and there is nothing to count.
        let changed = self.records > 1 && !majority_commits;
        Coverage {
            master_changes: Some(self.records - 1),
            two_masters_ms: Some(ms(self.two_masters)),
            acked_by_demoted: changed.then_some(self.acked),
            leases_live_at_promotion: changed.then_some(self.live),
            ..Coverage::default()
        }
    }
}

/// When a master's acknowledgements were at risk: from the start of the latest fault on it
/// (or on no node in particular) before another node was promoted, until it is named master
/// again after its demotion (or the end). Not until its demotion: the deployment names the
/// new master before the old one has heard, and the old one goes on acknowledging writes
/// until it is told to replicate (Sentinel reconfigures it seconds after the heal).
struct AtRisk {
    node: String,
    from: u64,
    promoted: u64,
    until: u64,
}

fn at_risk(records: &[&Op], windows: &[Window], end: u64) -> Vec<AtRisk> {
    let named = |op: &Op| op.node.clone().unwrap_or_default();
    let mut at_risk = Vec::new();
    for (i, pair) in records.windows(2).enumerate() {
        let (before, after) = (named(pair[0]), named(pair[1]));
        if after.iter().all(|node| before.contains(node)) {
            continue;
        }
        let promoted = pair[1].time;
        for old in before {
            let Some(demoted) = records[i + 1..]
                .iter()
                .position(|record| !named(record).contains(&old))
                .map(|at| i + 1 + at)
            else {
                continue;
            };
            let named_again = records[demoted..]
                .iter()
                .find(|record| named(record).contains(&old))
                .map(|record| record.time);
            let from = windows
                .iter()
                .filter(|w| w.start <= promoted)
                .filter(|w| w.nodes.is_empty() || w.nodes.contains(&old))
                .map(|w| w.start)
                .max()
                .unwrap_or(promoted);
            at_risk.push(AtRisk {
                node: old,
                from,
                promoted,
                until: named_again.unwrap_or(end),
            });
        }
    }
    at_risk
}

/// Whether `window`'s fault acts on `grant`'s holder, its worker or its nodes (module doc).
fn reaches_holder(window: &Window, grant: &Candidate, workers: u64, groups: Option<u64>) -> bool {
    let on_grant_node = |node: &str| {
        grant
            .nodes
            .as_ref()
            .filter(|nodes| !nodes.is_empty())
            .is_none_or(|nodes| nodes.iter().any(|n| n == node))
    };
    let worker = match grant.process {
        Process::Client(p) => Some(p % workers),
        Process::Nemesis(_) => None,
    };
    let in_holders_group = |group: &str| match groups {
        Some(groups) => group
            .strip_prefix('g')
            .and_then(|g| g.parse::<u64>().ok())
            .is_some_and(|g| worker.is_some_and(|w| w % groups == g)),
        None => true,
    };
    match Reach::of(&window.fault) {
        Reach::Node => window.nodes.is_empty() || window.nodes.iter().any(|n| on_grant_node(n)),
        Reach::Client => window.nodes.iter().any(|target| {
            target
                .strip_prefix("client-")
                .and_then(|w| w.parse::<u64>().ok())
                .is_some_and(|w| Some(w) == worker)
        }),
        Reach::Link => window.nodes.iter().any(|link| {
            link.split_once("->")
                .is_some_and(|(group, node)| in_holders_group(group) && on_grant_node(node))
        }),
        Reach::Unknown => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::HistoryBuilder;

    /// Builds histories in order, times in milliseconds, every acquire asking 1000 ms.
    trait CoverageScript {
        /// Process `p` acquires at `from` (granted by `nodes`, if any) and releases at `to`.
        fn hold(&mut self, from_to: (u64, u64), p: u64, nodes: &[&str]) -> &mut Self;
        fn fault(&mut self, from_to: (u64, u64), fault: &str, targets: &[&str]) -> &mut Self;
        /// The deployment names `masters` as master from `at` on.
        fn master(&mut self, at: u64, masters: &[&str]) -> &mut Self;
        /// Process `p`'s `f`, acknowledged at `at` by `node`.
        fn acked(&mut self, at: u64, p: u64, f: &str, node: &str) -> &mut Self;
        fn check(&mut self, concurrency: Option<usize>) -> Coverage;
        fn check_with(&mut self, facts: RunFacts) -> Coverage;
    }

    impl CoverageScript for HistoryBuilder {
        /// Process `p` acquires at `from` (granted by `nodes`, if any) and releases at `to`.
        fn hold(&mut self, (from, to): (u64, u64), p: u64, nodes: &[&str]) -> &mut Self {
            let op = |kind, f| Op::new(Process::Client(p), kind, f).key("lock");
            let mut invoke = op(OpType::Invoke, "acquire");
            invoke.ttl_ms = Some(1_000);
            let mut granted = op(OpType::Ok, "acquire");
            if !nodes.is_empty() {
                granted.node = Some(nodes.iter().map(|n| n.to_string()).collect());
            }
            self.at(from, invoke)
                .at(from + 1, granted)
                .at(to, op(OpType::Invoke, "release"))
                .at(to + 1, op(OpType::Ok, "release"))
        }
        fn fault(&mut self, (from, to): (u64, u64), fault: &str, targets: &[&str]) -> &mut Self {
            let op = |f| {
                let mut op = Op::new(Process::NEMESIS, OpType::Info, f)
                    .nodes(targets.iter().map(|t| t.to_string()).collect());
                op.fault = Some(fault.to_string());
                op
            };
            self.at(from, op("start")).at(to, op("stop"))
        }
        /// The deployment names `masters` as master from `at` on.
        fn master(&mut self, at: u64, masters: &[&str]) -> &mut Self {
            let op = Op::new(Process::NEMESIS, OpType::Info, "master")
                .nodes(masters.iter().map(|m| m.to_string()).collect());
            self.at(at, op)
        }
        /// Process `p`'s `f`, acknowledged at `at` by `node`.
        fn acked(&mut self, at: u64, p: u64, f: &str, node: &str) -> &mut Self {
            let op = |kind| Op::new(Process::Client(p), kind, f).key("set");
            let mut done = op(OpType::Ok);
            done.node = Some(vec![node.to_string()]);
            self.at(at - 1, op(OpType::Invoke)).at(at, done)
        }
        fn check(&mut self, concurrency: Option<usize>) -> Coverage {
            self.check_with(RunFacts {
                concurrency,
                ..RunFacts::default()
            })
        }
        fn check_with(&mut self, facts: RunFacts) -> Coverage {
            check(&self.build_in_time_order(), facts)
        }
    }

    #[test]
    fn updates_a_demoted_master_acknowledged_after_its_cut_off_are_at_risk() {
        let mut s = HistoryBuilder::default();
        s.master(0, &["n1"])
            .fault((100, 700), "partition", &["n1", "n2", "n3"])
            .master(300, &["n1", "n2"])
            .master(800, &["n2"])
            .acked(50, 0, "add", "n1") // before the fault: replicated
            .acked(150, 1, "add", "n1") // cut off, not yet replaced
            .acked(500, 2, "add", "n1") // two masters
            .acked(200, 3, "read", "n1") // a read risks nothing
            .acked(400, 4, "add", "n2") // the new master's
            .acked(900, 0, "add", "n1") // after the demotion, before it hears of it
            .fault((990, 1050), "failover", &[])
            .master(1000, &["n1"]) // n1 is master again
            .acked(1100, 1, "add", "n1") // and this one is safe
            .hold((120, 400), 5, &["n1"]) // a lease running past the promotion
            .hold((150, 250), 6, &["n1"]) // one released before it
            .hold((60, 350), 7, &["n1"]); // granted before the fault: replicated
        let facts = RunFacts {
            concurrency: Some(5),
            detector_ms: Some(300),
            ..RunFacts::default()
        };
        // Where a majority commits each write, a cut-off master acknowledged none of these.
        let consensus = s.check_with(RunFacts {
            majority_commits: true,
            ..facts
        });
        assert_eq!(consensus.acked_by_demoted, None);
        assert_eq!(consensus.leases_live_at_promotion, None);
        let r = s.check_with(facts);
        assert_eq!(consensus.master_changes, r.master_changes);
        assert_eq!(r.acked_by_demoted, Some(5), "three adds and two grants");
        assert_eq!(r.leases_live_at_promotion, Some(1));
        assert_eq!((r.node_outages, r.outages_past_detector), (1, 1));
        assert!(
            r.line().contains(
                "5 updates acknowledged by a master after the fault that demoted it began; 1 \
                 lease granted by a cut-off master still running when another was promoted; \
                 1 of 1 node outage outlasted the failure detector (0.3 s)"
            ),
            "{}",
            r.line()
        );

        let mut short = HistoryBuilder::default();
        short
            .master(0, &["n1"])
            .fault((100, 300), "kill", &["n1"])
            .fault((400, 500), "clock-bump", &["n1"]);
        let r = short.check_with(facts);
        assert_eq!((r.node_outages, r.outages_past_detector), (1, 0));
        assert_eq!(r.acked_by_demoted, None, "no promotion, nothing at risk");
        assert_eq!(r.leases_live_at_promotion, None);
    }

    #[test]
    fn master_records_count_changes_and_the_time_with_two_masters() {
        let mut s = HistoryBuilder::default();
        s.hold((0, 100), 0, &[]);
        assert_eq!(s.check(None).master_changes, None, "no master records");
        s.master(0, &["n1"])
            .master(300, &["n1", "n2"])
            .master(800, &["n2"])
            .hold((900, 1000), 1, &[]);
        let r = s.check(None);
        assert_eq!(r.master_changes, Some(2));
        assert_eq!(r.two_masters_ms, Some(500.0));
        assert!(!r.no_failover());
        assert!(r
            .line()
            .contains("2 master changes, two masters at once for 0.5 s"));

        let mut s = HistoryBuilder::default();
        s.master(0, &["n1"])
            .fault((50, 90), "client-pause", &["client-0"]);
        assert!(
            !s.check(None).no_failover(),
            "no node fault, no failover asked"
        );
        s.fault((100, 200), "partition", &["n2"]);
        s.hold((300, 400), 0, &["n1"]);
        let r = s.check(None);
        assert!(r.no_failover());
        assert_eq!(
            r.line(),
            "1 grant, 0 with a fault on the holder during its lease; 0 master changes",
            "nothing about demoted masters without a change of master"
        );
    }

    #[test]
    fn a_node_fault_reaches_a_grant_from_that_node_only() {
        let mut s = HistoryBuilder::default();
        s.hold((0, 500), 0, &["n1", "n2"])
            .hold((600, 900), 1, &["n3", "n4"])
            .fault((100, 700), "pause", &["n2"]);
        let r = s.check(Some(2));
        assert_eq!((r.grants, r.grants_faulted, r.faults), (2, 1, 1));
        assert!(r.touched_a_holder());
    }

    #[test]
    fn a_grant_without_nodes_is_reached_by_any_node_fault_and_a_failover_reaches_all() {
        let mut s = HistoryBuilder::default();
        s.hold((0, 500), 0, &[]).fault((100, 200), "kill", &["n3"]);
        assert_eq!(s.check(None).grants_faulted, 1);

        let mut s = HistoryBuilder::default();
        s.hold((0, 500), 0, &["n1"])
            .fault((100, 200), "failover", &[]);
        assert_eq!(s.check(None).grants_faulted, 1);
    }

    #[test]
    fn a_fault_outside_the_hold_reaches_nothing() {
        // Before the grant's ok (during the acquire) and after the release's invoke.
        let mut s = HistoryBuilder::default();
        s.at(0, {
            let mut invoke = Op::new(Process::Client(0), OpType::Invoke, "acquire").key("lock");
            invoke.ttl_ms = Some(1_000);
            invoke
        })
        .fault((10, 90), "kill", &[])
        .at(
            100,
            Op::new(Process::Client(0), OpType::Ok, "acquire").key("lock"),
        )
        .at(
            300,
            Op::new(Process::Client(0), OpType::Invoke, "release").key("lock"),
        )
        .fault((400, 500), "kill", &[]);
        let r = s.check(None);
        assert_eq!((r.grants, r.grants_faulted, r.faults), (1, 0, 2));
        assert!(!r.touched_a_holder());
    }

    #[test]
    fn a_grant_never_released_is_held_until_its_lease_ends() {
        let mut s = HistoryBuilder::default();
        let mut invoke = Op::new(Process::Client(0), OpType::Invoke, "acquire").key("lock");
        invoke.ttl_ms = Some(1_000);
        s.at(0, invoke).at(
            1,
            Op::new(Process::Client(0), OpType::Ok, "acquire").key("lock"),
        );
        let mut later = s.clone();
        s.fault((900, 950), "pause", &[]);
        assert_eq!(s.check(None).grants_faulted, 1);
        later.fault((1_100, 1_200), "pause", &[]);
        assert_eq!(later.check(None).grants_faulted, 0);
    }

    #[test]
    fn a_client_fault_reaches_its_own_worker_only() {
        // Concurrency 3: process 5 is worker 2.
        let mut s = HistoryBuilder::default();
        s.hold((0, 500), 5, &[]).hold((0, 500), 4, &[]).fault(
            (100, 200),
            "client-pause",
            &["client-2"],
        );
        let r = s.check(Some(3));
        assert_eq!((r.grants_faulted, r.pauses_on_holder), (1, 1));
        let r = s.check(Some(4));
        assert_eq!(
            (r.grants_faulted, r.pauses_on_holder),
            (0, 0),
            "worker 1 and 0"
        );
    }

    #[test]
    fn without_concurrency_the_workers_are_the_processes_before_the_first_info() {
        // Processes 0..3 invoke first; process 1 times out and comes back as 4 (worker 1).
        let mut s = HistoryBuilder::default();
        for p in 0..3 {
            s.at(
                p,
                Op::new(Process::Client(p), OpType::Invoke, "read").key("doc"),
            );
        }
        s.at(
            10,
            Op::new(Process::Client(1), OpType::Info, "read").key("doc"),
        )
        .hold((100, 500), 4, &[])
        .fault((200, 300), "client-crash", &["client-1"]);
        assert_eq!(Outline::of(&s.build()).inferred_concurrency(), 3);
        assert_eq!(s.check(None).grants_faulted, 1);
    }

    #[test]
    fn a_link_fault_reaches_a_grant_through_a_link_to_one_of_its_nodes() {
        let mut s = HistoryBuilder::default();
        s.hold((0, 500), 0, &["n1", "n2"])
            .fault((100, 200), "link-blackhole", &["g1->n3"]);
        assert_eq!(s.check(Some(1)).grants_faulted, 0);
        s.fault((300, 400), "link-latency", &["g0->n2"]);
        assert_eq!(s.check(Some(1)).grants_faulted, 1);
    }

    #[test]
    fn with_client_groups_known_a_link_fault_reaches_only_its_groups_holders() {
        // Workers 0 and 2 are in group 0, worker 1 in group 1 (of two); process 4 is worker 1.
        let mut s = HistoryBuilder::default();
        s.hold((0, 500), 0, &["n1"])
            .hold((0, 500), 4, &["n1"])
            .hold((0, 500), 2, &["n2"])
            .fault((100, 200), "link-drop", &["g1->n1"]);
        let groups = |client_groups| RunFacts {
            concurrency: Some(3),
            client_groups,
            ..RunFacts::default()
        };
        assert_eq!(
            s.check_with(groups(Some(2))).grants_faulted,
            1,
            "only worker 1's"
        );
        assert_eq!(
            s.check_with(groups(None)).grants_faulted,
            2,
            "groups unknown: any link to the grant's node"
        );
    }

    #[test]
    fn a_fault_of_an_unknown_name_is_counted_but_reaches_no_holder() {
        let mut s = HistoryBuilder::default();
        s.hold((0, 500), 0, &[]).fault((100, 200), "meteor", &[]);
        let r = s.check(None);
        assert_eq!((r.faults, r.grants_faulted), (1, 0));
    }

    #[test]
    fn kills_back_within_the_largest_ttl_and_their_restart_times() {
        let mut s = HistoryBuilder::default();
        s.hold((0, 100), 0, &[])
            .fault((1_000, 1_100), "kill", &["n1"])
            .fault((2_000, 5_000), "kill-primary", &["n2"])
            .fault((6_000, 6_500), "kill", &["n3"])
            .fault((7_000, 7_050), "pause", &["n1"]);
        let r = s.check(None);
        assert_eq!((r.kills, r.kills_back_within_ttl, r.faults), (3, 2, 4));
        assert_eq!(
            r.restart_ms,
            Some(Spread {
                min: 100.0,
                median: 500.0,
                max: 3_000.0
            })
        );
        assert_eq!(
            r.line(),
            "1 grant, 0 with a fault on the holder during its lease; 3 kills, 2 back within \
             the TTL (restart 100-3000 ms, median 500 ms)"
        );
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        let spread = Spread::of(vec![4_000_000, 1_000_000, 2_000_000, 9_000_000]).unwrap();
        assert_eq!((spread.min, spread.median, spread.max), (1.0, 3.0, 9.0));
        assert_eq!(Spread::of(Vec::new()), None);
    }

    #[test]
    fn a_kill_never_stopped_has_no_restart_time() {
        let mut s = HistoryBuilder::default();
        s.hold((0, 100), 0, &[]);
        let mut start = Op::new(Process::NEMESIS, OpType::Info, "start");
        start.fault = Some("kill".into());
        s.at(50, start);
        let r = s.check(None);
        assert_eq!(
            (r.kills, r.kills_back_within_ttl, r.restart_ms),
            (1, 0, None)
        );
        assert_eq!(r.grants_faulted, 1);
    }

    #[test]
    fn a_clock_fault_counts_on_a_holders_node_only() {
        let mut s = HistoryBuilder::default();
        s.hold((0, 500), 0, &["n1"])
            .fault((100, 200), "clock-bump", &["n2"])
            .fault((300, 400), "clock-strobe", &["n1", "n3"]);
        let r = s.check(None);
        assert_eq!((r.clock_faults_on_holder_node, r.grants_faulted), (1, 1));
        assert!(
            r.line().ends_with("; 1 clock fault on a holder's node"),
            "{}",
            r.line()
        );
    }

    #[test]
    fn the_line_names_what_was_exercised() {
        let coverage = Coverage {
            grants: 53,
            grants_faulted: 12,
            kills: 39,
            kills_back_within_ttl: 31,
            restart_ms: Some(Spread {
                min: 40.0,
                median: 70.0,
                max: 180.0,
            }),
            pauses_on_holder: 3,
            clock_faults_on_holder_node: 0,
            faults: 60,
            ..Coverage::default()
        };
        assert_eq!(
            coverage.line(),
            "53 grants, 12 with a fault on the holder during its lease; 39 kills, 31 back \
             within the TTL (restart 40-180 ms, median 70 ms); 3 client pauses on a holder"
        );
        assert_eq!(
            Coverage::default().line(),
            "0 grants, 0 with a fault on the holder during its lease; no faults"
        );
    }
}
