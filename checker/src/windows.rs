//! The faults of a history as windows of time, from each nemesis `start` to the next `stop` of
//! the same fault (or the end of the history).

use serde::{Deserialize, Serialize};

use crate::operation::ms;
use crate::Op;

/// A fault from its nemesis `start` to its `stop` (or the end of the history).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultWindow {
    pub fault: String,
    pub nodes: Vec<String>,
    pub start_ms: f64,
    /// Until when it surely acted: where the stop says (`measured.ended_ms`), when the
    /// nemesis began to undo it or it ended by itself, otherwise when the stop was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_ms: Option<f64>,
}

/// The faults a history records, from each nemesis `start` to the next `stop` of that fault,
/// as [`crate::holds::DoubleGrant::faults`] names them.
pub fn faults(history: &[Op]) -> Vec<FaultWindow> {
    fault_windows(history)
        .iter()
        .map(Window::to_window)
        .collect()
}

/// A fault's window in nanoseconds; `stop` is `u64::MAX` for a fault never stopped.
pub(crate) struct Window {
    pub(crate) fault: String,
    pub(crate) nodes: Vec<String>,
    pub(crate) start: u64,
    pub(crate) stop: u64,
    pub(crate) stopped: bool,
    /// Until when it surely acted, where its stop says: at or before `stop`.
    pub(crate) ended: Option<u64>,
}

impl Window {
    pub(crate) fn to_window(&self) -> FaultWindow {
        FaultWindow {
            fault: self.fault.clone(),
            nodes: self.nodes.clone(),
            start_ms: ms(self.start),
            stop_ms: self.stopped.then(|| ms(self.ended.unwrap_or(self.stop))),
        }
    }
}

/// What a fault acts on, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    Node,
    Client,
    Link,
    Unknown,
}

impl Reach {
    pub(crate) fn of(fault: &str) -> Reach {
        const NODE: [&str; 8] = [
            "kill",
            "kill-holder",
            "pause",
            "partition",
            "kill-primary",
            "pause-primary",
            "partition-primary",
            "failover",
        ];
        const NODE_FAMILIES: [&str; 3] = ["partition-", "clock-", "packet-"];
        if NODE.contains(&fault) || NODE_FAMILIES.iter().any(|p| fault.starts_with(p)) {
            Reach::Node
        } else if fault == "client-pause" || fault == "client-crash" {
            Reach::Client
        } else if fault.starts_with("link-") {
            Reach::Link
        } else {
            Reach::Unknown
        }
    }

    /// Whether the fault acts on clients or their links alone, leaving the servers as they
    /// were: it brings no leader election, whatever it does to a holder.
    pub(crate) fn spares_servers(self) -> bool {
        matches!(self, Reach::Client | Reach::Link)
    }
}

/// Pairs each nemesis `start` with the next `stop` of the same fault.
pub(crate) fn fault_windows(history: &[Op]) -> Vec<Window> {
    let mut windows: Vec<Window> = Vec::new();
    for op in history.iter().filter(|op| op.process.is_nemesis()) {
        let fault = op.fault.clone().unwrap_or_else(|| op.f.clone());
        match op.f.as_str() {
            "start" => windows.push(Window {
                fault,
                nodes: op.node.clone().unwrap_or_default(),
                start: op.time,
                stop: u64::MAX,
                stopped: false,
                ended: None,
            }),
            "stop" => {
                if let Some(w) = windows.iter_mut().find(|w| !w.stopped && w.fault == fault) {
                    w.stop = op.time;
                    w.stopped = true;
                    w.ended = op
                        .measured
                        .as_ref()
                        .and_then(|m| m["ended_ms"].as_f64())
                        .map(|ended| ((ended * 1e6) as u64).clamp(w.start, op.time));
                }
            }
            _ => {}
        }
    }
    windows
}
