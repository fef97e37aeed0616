//! The history model: Jepsen's operations, one JSON object per line.
//!
//! Every client operation is an `invoke` followed by exactly one completion from the same
//! process: `ok` (it happened), `fail` (it certainly did not happen) or `info` (unknown; it may
//! take effect at any time after its invoke). Nemesis actions are `info` ops of process
//! `"nemesis"`, with `f` `start` or `stop`, the `fault` and its target `node`s.

use std::io::BufRead;

use serde::{Deserialize, Serialize};

/// Who performed an operation: a client process (a number) or the nemesis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Process {
    Client(u64),
    Nemesis(NemesisTag),
}

/// The one string a process may be besides a number: `"nemesis"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NemesisTag {
    Nemesis,
}

impl Process {
    pub const NEMESIS: Process = Process::Nemesis(NemesisTag::Nemesis);

    pub fn is_nemesis(self) -> bool {
        matches!(self, Process::Nemesis(_))
    }
}

impl std::fmt::Display for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Process::Client(p) => write!(f, "{p}"),
            Process::Nemesis(_) => f.write_str("nemesis"),
        }
    }
}

/// Jepsen's op types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpType {
    Invoke,
    Ok,
    Fail,
    Info,
}

/// One line of `history.jsonl`.
///
/// `time` is nanoseconds since the test started, from one monotonic clock in the harness.
/// Fields that an operation does not use are left out of the JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Op {
    pub index: u64,
    pub time: u64,
    pub process: Process,
    #[serde(rename = "type")]
    pub kind: OpType,
    pub f: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// The lock token of an acquire or release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The fencing token: issued with a grant (`acquire` ok) by a fencing lock, and carried
    /// by every storage access the holder makes under that grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<u64>,
    /// The lease an acquire asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// How long after the acquire's invoke the client may consider itself the holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity_ms: Option<u64>,
    /// The nodes an op touched: a Redlock grant's majority, or a fault's targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Vec<String>>,
    /// The fault a nemesis op starts or stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the harness observed of a fault it started (the clock skew it achieved, say), as
    /// opposed to what it asked for, which is in `value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<serde_json::Value>,
    /// On an `acquire` `ok`: the client library renews this lease by itself in the background
    /// (a watchdog thread), and whether it records those renewals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renewal: Option<Renewal>,
}

/// How a client library that renews its own lease in the background tells of its renewals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Renewal {
    /// Every renewal is recorded as a `renew` op of the holder's process (invoke with
    /// `ttl_ms`, then `ok`, `fail` or `info`), as the built-in watchdog's are.
    Reported,
    /// The library renews but records nothing: the history shows only the lease promised at
    /// the grant, while the key may be kept alive until the holder releases it.
    Silent,
}

impl Op {
    /// A bare op; the builder methods below fill in the op-specific fields.
    pub fn new(process: Process, kind: OpType, f: impl Into<String>) -> Op {
        Op {
            index: 0,
            time: 0,
            process,
            kind,
            f: f.into(),
            key: None,
            value: None,
            token: None,
            fence: None,
            ttl_ms: None,
            validity_ms: None,
            node: None,
            fault: None,
            error: None,
            measured: None,
            renewal: None,
        }
    }

    pub fn key(mut self, key: impl Into<String>) -> Op {
        self.key = Some(key.into());
        self
    }

    pub fn token(mut self, token: impl Into<String>) -> Op {
        self.token = Some(token.into());
        self
    }

    pub fn fence(mut self, fence: Option<u64>) -> Op {
        self.fence = fence;
        self
    }

    pub fn value(mut self, value: impl Into<serde_json::Value>) -> Op {
        self.value = Some(value.into());
        self
    }

    pub fn nodes(mut self, nodes: Vec<String>) -> Op {
        self.node = Some(nodes);
        self
    }

    pub fn error(mut self, error: impl Into<String>) -> Op {
        self.error = Some(error.into());
        self
    }

    pub fn renewal(mut self, renewal: Renewal) -> Op {
        self.renewal = Some(renewal);
        self
    }

    pub fn at(mut self, index: u64, time_ns: u64) -> Op {
        self.index = index;
        self.time = time_ns;
        self
    }
}

