//! Who is master, as the Sentinels say, recorded whenever it changes: the nemesis side of a
//! replicated deployment's history.

use std::time::Duration;

use splitbrain_checker::{Op, OpType, Process};
use splitbrain_compose::Deployment;
use splitbrain_workloads::Recorder;
use tokio_util::sync::CancellationToken;

/// How often the Sentinels are asked.
const POLL: Duration = Duration::from_millis(200);

/// Records a nemesis `master` op (`node`: the master the Sentinels agree on) at the start and
/// at every change, until `stop`. Moments when the Sentinels disagree or none answers are not
/// recorded: the last agreed master stands until a new one is agreed.
pub async fn watch_master(deployment: Deployment, recorder: &Recorder, stop: CancellationToken) {
    let mut last: Option<String> = None;
    while !stop.is_cancelled() {
        if let Some(master) = deployment.sentinel_master().await {
            if last.as_ref() != Some(&master) {
                let mut op =
                    Op::new(Process::NEMESIS, OpType::Info, "master").nodes(vec![master.clone()]);
                op.measured = last.take().map(|from| serde_json::json!({ "from": from }));
                recorder.record(op);
                last = Some(master);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            () = stop.cancelled() => {}
        }
    }
}
