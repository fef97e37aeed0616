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
    /// On an `acquire` `ok`: the lock lives in the holder's transaction on the storage
    /// (PostgreSQL's `pg_advisory_xact_lock`), so the holder's write, which commits that
    /// transaction, releases it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ends_with_write: bool,
    /// On an `acquire` `info`: the client died (the `client-crash` fault) just after the
    /// servers granted it the lock, so the grant is certain, from this completion on, and
    /// its process never acts again. Its `renewal` is the grant's: a lock that lives with
    /// the connection ended with it, at this completion.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub died_holding: bool,
}

/// How a grant's lock is kept alive beyond the lease it promised, where something other than
/// the recorded `renew`s keeps it: a library renewing in the background, or a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Renewal {
    /// Every renewal is recorded as a `renew` op of the holder's process (invoke with
    /// `ttl_ms`, then `ok`, `fail` or `info`), as the built-in watchdog's are.
    Reported,
    /// The library renews but records nothing: the history shows only the lease promised at
    /// the grant, while the key may be kept alive until the holder releases it.
    Silent,
    /// The lock lives as long as the holder's connection (PostgreSQL's and MariaDB's session
    /// locks), and ends the moment a fault resets it. PostgreSQL keeps it while the holder's
    /// kernel answers its keepalives, a frozen process's too; MariaDB while the holder's own
    /// pings come within its `wait_timeout`. The holder's recorded `renew`s extend its lease
    /// as a watchdog's do, and the key may be kept until the holder releases it.
    Connection,
    /// The key has no expiry at all (redis-py's `Lock` with its default `timeout=None`): it
    /// needs no renewal and stays until a release takes it away. The lease the grant promised
    /// stands for the holder's hold; the key may live until a release of it comes back `ok`
    /// or `fail`, and for good where none does.
    Unexpiring,
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
            ends_with_write: false,
            died_holding: false,
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

    pub fn ends_with_write(mut self, ends: bool) -> Op {
        self.ends_with_write = ends;
        self
    }

    pub fn died_holding(mut self, died: bool) -> Op {
        self.died_holding = died;
        self
    }

    pub fn at(mut self, index: u64, time_ns: u64) -> Op {
        self.index = index;
        self.time = time_ns;
        self
    }
}

/// Input that is not a history: a line that is not an op, or that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// A line (or, in EDN, a value) that is not an op; `line` and `column` are 1-based, the
    /// column counted in characters.
    #[error("line {line}, column {column}: {message}")]
    Parse {
        line: usize,
        column: usize,
        message: String,
    },
    /// A line that is not UTF-8 text: the input is a binary file, not a history.
    #[error("line {line} is not UTF-8 text")]
    NotUtf8 { line: usize },
    /// Its message says the error, which is therefore not also its `source` (a chain printed
    /// whole would say it twice).
    #[error("reading the history: {0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for HistoryError {
    fn from(error: std::io::Error) -> HistoryError {
        HistoryError::Io(error)
    }
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
/// Every other line must be an op, or the input is not a history: a line that is not JSON, not
/// an op, or not UTF-8 text is an error naming its line (and, for JSON, its column, counted in
/// characters). The one exception is what a writer killed mid-line leaves: a last line with no
/// newline after it that starts with `{` and ends before its op does is dropped and flagged in
/// [`ReadHistory::truncated_tail`]. An empty input is an empty history, not an error; the
/// checkers' [`crate::stats`] makes its verdict unknown.
pub fn read_history(reader: impl BufRead) -> Result<ReadHistory, HistoryError> {
    let mut ops = HistoryReader::new(reader);
    let mut history = ReadHistory::default();
    for op in &mut ops {
        history.ops.push(op?);
    }
    history.truncated_tail = ops.truncated_tail();
    Ok(history)
}

/// The ops of `history.jsonl` one at a time, as [`read_history`] reads them, holding one line
/// in memory: for checking a history longer than memory would hold as ops. It ends at the
/// first error.
pub struct HistoryReader<R> {
    reader: R,
    /// The line read last, 1-based.
    line: usize,
    bytes: Vec<u8>,
    truncated_tail: bool,
    done: bool,
    /// Client ops come with only what a [`crate::stream::Outline`] reads of them.
    skim: bool,
}

impl<R: BufRead> HistoryReader<R> {
    pub fn new(reader: R) -> HistoryReader<R> {
        HistoryReader {
            reader,
            line: 0,
            bytes: Vec::new(),
            truncated_tail: false,
            done: false,
            skim: false,
        }
    }

