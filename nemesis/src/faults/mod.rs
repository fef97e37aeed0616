//! Faults: one file each, registered in [`FAULTS`]. A fault owns what it does to the nodes,
//! how it is healed, and how a heal is verified; the runner owns when.

mod chain;
mod client_crash;
mod client_pause;
mod clock;
mod clock_holder;
mod failover;
mod holder;
mod kill;
mod kill_holder;
mod link;
mod link_drop_aimed;
mod packet;
mod partition;
mod pause;
mod primary;
mod primary_node;

use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;
use splitbrain_checker::words::one_of;
use splitbrain_compose::{ComposeError, Deployment, Replication};
use splitbrain_workloads::{ClientCrashes, ClientPauses, SeenGrant};
use tokio::sync::watch;

use crate::links::Links;
use tokio::task::JoinHandle;

use crate::NemesisOptions;

/// What faults act on: the deployment's nodes, the client workers' pause and crash switches,
/// and the client-to-node links (empty when the run has no link faults).
#[derive(Clone)]
pub struct Target {
    pub deployment: Deployment,
    pub clients: ClientPauses,
    pub crashes: ClientCrashes,
    pub links: Links,
    /// The key the clients contend for: faults on "the current master" aim at its master
    /// (on `cluster`, the master of its slot).
    pub key: String,
    /// Grants as the clients are given them, for faults aimed at the holder.
    pub grants: watch::Receiver<Option<SeenGrant>>,
}

/// What a schedule plans over: node names, the number of client workers, and the number of
/// client groups with links of their own (0: clients connect straight to the nodes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub nodes: Vec<String>,
    pub clients: usize,
    pub groups: usize,
    /// How the nodes relate.
    pub replication: Replication,
    /// Whether the clock faults reach the nodes' servers (see
    /// [`splitbrain_compose::System::clock_faults_reach`]).
    pub clock_faults: bool,
    /// Every deployment there is: a refusal names those where the fault would fit.
    pub deployments: Vec<Elsewhere>,
}

/// Another deployment, as a refusal names it: what the faults ask of a deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elsewhere {
    pub name: &'static str,
    pub replication: Replication,
    pub clock_faults: bool,
}

impl Layout {
    /// The deployments where `fits` holds, for a refusal to name: `--deployment sentinel or
    /// cluster`.
    pub fn deployments_where(&self, fits: impl Fn(&Elsewhere) -> bool) -> String {
        let names: Vec<&str> = self
            .deployments
            .iter()
            .filter(|deployment| fits(deployment))
            .map(|deployment| deployment.name)
            .collect();
        if names.is_empty() {
            "another deployment".into()
        } else {
            format!("--deployment {}", one_of(&names))
        }
    }
}

/// One step's plan for a fault: whom it hits and with what, fixed by the seeded schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    pub targets: Vec<String>,
    /// The fault's parameters (a partition's grudge, a clock's offset), recorded as the
    /// nemesis op's `value`; `Null` when it has none.
    pub params: serde_json::Value,
}

impl Action {
    pub fn on(targets: Vec<String>) -> Action {
        Action {
            targets,
            params: serde_json::Value::Null,
        }
    }
}

impl std::fmt::Debug for dyn Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What starting a fault gave back.
#[derive(Default)]
pub struct Started {
    /// What the harness observed of the fault's effect, recorded as the op's `measured`.
    pub measured: Option<serde_json::Value>,
    /// Work that goes on while the fault is active (a strobing clock); aborted before `stop`.
    pub background: Option<JoinHandle<()>>,
    /// The nodes the fault hit, where it chose them only when it started (the current master,
    /// the holder's nodes): recorded as its ops' `node` instead of the planned targets.
    pub targets: Option<Vec<String>>,
    /// When the fault began to act, where its start first waited for something else (a fault
    /// aimed at the next grant): the start's `began_ms`, rather than when the wait began.
    pub acting_from: Option<std::time::Instant>,
}

