//! A fast path for reading one line of `history.jsonl`.
//!
//! serde_json spends about 400 ns on a line splitbrain writes, most of it matching field names
//! and moving the op about, so reading a history twice (its outline, then its events) would
//! cost more than every checker together. Lines as splitbrain writes them have one plain
//! shape: compact, the known fields once each, unsigned integers, strings without escapes. This
//! reads that shape only, and gives up on anything else, which serde_json then reads,
//! or rejects with its own error. So the fast path never decides what a history means: a line
//! it takes is one serde_json reads the same way (a property test holds it to that).

use serde_json::Value;

use crate::{Op, OpType, Process, Renewal};

/// The number of each field of [`Op`], by its name in JSON: the bit it sets in the mask of
/// the fields seen, and what [`Cursor::field`] reads.
fn field_number(name: &str) -> Option<usize> {
    Some(match name {
        "index" => 0,
        "time" => 1,
        "process" => 2,
        "type" => 3,
        "f" => 4,
        "key" => 5,
        "value" => 6,
        "token" => 7,
        "fence" => 8,
        "ttl_ms" => 9,
        "validity_ms" => 10,
        "node" => 11,
        "fault" => 12,
        "error" => 13,
        "measured" => 14,
        "renewal" => 15,
        "ends_with_write" => 16,
        "died_holding" => 17,
        _ => return None,
    })
}

/// The fields an op must have: `index`, `time`, `process`, `type` and `f`.
const REQUIRED: u32 = 0b11111;

/// Reads `line` into `op`, reusing its strings, if it has the plain shape; `false` (with `op`
/// left in any state) to leave it to serde_json. With `skim`, a client op comes back with
/// only what a history's outline reads of it: `f`, `time`, `process`, `type`, `ttl_ms` and
/// `renewal`; its other fields are skipped, their values unread (the pass through the
/// checkers reads them). A nemesis op is read whole.
pub(crate) fn read_into(line: &str, skim: bool, op: &mut Op) -> bool {
    match read_fields(line, skim, op) {
        Some(()) if skim && op.process.is_nemesis() => read_into(line, false, op),
        Some(()) => true,
        None => false,
    }
}

fn read_fields(line: &str, skim: bool, op: &mut Op) -> Option<()> {
    let mut cursor = Cursor {
        text: line,
        bytes: line.as_bytes(),
        skim,
        at: 0,
    };
    let mut seen = 0u32;
    cursor.eat(b'{')?;
    if !cursor.eat_if(b'}') {
        // serde writes the fields in order, so the next name is most often the next field's:
        // it is looked for first, before reading the name as a string.
        let mut next = 0;
        loop {
            let field = match cursor.expected_name(next) {
                Some(field) => field,
                None => field_number(cursor.plain_string()?)?,
            };
            next = field + 1;
            if seen & (1 << field) != 0 {
                return None;
            }
            seen |= 1 << field;
            cursor.eat(b':')?;
            cursor.field(field, op)?;
            if !cursor.eat_if(b',') {
                break;
            }
        }
        cursor.eat(b'}')?;
    }
    let rest = &cursor.bytes[cursor.at..];
    let only_whitespace = rest
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    if !only_whitespace || seen & REQUIRED != REQUIRED {
        return None;
    }
    // What the line left out (or a skim skipped) is absent, whatever the op held before.
    let absent =
        |field: usize| seen & (1 << field) == 0 || (skim && matches!(field, 5..=7 | 11..=14));
    if absent(5) {
        op.key = None;
    }
    if absent(6) {
        op.value = None;
    }
    if absent(7) {
        op.token = None;
    }
    if absent(8) {
        op.fence = None;
    }
    if absent(9) {
        op.ttl_ms = None;
    }
    if absent(10) {
        op.validity_ms = None;
    }
    if absent(11) {
        op.node = None;
    }
    if absent(12) {
        op.fault = None;
    }
    if absent(13) {
        op.error = None;
    }
    if absent(14) {
        op.measured = None;
    }
    if absent(15) {
        op.renewal = None;
    }
    if absent(16) {
        op.ends_with_write = false;
    }
    if absent(17) {
        op.died_holding = false;
    }
    Some(())
}