    /// A reader for a history's [`crate::stream::Outline`]: its client ops come with only the
    /// fields the outline reads (`f`, `time`, `process`, `type`, `ttl_ms`, `renewal`), the
    /// others skipped unread. A line that is not an op is an error all the same.
    pub fn for_outline(reader: R) -> HistoryReader<R> {
        HistoryReader {
            skim: true,
            ..HistoryReader::new(reader)
        }
    }

    /// Whether the last line was cut short and left out (see [`read_history`]); known once
    /// the reader has ended.
    pub fn truncated_tail(&self) -> bool {
        self.truncated_tail
    }

    /// The next op, `None` at the end of the input (or of a cut-short last line).
    fn next_op(&mut self) -> Result<Option<Op>, HistoryError> {
        let mut op = Op::new(Process::Client(0), OpType::Invoke, String::new());
        Ok(self.next_into(&mut op)?.then_some(op))
    }

    /// Reads the next op into `op`, reusing the strings it holds: `false` at the end of the
    /// input (or of a cut-short last line). For reading a long history without allocating an
    /// op per line.
    pub fn next_into(&mut self, op: &mut Op) -> Result<bool, HistoryError> {
        loop {
            self.bytes.clear();
            if self.reader.read_until(b'\n', &mut self.bytes)? == 0 {
                return Ok(false);
            }
            self.line += 1;
            let bytes = &self.bytes;
            // What a writer killed mid-line leaves: an op cut short, with no newline after it.
            let cut_short =
                bytes.last() != Some(&b'\n') && bytes.trim_ascii_start().starts_with(b"{");
            let text = match std::str::from_utf8(bytes) {
                Ok(text) => text,
                // The cut fell inside a character.
                Err(e) if cut_short && e.error_len().is_none() => {
                    self.truncated_tail = true;
                    return Ok(false);
                }
                Err(_) => return Err(HistoryError::NotUtf8 { line: self.line }),
            };
            if text.trim().is_empty() {
                continue;
            }
            if crate::op_line::read_into(text, self.skim, op) {
                return Ok(true);
            }
            return match serde_json::from_str::<Op>(text) {
                Ok(read) => {
                    *op = read;
                    Ok(true)
                }
                Err(e) if cut_short && e.is_eof() => {
                    self.truncated_tail = true;
                    Ok(false)
                }
                Err(e) => {
                    // serde_json ends its message with its position, which ours replaces.
                    let position = format!(" at line {} column {}", e.line(), e.column());
                    let message = e.to_string();
                    let message = message.strip_suffix(&position).unwrap_or(&message);
                    let before = &bytes[..e.column().saturating_sub(1).min(bytes.len())];
                    // serde's words are about its grammar ("expected ident"); say first what
                    // the line is not.
                    let message = match e.classify() {
                        serde_json::error::Category::Syntax => format!(
                            "not JSON ({message}); a history.jsonl holds one JSON op a line, \
                             such as {{\"index\":0,\"time\":0,\"process\":0,\"type\":\
                             \"invoke\",\"f\":\"acquire\"}}"
                        ),
                        serde_json::error::Category::Data => format!("not an op ({message})"),
                        _ => message.to_string(),
                    };
                    Err(HistoryError::Parse {
                        line: self.line,
                        column: 1 + String::from_utf8_lossy(before).chars().count(),
                        message,
                    })
                }
            };
        }
    }
}