/// A fault that can be started on some nodes and stopped (healed) again.
#[async_trait]
pub trait Fault: Sync {
    /// The name users pass to `--nemesis`.
    fn name(&self) -> &'static str;
    fn summary(&self) -> &'static str;
    /// Faults of one family leave the same traces and share their heal (every partition
    /// shape, every kind of clock fault).
    fn family(&self) -> &'static str {
        self.name()
    }
    /// Whether this fault acts on the client-to-node links, so the run must route the
    /// clients through them.
    fn needs_links(&self) -> bool {
        false
    }
    /// Whether it picks its targets only when it starts (the holder, the master of the
    /// moment), so that the seed fixes its parameters but not whom it hits.
    fn aims_when_started(&self) -> bool {
        false
    }
    /// Why this fault cannot run on a deployment of these nodes, if it cannot.
    fn fits(&self, _layout: &Layout) -> Result<(), String> {
        Ok(())
    }
    /// Checks, once the deployment is up and before any fault starts, that this fault can run
    /// here at all (a kernel feature, say); says why not if it cannot.
    async fn preflight(&self, _target: &Target) -> Result<(), String> {
        Ok(())
    }
    /// This step's action; by default one of Jepsen's node specs, chosen at random.
    fn plan(&self, layout: &Layout, _options: &NemesisOptions, rng: &mut StdRng) -> Action {
        Action::on(jepsen_targets(&layout.nodes, rng))
    }
    /// Why a scripted step's parameters cannot work, if they cannot (`Null` where the script
    /// left them out: the seed's plan then gives them, unless that cannot match the step).
    fn check_scripted(&self, _params: &serde_json::Value) -> Result<(), String> {
        Ok(())
    }
    /// The fault and action that do again exactly what a recorded start did (`done`, with what
    /// it `measured`), whatever the deployment's state by then, for a replay: by default this
    /// fault again; a fault that aimed when it started gives the plain fault it aimed with, on
    /// the targets it hit.
    fn repeated(&self, done: &Action, _measured: &serde_json::Value) -> (&'static str, Action) {
        (self.name(), done.clone())
    }
    /// How long the fault stays on before it is healed; by default [`fault_length`].
    fn hold(&self, options: &NemesisOptions, rng: &mut StdRng) -> Duration {
        fault_length(options, rng)
    }
    async fn start(&self, target: &Target, action: &Action) -> Result<Started, ComposeError>;
    async fn stop(&self, target: &Target, action: &Action) -> Result<(), ComposeError>;
    /// When the fault stopped acting, where it ended by itself before its `stop` (a client
    /// pause thaws at the end of its pause): by default it acted until `stop` began.
    fn ended_by_itself(&self, _target: &Target, _action: &Action) -> Option<std::time::Instant> {
        None
    }
    /// Undoes this fault on every node, whatever was or was not started.
    async fn heal_all(&self, target: &Target) -> Result<(), ComposeError>;
    /// Says what is left of this fault on any node, if anything is.
    async fn leftovers(&self, target: &Target) -> Result<Vec<String>, ComposeError>;
}

/// Every fault, by name.
pub static FAULTS: &[&dyn Fault] = &[
    &kill::Kill,
    &kill_holder::KillHolder,
    &pause::Pause,
    &partition::Partition(None),
    &partition::Partition(Some(partition::Shape::Isolate)),
    &partition::Partition(Some(partition::Shape::Halves)),
    &partition::Partition(Some(partition::Shape::Ring)),
    &partition::Partition(Some(partition::Shape::Bridge)),
    &primary::PrimaryPartition,
    &primary_node::PrimaryNode(primary_node::NodeFault::Kill),
    &primary_node::PrimaryNode(primary_node::NodeFault::Pause),
    &clock::Clock(clock::ClockKind::Bump),
    &clock::Clock(clock::ClockKind::Strobe),
    &clock::Clock(clock::ClockKind::Drift),
    &clock_holder::ClockHolder,
    &client_pause::ClientPause,
    &client_crash::ClientCrash,
    &failover::Failover,
    &link::Link(link::LinkKind::Latency),
    &link::Link(link::LinkKind::Blackhole),
    &link::Link(link::LinkKind::Reset),
    &link::Link(link::LinkKind::Bandwidth),
    &link::Link(link::LinkKind::SlowClose),
    &link::Link(link::LinkKind::Drop),
    &link_drop_aimed::LinkDropAimed(link_drop_aimed::Aim::Holder),
    &link_drop_aimed::LinkDropAimed(link_drop_aimed::Aim::Waiter),
    &packet::Packet::Loss,
    &packet::Packet::Netem,
];

/// How long a fault lasts by default. Where faults are paced by a failure detector, one in
/// five is shorter than it (the deployment should do nothing) and the rest last 1.5 to 3
/// times as long (it must fail over): a fault shorter than the detector tests nothing more.
/// Otherwise, about one `--nemesis-interval`.
pub fn fault_length(options: &NemesisOptions, rng: &mut StdRng) -> Duration {
    match options.detector {
        Some(detector) if rng.random_bool(0.2) => detector.mul_f64(rng.random_range(0.3..0.8)),
        Some(detector) => detector.mul_f64(rng.random_range(1.5..3.0)),
        None => options.interval.mul_f64(rng.random_range(0.5..1.5)),
    }
}