struct Cursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    /// Skip the fields [`skim`] leaves out.
    skim: bool,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.eat_if(byte).then_some(())
    }

    fn eat_if(&mut self, byte: u8) -> bool {
        let matched = self.peek() == Some(byte);
        self.at += usize::from(matched);
        matched
    }

    /// Reads field number `field` (see [`field_number`]) into `op`.
    fn field(&mut self, field: usize, op: &mut Op) -> Option<()> {
        if self.skim && matches!(field, 5..=7 | 11..=14) {
            return self.skip_value();
        }
        match field {
            0 => op.index = self.unsigned()?,
            1 => op.time = self.unsigned()?,
            2 => {
                op.process = if self.peek() == Some(b'"') {
                    (self.plain_string()? == "nemesis").then_some(Process::NEMESIS)?
                } else {
                    Process::Client(self.unsigned()?)
                }
            }
            3 => {
                op.kind = match self.plain_string()? {
                    "invoke" => OpType::Invoke,
                    "ok" => OpType::Ok,
                    "fail" => OpType::Fail,
                    "info" => OpType::Info,
                    _ => return None,
                }
            }
            4 => {
                op.f.clear();
                op.f.push_str(self.plain_string()?);
            }
            5 => self.text_into(&mut op.key)?,
            6 => op.value = self.or_null(Self::any_value)?,
            7 => self.text_into(&mut op.token)?,
            8 => op.fence = self.or_null(Self::unsigned)?,
            9 => op.ttl_ms = self.or_null(Self::unsigned)?,
            10 => op.validity_ms = self.or_null(Self::unsigned)?,
            11 => op.node = self.or_null(Self::strings)?,
            12 => self.text_into(&mut op.fault)?,
            13 => self.text_into(&mut op.error)?,
            14 => op.measured = self.or_null(Self::any_value)?,
            15 => {
                op.renewal = self.or_null(|cursor| match cursor.plain_string()? {
                    "reported" => Some(Renewal::Reported),
                    "silent" => Some(Renewal::Silent),
                    "connection" => Some(Renewal::Connection),
                    "unexpiring" => Some(Renewal::Unexpiring),
                    _ => None,
                })?
            }
            16 => op.ends_with_write = self.boolean()?,
            _ => op.died_holding = self.boolean()?,
        }
        Some(())
    }

    /// The number of the field whose quoted name comes next, if it is one of the fields from
    /// number `from` on that are usually there.
    fn expected_name(&mut self, from: usize) -> Option<usize> {
        const QUOTED: [&[u8]; 18] = [
            b"\"index\"",
            b"\"time\"",
            b"\"process\"",
            b"\"type\"",
            b"\"f\"",
            b"\"key\"",
            b"\"value\"",
            b"\"token\"",
            b"\"fence\"",
            b"\"ttl_ms\"",
            b"\"validity_ms\"",
            b"\"node\"",
            b"\"fault\"",
            b"\"error\"",
            b"\"measured\"",
            b"\"renewal\"",
            b"\"ends_with_write\"",
            b"\"died_holding\"",
        ];
        let rest = &self.bytes[self.at..];
        let field = (from..QUOTED.len()).find(|&field| rest.starts_with(QUOTED[field]))?;
        self.at += QUOTED[field].len();
        Some(field)
    }

    fn boolean(&mut self) -> Option<bool> {
        if self.literal(b"true") {
            Some(true)
        } else if self.literal(b"false") {
            Some(false)
        } else {
            None
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let matched = self.bytes[self.at..].starts_with(word);
        if matched {
            self.at += word.len();
        }
        matched
    }

    /// `null` as `Some(None)`, or what `read` reads as `Some(Some(_))`.
    fn or_null<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.literal(b"null") {
            Some(None)
        } else {
            read(self).map(Some)
        }
    }

    /// Digits with no sign, fraction or exponent, no leading zero, that fit a `u64`.
    fn unsigned(&mut self) -> Option<u64> {
        let start = self.at;
        let mut value: u64 = 0;
        while let Some(digit @ b'0'..=b'9') = self.peek() {
            value = value
                .checked_mul(10)?
                .checked_add(u64::from(digit - b'0'))?;
            self.at += 1;
        }
        let digits = self.at - start;
        let leading_zero = digits > 1 && self.bytes[start] == b'0';
        let goes_on = matches!(self.peek(), Some(b'.' | b'e' | b'E'));
        (digits > 0 && !leading_zero && !goes_on).then_some(value)
    }

    /// A string with no escape and no control character in it.
    fn plain_string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let length = self.bytes[start..]
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        self.at = start + length;
        self.eat(b'"')?;
        // Both ends are ASCII quotes, so the slice falls on character boundaries.
        self.text.get(start..start + length)
    }

    /// A string or `null` into `text`, reusing the string it holds.
    fn text_into(&mut self, text: &mut Option<String>) -> Option<()> {
        if self.literal(b"null") {
            *text = None;
            return Some(());
        }
        let read = self.plain_string()?;
        match text {
            Some(held) => {
                held.clear();
                held.push_str(read);
            }
            None => *text = Some(read.to_string()),
        }
        Some(())
    }

    fn owned_string(&mut self) -> Option<String> {
        self.plain_string().map(str::to_string)
    }

    fn strings(&mut self) -> Option<Vec<String>> {
        self.eat(b'[')?;
        let mut strings = Vec::new();
        if self.eat_if(b']') {
            return Some(strings);
        }
        loop {
            strings.push(self.owned_string()?);
            if !self.eat_if(b',') {
                break;
            }
        }
        self.eat(b']')?;
        Some(strings)
    }

    /// Any JSON value: its extent found here, its meaning read by serde_json (but for a plain
    /// unsigned integer, the common `value` of an add).
    fn any_value(&mut self) -> Option<Value> {
        let start = self.at;
        if let Some(number) = self.unsigned() {
            if matches!(self.peek(), Some(b',' | b'}')) {
                return Some(Value::from(number));
            }
        }
        self.at = start;
        self.skip_value()?;
        serde_json::from_slice(&self.bytes[start..self.at]).ok()
    }

    /// Moves past one JSON value without reading it; serde_json checks it after.
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    loop {
                        match self.peek()? {
                            b'\\' => self.at += 2,
                            b'"' => break,
                            _ => self.at += 1,
                        }
                    }
                    self.at += 1;
                }
                b'[' | b'{' => {
                    depth += 1;
                    self.at += 1;
                }
                b']' | b'}' if depth > 0 => {
                    depth -= 1;
                    self.at += 1;
                }
                b',' | b']' | b'}' if depth == 0 => return Some(()),
                _ => self.at += 1,
            }
            if depth == 0 && matches!(self.peek(), Some(b',' | b'}')) {
                return Some(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn serde(line: &str) -> Option<Op> {
        serde_json::from_str(line).ok()
    }

    /// `line` as an op, if it has the plain shape.
    fn parse(line: &str) -> Option<Op> {
        let mut op = Op::new(Process::Client(0), OpType::Invoke, String::new());
        read_into(line, false, &mut op).then_some(op)
    }

    #[test]
    fn reads_what_splitbrain_writes() {
        let ops = [
            Op::new(Process::Client(3), OpType::Ok, "acquire")
                .key("lock")
                .token("t-1")
                .fence(Some(17))
                .nodes(vec!["n1".into(), "n2".into()])
                .renewal(Renewal::Silent)
                .at(12, 3_000_000_000),
            Op::new(Process::NEMESIS, OpType::Info, "start")
                .nodes(vec![])
                .value(serde_json::json!({"ms": [1, 2.5, "x"], "up": null}))
                .at(0, 0),
            Op::new(Process::Client(0), OpType::Ok, "read")
                .key("doc")
                .value(serde_json::json!([1, 2, 3]))
                .ends_with_write(true)
                .at(1, 1),
            Op::new(Process::Client(4), OpType::Info, "acquire")
                .key("lock")
                .error("crashed: the client died holding the lock")
                .died_holding(true)
                .at(2, 2),
        ];
        for op in ops {
            let line = serde_json::to_string(&op).unwrap() + "\n";
            assert_eq!(parse(&line), Some(op), "{line}");
        }
    }

    #[test]
    fn a_skim_keeps_what_the_outline_reads_and_all_of_a_nemesis_op() {
        let client = Op::new(Process::Client(3), OpType::Ok, "acquire")
            .key("lock")
            .token("t-1")
            .value(7)
            .renewal(Renewal::Silent)
            .at(12, 3_000);
        let line = serde_json::to_string(&client).unwrap();
        let mut skimmed = Op::new(Process::Client(9), OpType::Fail, "old").key("old");
        assert!(read_into(&line, true, &mut skimmed));
        assert_eq!(
            (skimmed.f.as_str(), skimmed.time, skimmed.renewal),
            ("acquire", 3_000, Some(Renewal::Silent))
        );
        assert_eq!(
            (&skimmed.key, &skimmed.token, &skimmed.value),
            (&None, &None, &None)
        );
        let nemesis = Op::new(Process::NEMESIS, OpType::Info, "start")
            .nodes(vec!["n1".into()])
            .at(1, 1);
        let line = serde_json::to_string(&nemesis).unwrap();
        assert!(read_into(&line, true, &mut skimmed));
        assert_eq!(skimmed, nemesis);
    }

    #[test]
    fn leaves_anything_else_to_serde() {
        for line in [
            r#" {"index":0,"time":0,"process":0,"type":"ok","f":"a"}"#,
            r#"{"index":0,"time":0,"process":0,"type":"ok","f":"a\"b"}"#,
            r#"{"index":0,"time":0,"process":0,"type":"ok","f":"a","extra":1}"#,
            r#"{"index":0,"time":0,"process":0,"type":"ok","f":"a","f":"b"}"#,
            r#"{"index":01,"time":0,"process":0,"type":"ok","f":"a"}"#,
            r#"{"index":1.0,"time":0,"process":0,"type":"ok","f":"a"}"#,
            r#"{"index":0,"time":0,"process":-1,"type":"ok","f":"a"}"#,
            r#"{"index":0,"time":0,"process":"client","type":"ok","f":"a"}"#,
            r#"{"index":0,"time":0,"process":0,"type":"done","f":"a"}"#,
            r#"{"index":0,"time":0,"process":0,"type":"ok"}"#,
            r#"{"index":0,"time":0,"process":0,"type":"ok","f":"a"} x"#,
            r#"{"index":0,"time":0,"process":0,"type":"ok","f":"a","value":[1,}"#,
            r#"{"index":18446744073709551616,"time":0,"process":0,"type":"ok","f":"a"}"#,
        ] {
            assert_eq!(parse(line), None, "{line}");
        }
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9-]{0,8}",
            any::<String>(),
            Just("a\"b".to_string()),
            Just("back\\slash".to_string())
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        let kind = prop_oneof![
            Just(OpType::Invoke),
            Just(OpType::Ok),
            Just(OpType::Fail),
            Just(OpType::Info)
        ];
        let process = prop_oneof![
            any::<u64>().prop_map(Process::Client),
            Just(Process::NEMESIS)
        ];
        let value = prop_oneof![
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop::collection::vec(any::<i64>(), 0..5).prop_map(Value::from),
            text().prop_map(|t| serde_json::json!({ "k": t, "x": [1.5, null, true] })),
        ];
        let renewal = prop_oneof![
            Just(Renewal::Reported),
            Just(Renewal::Silent),
            Just(Renewal::Connection),
            Just(Renewal::Unexpiring)
        ];
        (
            (any::<u64>(), any::<u64>(), process, kind, text()),
            (
                prop::option::of(text()),
                prop::option::of(value.clone()),
                prop::option::of(text()),
                prop::option::of(any::<u64>()),
                prop::option::of(any::<u64>()),
            ),
            (
                prop::option::of(prop::collection::vec(text(), 0..3)),
                prop::option::of(text()),
                prop::option::of(value),
                prop::option::of(renewal),
                any::<bool>(),
                any::<bool>(),
            ),
        )
            .prop_map(
                |(
                    (index, time, process, kind, f),
                    (key, value, token, fence, ttl_ms),
                    (node, error, measured, renewal, ends_with_write, died_holding),
                )| {
                    let mut op = Op::new(process, kind, f).at(index, time);
                    (op.key, op.value, op.token, op.fence, op.ttl_ms) =
                        (key, value, token, fence, ttl_ms);
                    (op.node, op.error, op.measured, op.renewal) = (node, error, measured, renewal);
                    op.ends_with_write = ends_with_write;
                    op.died_holding = died_holding;
                    op
                },
            )
    }

    proptest! {
        /// Every line the fast path takes, serde_json reads the same; the ops splitbrain
        /// writes (plain strings) it takes.
        #[test]
        fn agrees_with_serde_on_every_line_it_takes(op in op()) {
            let line = serde_json::to_string(&op).unwrap();
            let fast = parse(&line);
            if fast.is_some() {
                prop_assert_eq!(&fast, &serde(&line));
            }
            let plain = |s: &Option<String>| s.as_deref().is_none_or(|s| !s.contains(['"', '\\']) && !s.chars().any(char::is_control));
            let plain = plain(&Some(op.f.clone())) && plain(&op.key) && plain(&op.token) && plain(&op.error)
                && op.node.iter().flatten().all(|n| plain(&Some(n.clone())));
            if plain {
                prop_assert_eq!(fast, Some(op));
            }
        }

        /// A line broken anywhere is either left to serde_json or read as serde_json reads it.
        #[test]
        fn never_takes_a_line_serde_reads_otherwise(op in op(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
            let mut bytes = serde_json::to_vec(&op).unwrap();
            let at = at.index(bytes.len());
            bytes[at] = byte;
            if let Ok(line) = std::str::from_utf8(&bytes) {
                if let Some(fast) = parse(line) {
                    prop_assert_eq!(Some(fast), serde(line));
                }
            }
        }
    }
}
