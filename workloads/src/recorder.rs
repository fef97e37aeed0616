use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use splitbrain_checker::{Op, OpType, Process};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Appends ops to `history.jsonl` as they happen, one JSON object per line, flushed at once, so
/// a run that crashes or is killed still leaves a readable history.
///
/// It gives each op its `index` and its `time` (nanoseconds since the recorder was made, from
/// one monotonic clock), under one lock so that index order is time order.
pub struct Recorder {
    start: Instant,
    inner: Mutex<Inner>,
    /// The newest grant recorded, for faults aimed at the holder.
    grants: watch::Sender<Option<SeenGrant>>,
    /// Cancelled when an op cannot be written: a run whose history is lost must stop.
    failed: CancellationToken,
}

/// A grant as the recorder saw it go by: who holds which key, granted by which nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenGrant {
    pub key: String,
    pub process: u64,
    /// The nodes that granted it; empty for a single-server client.
    pub nodes: Vec<String>,
}

struct Inner {
    out: BufWriter<File>,
    next_index: u64,
    first_error: Option<std::io::Error>,
    /// Faults started and not yet stopped, with their targets, for the progress display.
    active_faults: Vec<(String, Vec<String>)>,
}

impl Recorder {
    /// Creates (or truncates) the history file; time zero is now.
    pub fn create(path: &Path) -> std::io::Result<Recorder> {
        Ok(Recorder {
            start: Instant::now(),
            inner: Mutex::new(Inner {
                out: BufWriter::new(File::create(path)?),
                next_index: 0,
                first_error: None,
                active_faults: Vec::new(),
            }),
            grants: watch::Sender::new(None),
            failed: CancellationToken::new(),
        })
    }

    /// Records an op and returns it with its index and time filled in.
    pub fn record(&self, mut op: Op) -> Op {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        op.index = inner.next_index;
        op.time = self.start.elapsed().as_nanos() as u64;
        inner.next_index += 1;
        let mut line = serde_json::to_vec(&op).expect("an op always serialises");
        line.push(b'\n');
        let written = inner.out.write_all(&line).and_then(|()| inner.out.flush());
        if let Err(e) = written {
            inner.first_error.get_or_insert(e);
            self.failed.cancel();
        }
        if let (Process::Client(process), OpType::Ok, "acquire") = (op.process, op.kind, &*op.f) {
            self.grants.send_replace(Some(SeenGrant {
                key: op.key.clone().unwrap_or_default(),
                process,
                nodes: op.node.clone().unwrap_or_default(),
            }));
        }
        if let (true, Some(fault)) = (op.process.is_nemesis(), &op.fault) {
            inner.active_faults.retain(|(active, _)| active != fault);
            if op.f == "start" {
                let targets = op.node.clone().unwrap_or_default();
                inner.active_faults.push((fault.clone(), targets));
            }
        }
        op
    }

    /// The history's time 0.
    pub fn started(&self) -> Instant {
        self.start
    }

    /// Cancelled once an op could not be written (a full disk, say).
    pub fn failed(&self) -> CancellationToken {
        self.failed.clone()
    }

    /// Grants as they are recorded: the newest one, and a way to wait for the next.
    pub fn grants(&self) -> watch::Receiver<Option<SeenGrant>> {
        self.grants.subscribe()
    }

    /// The faults on right now, as `kill n1,n3`.
    pub fn active_faults(&self) -> Vec<String> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner
            .active_faults
            .iter()
            .map(|(fault, targets)| format!("{fault} {}", targets.join(",")).trim().to_string())
            .collect()
    }

    /// How many ops were recorded.
    pub fn len(&self) -> u64 {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .next_index
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first write error, if any op could not be written.
    pub fn take_error(&self) -> Option<std::io::Error> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .first_error
            .take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use splitbrain_checker::read_history;

    #[test]
    fn every_op_is_on_disk_as_soon_as_it_is_recorded() {
        let dir = std::env::temp_dir().join(format!("sb-recorder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("history.jsonl");
        let recorder = Recorder::create(&path).unwrap();
        recorder.record(Op::new(Process::Client(0), OpType::Invoke, "acquire"));
        let second = recorder.record(Op::new(Process::Client(0), OpType::Ok, "acquire"));
        assert_eq!(second.index, 1);
        // Read while the recorder is still open: nothing may sit in a buffer.
        let read = read_history(std::io::BufReader::new(File::open(&path).unwrap())).unwrap();
        assert_eq!(read.ops.len(), 2);
        assert!(read.ops[0].time <= read.ops[1].time);
        assert!(recorder.take_error().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_write_that_fails_says_so_at_once() {
        // Every write to /dev/full fails with "No space left on device".
        let recorder = Recorder::create(Path::new("/dev/full")).unwrap();
        let failed = recorder.failed();
        assert!(!failed.is_cancelled());
        recorder.record(Op::new(Process::Client(0), OpType::Invoke, "acquire"));
        assert!(failed.is_cancelled());
        let error = recorder.take_error().expect("the write error is kept");
        assert_eq!(error.kind(), std::io::ErrorKind::StorageFull);
    }
}