/// The quiet time before a fault: where faults are paced by a failure detector, one to two
/// detectors, so that the deployment settles (an old master rejoins as a replica) before the
/// next; otherwise about one `--nemesis-interval`.
pub fn quiet_time(options: &NemesisOptions, rng: &mut StdRng) -> Duration {
    match options.detector {
        Some(detector) => detector.mul_f64(rng.random_range(1.0..2.0)),
        None => options.interval.mul_f64(rng.random_range(0.5..1.5)),
    }
}

/// Looks a fault up by name.
pub fn find_fault(name: &str) -> Option<&'static dyn Fault> {
    FAULTS.iter().copied().find(|f| f.name() == name)
}

/// What `--nemesis all` means: every kind once (`partition` picks its shape each time).
pub fn all_faults() -> Vec<&'static dyn Fault> {
    FAULTS
        .iter()
        .copied()
        .filter(|f| !f.name().starts_with("partition-"))
        .collect()
}

/// One fault of each family: what a full heal check asks.
pub fn families() -> Vec<&'static dyn Fault> {
    let mut seen = Vec::new();
    FAULTS
        .iter()
        .copied()
        .filter(|f| {
            let new = !seen.contains(&f.family());
            seen.push(f.family());
            new
        })
        .collect()
}

/// The default Redlock's layout, for tests: five masters, five clients in two groups.
#[cfg(test)]
pub(crate) fn five_masters() -> Layout {
    Layout {
        nodes: (1..=5).map(|i| format!("n{i}")).collect(),
        clients: 5,
        groups: 2,
        replication: Replication::default(),
        clock_faults: true,
        deployments: Vec::new(),
    }
}

/// Applies `action` to every target at once; the first error wins.
async fn join_targets<'a, F, Fut>(targets: &'a [String], action: F) -> Result<(), ComposeError>
where
    F: Fn(&'a str) -> Fut,
    Fut: std::future::Future<Output = Result<(), ComposeError>>,
{
    futures_util::future::try_join_all(targets.iter().map(|t| action(t))).await?;
    Ok(())
}

/// The target name of client worker `w`: `client-<w>`.
pub(crate) fn client_target(worker: usize) -> String {
    format!("client-{worker}")
}

/// The worker a `client-<w>` target names (none that exists if it is malformed).
fn client_worker(target: &str) -> usize {
    target
        .strip_prefix("client-")
        .and_then(|w| w.parse().ok())
        .unwrap_or(usize::MAX)
}

/// Jepsen's node specs, one picked at random: one node, a minority (the largest set short of
/// a majority), a majority (the smallest), or all. Losing a majority at once is what a power
/// cut or a bad deploy does, and what Redlock's delayed-restart rule is for.
fn jepsen_targets(nodes: &[String], rng: &mut StdRng) -> Vec<String> {
    let n = nodes.len();
    let count = match rng.random_range(0..4) {
        0 => 1,
        1 => (n.saturating_sub(1) / 2).max(1),
        2 => n / 2 + 1,
        _ => n,
    };
    let mut targets: Vec<String> = nodes.choose_multiple(rng, count.min(n)).cloned().collect();
    targets.sort();
    targets
}

/// One node or a minority: for faults that should leave the majority's view intact.
fn one_or_minority(nodes: &[String], rng: &mut StdRng) -> Vec<String> {
    let minority = (nodes.len().saturating_sub(1) / 2).max(1);
    let count = if rng.random_bool(0.5) { 1 } else { minority };
    let mut targets: Vec<String> = nodes
        .choose_multiple(rng, count.min(nodes.len()))
        .cloned()
        .collect();
    targets.sort();
    targets
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn nodes(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("n{i}")).collect()
    }

    #[test]
    fn targets_are_one_minority_majority_or_all() {
        let nodes = nodes(5);
        let mut rng = StdRng::seed_from_u64(7);
        let mut sizes = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let t = jepsen_targets(&nodes, &mut rng);
            let mut unique = t.clone();
            unique.dedup();
            assert_eq!(unique, t, "targets are distinct and sorted");
            sizes.insert(t.len());
        }
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [1, 2, 3, 5]);
        let single = vec!["n1".to_string()];
        assert_eq!(jepsen_targets(&single, &mut rng), single);
        assert_eq!(one_or_minority(&single, &mut rng), single);
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = FAULTS.iter().map(|f| f.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FAULTS.len());
        let all: Vec<_> = all_faults().iter().map(|f| f.name()).collect();
        assert!(
            all.contains(&"partition") && !all.contains(&"partition-ring"),
            "{all:?}"
        );
    }
}