impl<R: BufRead> Iterator for HistoryReader<R> {
    type Item = Result<Op, HistoryError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_op().transpose();
        self.done = !matches!(next, Some(Ok(_)));
        next
    }
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

    const ACQUIRE: &str = r#"{"index":0,"time":0,"process":1,"type":"invoke","f":"acquire"}"#;

    fn parse_error(text: &[u8]) -> (usize, usize, String) {
        match read_history(text) {
            Err(HistoryError::Parse {
                line,
                column,
                message,
            }) => (line, column, message),
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn a_bad_line_is_named_with_its_position() {
        let text = format!("{ACQUIRE}\nnot json\n{{}}\n");
        let (line, column, message) = parse_error(text.as_bytes());
        assert_eq!((line, column), (2, 2), "where `null` stopped matching");
        assert!(
            message.starts_with("not JSON (expected ident); a history.jsonl holds one JSON op"),
            "the position is not repeated: {message}"
        );
        let error = read_history(text.as_bytes()).unwrap_err().to_string();
        assert!(
            error.starts_with("line 2, column 2: not JSON (expected ident)"),
            "{error}"
        );
    }

    #[test]
    fn text_that_is_not_a_history_is_an_error_not_an_empty_history() {
        assert_eq!(parse_error(b"hello world\n").0, 1);
        assert_eq!(parse_error(b"hello world\n").1, 1);
        assert_eq!(
            parse_error(b"hello world").0,
            1,
            "no newline: still not an op"
        );
        let junk_tail = format!("{ACQUIRE}\n\nfoo");
        assert_eq!(parse_error(junk_tail.as_bytes()).0, 3);
        let (line, column, message) = parse_error(b"{}\n");
        assert_eq!((line, column), (1, 2));
        assert!(message.starts_with("not an op (missing field"), "{message}");
    }

    #[test]
    fn a_binary_file_is_not_utf8_text() {
        let text = [ACQUIRE.as_bytes(), b"\n\x7fELF\x02\x01\xff\xfe\n"].concat();
        let error = read_history(text.as_slice()).unwrap_err();
        assert!(
            matches!(error, HistoryError::NotUtf8 { line: 2 }),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "line 2 is not UTF-8 text");
    }

    #[test]
    fn an_empty_input_is_an_empty_history() {
        for text in ["", "\n\n", "  \r\n"] {
            let read = read_history(text.as_bytes()).unwrap();
            assert!(read.ops.is_empty() && !read.truncated_tail, "{text:?}");
        }
    }

    #[test]
    fn columns_count_characters() {
        let (_, column, _) = parse_error("{\"f\":\"é\" x}\n".as_bytes());
        assert_eq!(column, 10);
    }

    #[test]
    fn a_cut_off_last_line_is_dropped_and_flagged() {
        for tail in [
            r#"{"index":1,"ti"#,
            r#"{"index":1,"time":1"#,
            "  {",
            r#"{"f":"é"#,
        ] {
            let text = format!("{ACQUIRE}\n{tail}");
            let read = read_history(text.as_bytes()).unwrap();
            assert_eq!(read.ops.len(), 1, "{tail:?}");
            assert!(read.truncated_tail, "{tail:?}");
        }
        let cut_inside_a_character = [ACQUIRE.as_bytes(), b"\n{\"f\":\"\xc3"].concat();
        let read = read_history(cut_inside_a_character.as_slice()).unwrap();
        assert!(read.truncated_tail && read.ops.len() == 1);
    }

    #[test]
    fn only_the_unfinished_last_line_may_be_cut_short() {
        let with_newline = format!("{ACQUIRE}\n{{\"index\":1,\"ti\n");
        assert_eq!(parse_error(with_newline.as_bytes()).0, 2);
        let in_the_middle = format!("{{\"index\":1,\"ti\n{ACQUIRE}");
        assert_eq!(parse_error(in_the_middle.as_bytes()).0, 1);
        let complete_but_not_an_op = format!("{ACQUIRE}\n{{\"index\":1}}");
        assert_eq!(parse_error(complete_but_not_an_op.as_bytes()).0, 2);
        let last_without_newline = format!("{ACQUIRE}\n{ACQUIRE}");
        let read = read_history(last_without_newline.as_bytes()).unwrap();
        assert_eq!((read.ops.len(), read.truncated_tail), (2, false));
    }

    #[test]
    fn the_reader_yields_ops_one_at_a_time_and_stops_at_the_first_error() {
        let text = format!("{ACQUIRE}\n\n{ACQUIRE}\nnot json\n{ACQUIRE}\n");
        let mut reader = HistoryReader::new(text.as_bytes());
        assert!(matches!(reader.next(), Some(Ok(_))));
        assert!(
            matches!(reader.next(), Some(Ok(_))),
            "a blank line is skipped"
        );
        assert!(matches!(
            reader.next(),
            Some(Err(HistoryError::Parse { line: 4, .. }))
        ));
        assert!(reader.next().is_none(), "nothing after an error");
        let cut = format!("{ACQUIRE}\n{{\"index\":1,\"ti");
        let mut reader = HistoryReader::new(cut.as_bytes());
        assert_eq!(reader.by_ref().count(), 1);
        assert!(reader.truncated_tail());
    }

    #[test]
    fn an_unknown_op_type_is_an_error() {
        let text = "{\"index\":0,\"time\":0,\"process\":1,\"type\":\"maybe\",\"f\":\"acquire\"}\n";
        assert!(read_history(text.as_bytes()).is_err());
    }
}
