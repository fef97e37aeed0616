//! Who is master, as the deployment says, recorded whenever it changes: the nemesis side of a
//! replicated deployment's history, split brains included.

use std::time::Duration;

use splitbrain_checker::{Op, OpType, Process};
use splitbrain_compose::Deployment;
use splitbrain_workloads::Recorder;
use tokio_util::sync::CancellationToken;

/// How often the deployment is asked.
const POLL: Duration = Duration::from_millis(200);

/// Records a nemesis `master` op for `key` at the start and at every change, until `stop`:
/// `node` lists every node that acts as master for it (two during a split brain), as the
/// deployment says it ([`splitbrain_compose::Topology::masters`]: those some reachable
/// Sentinel names, say, or the members some member names its leader). `measured` says who
/// was master before and who promotes (`sentinel`, the `cluster`'s vote, or an `election`);
/// the nemesis op before it in the history says what set it off. While nobody answers, the last
/// record stands.
pub async fn watch_master(
    deployment: Deployment,
    key: &str,
    recorder: &Recorder,
    stop: CancellationToken,
) {
    let mut last: Vec<String> = Vec::new();
    let promoter = deployment.replication().promoter.unwrap_or("nobody");
    while !stop.is_cancelled() {
        let masters = deployment.masters_of(key).await;
        if !masters.is_empty() && masters != last {
            let mut op = Op::new(Process::NEMESIS, OpType::Info, "master").nodes(masters.clone());
            if !last.is_empty() {
                op.measured = Some(serde_json::json!({
                    "from": last,
                    "by": promoter,
                }));
            }
            recorder.record(op);
            last = masters;
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            () = stop.cancelled() => {}
        }
    }
}