/// A history line that is not a valid op.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("line {line}, column {column}: {message}")]
    Parse {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("reading the history: {0}")]
    Io(#[from] std::io::Error),
}

/// A history read from JSON lines.
#[derive(Debug, Default)]
pub struct ReadHistory {
    pub ops: Vec<Op>,
    /// The last line was cut short (the writer was killed mid-line) and was left out.
    pub truncated_tail: bool,
}

/// Reads `history.jsonl`: one op per line, blank lines ignored.
///
/// A last line without its newline that does not parse is what a killed writer leaves; it is
/// dropped and flagged in [`ReadHistory::truncated_tail`]. Any other bad line is an error
/// naming its line and column.
pub fn read_history(reader: impl BufRead) -> Result<ReadHistory, HistoryError> {
    let mut history = ReadHistory::default();
    let mut lines = reader.split(b'\n').enumerate().peekable();
    while let Some((number, line)) = lines.next() {
        let bytes = line?;
        let text = String::from_utf8_lossy(&bytes);
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Op>(&text) {
            Ok(op) => history.ops.push(op),
            Err(_) if lines.peek().is_none() && !text.ends_with('}') => {
                history.truncated_tail = true;
            }
            Err(e) => {
                return Err(HistoryError::Parse {
                    line: number + 1,
                    column: e.column(),
                    message: e.to_string(),
                })
            }
        }
    }
    Ok(history)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_client_and_nemesis_ops() {
        let ops = vec![
            Op::new(Process::Client(3), OpType::Invoke, "acquire")
                .key("lock")
                .at(0, 10),
            Op::new(Process::NEMESIS, OpType::Info, "start")
                .nodes(vec!["n1".into()])
                .at(1, 20),
        ];
        let text: String = ops
            .iter()
            .map(|op| serde_json::to_string(op).unwrap() + "\n")
            .collect();
        assert!(text.contains("\"process\":\"nemesis\""));
        assert!(text.contains("\"process\":3"));
        assert!(!text.contains("token"), "unused fields are left out");
        let read = read_history(text.as_bytes()).unwrap();
        assert_eq!(read.ops, ops);
        assert!(!read.truncated_tail);
    }

    #[test]
    fn a_renewal_is_written_in_lowercase_and_left_out_when_absent() {
        let silent = Op::new(Process::Client(1), OpType::Ok, "acquire").renewal(Renewal::Silent);
        let text = serde_json::to_string(&silent).unwrap();
        assert!(text.contains("\"renewal\":\"silent\""), "{text}");
        assert_eq!(serde_json::from_str::<Op>(&text).unwrap(), silent);
        let reported: Op = serde_json::from_str(
            "{\"index\":0,\"time\":0,\"process\":1,\"type\":\"ok\",\"f\":\"acquire\",\"renewal\":\"reported\"}",
        )
        .unwrap();
        assert_eq!(reported.renewal, Some(Renewal::Reported));
        let bare = Op::new(Process::Client(1), OpType::Ok, "acquire");
        assert!(!serde_json::to_string(&bare).unwrap().contains("renewal"));
    }

    #[test]
    fn a_bad_line_is_named_with_its_position() {
        let text = "{\"index\":0,\"time\":0,\"process\":1,\"type\":\"invoke\",\"f\":\"acquire\"}\nnot json\n{}\n";
        match read_history(text.as_bytes()) {
            Err(HistoryError::Parse { line, column, .. }) => {
                assert_eq!(line, 2);
                assert!(column > 0);
            }
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn a_cut_off_last_line_is_dropped_and_flagged() {
        let text = "{\"index\":0,\"time\":0,\"process\":1,\"type\":\"invoke\",\"f\":\"acquire\"}\n{\"index\":1,\"ti";
        let read = read_history(text.as_bytes()).unwrap();
        assert_eq!(read.ops.len(), 1);
        assert!(read.truncated_tail);
    }

    #[test]
    fn an_unknown_op_type_is_an_error() {
        let text = "{\"index\":0,\"time\":0,\"process\":1,\"type\":\"maybe\",\"f\":\"acquire\"}\n";
        assert!(read_history(text.as_bytes()).is_err());
    }
}
