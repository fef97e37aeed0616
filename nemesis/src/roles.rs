//! Who is master, as the Sentinels say, recorded whenever it changes: the nemesis side of a
//! replicated deployment's history, split brains included.

use std::time::Duration;

use splitbrain_checker::{Op, OpType, Process};
use splitbrain_compose::Deployment;
use splitbrain_workloads::Recorder;
use tokio_util::sync::CancellationToken;

/// How often the Sentinels are asked.
const POLL: Duration = Duration::from_millis(200);

/// Records a nemesis `master` op at the start and at every change, until `stop`: `node` lists
/// every node some reachable Sentinel names as master (two of them during a split brain).
/// While no Sentinel answers, the last record stands.
pub async fn watch_master(deployment: Deployment, recorder: &Recorder, stop: CancellationToken) {
    let mut last: Vec<String> = Vec::new();
    while !stop.is_cancelled() {
        let masters = deployment.sentinel_masters().await;
        if !masters.is_empty() && masters != last {
            let mut op = Op::new(Process::NEMESIS, OpType::Info, "master").nodes(masters.clone());
            if !last.is_empty() {
                op.measured = Some(serde_json::json!({ "from": last }));
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
