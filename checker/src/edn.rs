//! Jepsen and knossos histories in EDN, read into [`Op`]s.
//!
//! The reader is small and our own (the EDN crates are thinly maintained). It takes the EDN that
//! Jepsen writes: nil, booleans, integers (an `N` suffix allowed), floats (an `M` suffix
//! allowed), ratios, strings with escapes, characters, keywords, symbols, lists, vectors, maps
//! (`#:ns{}` too), sets, `;` comments, commas as whitespace, `#_` discards, `##Inf`-style
//! symbolic values, and tagged values (`#inst "..."`, `#jepsen.history.Op{...}`), which read as
//! the value tagged. Values become JSON: keywords and symbols strings (without the colon),
//! lists, vectors and sets arrays, maps objects keyed by their keys' text, nil null.
//!
//! A history is either one vector (or list) of op maps, or op maps one after another. Each op
//! map needs `:type`, `:process` (an integer, or `:nemesis`) and `:f`; it may have `:value`,
//! `:time` (nanoseconds; 0 if absent), `:index` (its position if absent), `:error`, `:key` and
//! `:node` (a node's name, or a list of them). Other keys are ignored. Jepsen's `independent`
//! histories carry `[key value]` tuples as client ops' values: [`EdnOptions::independent`]
//! splits them into the op's key and value.
//!
//! Values are read as written; what they mean is the checkers' business. Jepsen's clients
//! often complete a timed-out op as `{:type :info, :value :timed-out}`: that value is no
//! result, and the linearizability checker keeps the invoke's value for an `info` operation,
//! as knossos does. In an `independent` history such an `info` (or `fail`) completion need
//! not be a tuple: it is read without a key, and its operation's key is its invoke's.
//!
//! Every error names its line and column: a syntax error where it is, a bad op where its map
//! begins.

use serde_json::{Map, Number, Value};

use crate::{HistoryError, Op, OpType, Process};

/// How to read a history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EdnOptions {
    /// Client ops' values are `[key value]` tuples (Jepsen's `independent` checker).
    pub independent: bool,
}

/// Collections nested deeper than this are refused, so that the reader's stack stays small.
const MAX_DEPTH: usize = 256;

/// Reads an EDN history.
pub fn read_edn_history(text: &str, options: EdnOptions) -> Result<Vec<Op>, HistoryError> {
    let error = |offset: usize, message: String| {
        let (line, column) = line_and_column(text, offset);
        HistoryError::Parse {
            line,
            column,
            message,
        }
    };
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        position: 0,
        depth: 0,
    };
    let maps = parser.top_level().map_err(|e| error(e.offset, e.message))?;
    maps.into_iter()
        .enumerate()
        .map(|(position, (offset, value))| {
            op_from(value, position, options).map_err(|message| error(offset, message))
        })
        .collect()
}

/// The 1-based line and column (in characters) of a byte offset.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let column = 1 + String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count();
    (line, column)
}

struct SyntaxError {
    offset: usize,
    message: String,
}

type Parsed<T> = Result<T, SyntaxError>;

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    position: usize,
    depth: usize,
}

/// Bytes that end a token (a number, symbol, keyword or character name).
fn is_delimiter(byte: u8) -> bool {
    byte.is_ascii_whitespace()
        || matches!(
            byte,
            b',' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'"' | b';'
        )
}

impl Parser<'_> {
    fn fail<T>(&self, offset: usize, message: impl Into<String>) -> Parsed<T> {
        Err(SyntaxError {
            offset,
            message: message.into(),
        })
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    /// The top-level op maps, each with the offset where it begins.
    fn top_level(&mut self) -> Parsed<Vec<(usize, Value)>> {
        let mut maps = Vec::new();
        self.skip_ignored()?;
        while let Some(byte) = self.peek() {
            let start = self.position;
            if let (b'[' | b'(', true) = (byte, maps.is_empty()) {
                let close = if byte == b'[' { b']' } else { b')' };
                self.position += 1;
                loop {
                    self.skip_ignored()?;
                    match self.peek() {
                        None => return self.fail(start, "a history that is never closed"),
                        Some(b) if b == close => break,
                        Some(_) => maps.push((self.position, self.value()?)),
                    }
                }
                self.position += 1;
            } else {
                maps.push((start, self.value()?));
            }
            self.skip_ignored()?;
        }
        Ok(maps)
    }

    /// Skips whitespace, commas, comments and `#_` discarded values.
    fn skip_ignored(&mut self) -> Parsed<()> {
        loop {
            match self.peek() {
                Some(b) if b.is_ascii_whitespace() || b == b',' => self.position += 1,
                Some(b';') => {
                    while self.peek().is_some_and(|b| b != b'\n') {
                        self.position += 1;
                    }
                }
                Some(b'#') if self.bytes.get(self.position + 1) == Some(&b'_') => {
                    self.position += 2;
                    self.skip_ignored()?;
                    if self.peek().is_none() {
                        return self.fail(self.position, "#_ with nothing to discard");
                    }
                    self.value()?;
                }
                _ => return Ok(()),
            }
        }
    }

    /// One value, starting at the current position (after [`Parser::skip_ignored`]).
    fn value(&mut self) -> Parsed<Value> {
        let start = self.position;
        let Some(byte) = self.peek() else {
            return self.fail(start, "a value was expected");
        };
        match byte {
            b'"' => self.string().map(Value::String),
            b':' => {
                self.position += 1;
                let name = self.token();
                if name.is_empty() {
                    return self.fail(start, "a keyword without a name");
                }
                Ok(Value::String(name.to_string()))
            }
            b'[' => self.collection(b']').map(Value::Array),
            b'(' => self.collection(b')').map(Value::Array),
            b'{' => self.map(),
            b'\\' => self.character().map(|c| Value::String(c.to_string())),
            b'#' => self.dispatch(),
            b')' | b']' | b'}' => self.fail(start, format!("unexpected '{}'", byte as char)),
            b'0'..=b'9' => self.number(),
            b'+' | b'-' if self.bytes.get(start + 1).is_some_and(u8::is_ascii_digit) => {
                self.number()
            }
            _ => Ok(match self.token() {
                "nil" => Value::Null,
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                "" => {
                    let bad = self.text[start..].chars().next().unwrap_or_default();
                    return self.fail(start, format!("unexpected character {bad:?}"));
                }
                symbol => Value::String(symbol.to_string()),
            }),
        }
    }

    /// A run of non-delimiter bytes.
    fn token(&mut self) -> &str {
        let start = self.position;
        while self.peek().is_some_and(|b| !is_delimiter(b)) {
            self.position += 1;
        }
        &self.text[start..self.position]
    }

    fn collection(&mut self, close: u8) -> Parsed<Vec<Value>> {
        let start = self.position;
        if self.depth == MAX_DEPTH {
            return self.fail(start, format!("collections nested deeper than {MAX_DEPTH}"));
        }
        self.depth += 1;
        self.position += 1;
        let mut values = Vec::new();
        loop {
            self.skip_ignored()?;
            match self.peek() {
                None => {
                    let open = self.bytes[start] as char;
                    return self.fail(start, format!("'{open}' is never closed"));
                }
                Some(b) if b == close => break,
                Some(_) => values.push(self.value()?),
            }
        }
        self.position += 1;
        self.depth -= 1;
        Ok(values)
    }

    fn map(&mut self) -> Parsed<Value> {
        let start = self.position;
        let items = self.collection(b'}')?;
        if items.len() % 2 == 1 {
            return self.fail(start, "a map with a key and no value");
        }
        let mut map = Map::new();
        let mut items = items.into_iter();
        while let (Some(key), Some(value)) = (items.next(), items.next()) {
            let key = match key {
                Value::String(key) => key,
                other => other.to_string(),
            };
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }

    /// What follows a `#`: a set, a symbolic value, a regex, a namespaced map or a tag.
    fn dispatch(&mut self) -> Parsed<Value> {
        let start = self.position;
        self.position += 1;
        match self.peek() {
            Some(b'{') => self.collection(b'}').map(Value::Array),
            Some(b'#') => {
                self.position += 1;
                let name = self.token();
                Ok(Value::String(format!("##{name}")))
            }
            Some(b'"') => self.string().map(Value::String),
            Some(b':') => {
                self.position += 1;
                self.token();
                self.skip_ignored()?;
                match self.peek() {
                    Some(b'{') => self.map(),
                    _ => self.fail(start, "a namespaced map without its map"),
                }
            }
            Some(b) if b.is_ascii_alphabetic() => {
                self.token();
                self.skip_ignored()?;
                if self.peek().is_none() {
                    return self.fail(start, "a tag with no value");
                }
                self.value()
            }
            _ => self.fail(start, "'#' followed by nothing EDN knows"),
        }
    }

    fn string(&mut self) -> Parsed<String> {
        let start = self.position;
        self.position += 1;
        let mut text = String::new();
        loop {
            let run = self.position;
            while self.peek().is_some_and(|b| b != b'"' && b != b'\\') {
                self.position += 1;
            }
            text.push_str(&self.text[run..self.position]);
            match self.peek() {
                None => return self.fail(start, "a string that is never closed"),
                Some(b'"') => {
                    self.position += 1;
                    return Ok(text);
                }
                Some(_) => text.push(self.escape()?),
            }
        }
    }

    /// The character a `\` escape in a string stands for.
    fn escape(&mut self) -> Parsed<char> {
        let start = self.position;
        self.position += 1;
        let escaped = match self.peek() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'n') => '\n',
            Some(b't') => '\t',
            Some(b'r') => '\r',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'u') => {
                self.position += 1;
                return self.unicode(start);
            }
            _ => return self.fail(start, "an unknown escape in a string"),
        };
        self.position += 1;
        Ok(escaped)
    }

    /// The character of a `\uXXXX` escape (a surrogate pair takes two), after the `u`.
    fn unicode(&mut self, start: usize) -> Parsed<char> {
        let high = self.hex4(start)?;
        if !(0xd800..0xdc00).contains(&high) {
            return char::from_u32(high).map_or_else(|| self.fail(start, "a lone surrogate"), Ok);
        }
        if self.bytes.get(self.position..self.position + 2) != Some(b"\\u") {
            return self.fail(start, "a lone surrogate");
        }
        self.position += 2;
        let low = self.hex4(start)?;
        if !(0xdc00..0xe000).contains(&low) {
            return self.fail(start, "a lone surrogate");
        }
        let code = 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00);
        char::from_u32(code).map_or_else(|| self.fail(start, "a bad surrogate pair"), Ok)
    }

    fn hex4(&mut self, start: usize) -> Parsed<u32> {
        let digits = self.bytes.get(self.position..self.position + 4);
        let Some(digits) = digits.filter(|d| d.iter().all(u8::is_ascii_hexdigit)) else {
            return self.fail(start, "\\u needs four hex digits");
        };
        self.position += 4;
        let digits = std::str::from_utf8(digits).expect("ASCII hex digits");
        Ok(u32::from_str_radix(digits, 16).expect("four hex digits"))
    }

    /// A character literal: `\a`, `\newline`, `\u00e9`.
    fn character(&mut self) -> Parsed<char> {
        let start = self.position;
        self.position += 1;
        let Some(first) = self.text[self.position..].chars().next() else {
            return self.fail(start, "a '\\' with no character");
        };
        self.position += first.len_utf8();
        if !first.is_alphanumeric() {
            return Ok(first);
        }
        let rest = self.token();
        if rest.is_empty() {
            return Ok(first);
        }
        let name = &self.text[start + 1..self.position];
        match name {
            "newline" => Ok('\n'),
            "space" => Ok(' '),
            "tab" => Ok('\t'),
            "return" => Ok('\r'),
            "formfeed" => Ok('\u{c}'),
            "backspace" => Ok('\u{8}'),
            _ if first == 'u' && name.len() == 5 => {
                self.position = start + 2;
                self.unicode(start)
            }
            _ => self.fail(start, format!("an unknown character \\{name}")),
        }
    }

    fn number(&mut self) -> Parsed<Value> {
        let start = self.position;
        let token = self.token();
        let bad = || format!("a bad number {token:?}");
        let value = if let Some(integer) = token.strip_suffix('N') {
            integer_value(integer)
        } else if let Some((numerator, denominator)) = token.split_once('/') {
            match (numerator.parse::<f64>(), denominator.parse::<f64>()) {
                (Ok(n), Ok(d)) if !denominator.starts_with(['+', '-']) => Some(float_value(n / d)),
                _ => None,
            }
        } else if token.contains(['.', 'e', 'E', 'M']) {
            let decimal = token.strip_suffix('M').unwrap_or(token);
            let plain = decimal
                .bytes()
                .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
            decimal
                .parse::<f64>()
                .ok()
                .filter(|_| plain)
                .map(float_value)
        } else {
            integer_value(token)
        };
        match value {
            Some(value) => Ok(value),
            None => {
                let message = bad();
                self.fail(start, message)
            }
        }
    }
}

/// An integer, as an `i64` or `u64` if it fits, else (a big integer) as a float.
fn integer_value(text: &str) -> Option<Value> {
    if !text
        .trim_start_matches(['+', '-'])
        .bytes()
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    if let Ok(n) = text.parse::<i64>() {
        Some(Value::from(n))
    } else if let Ok(n) = text.trim_start_matches('+').parse::<u64>() {
        Some(Value::from(n))
    } else {
        text.parse::<f64>().ok().map(float_value)
    }
}

/// A float as JSON; JSON has no infinities, so those are written as EDN writes them.
fn float_value(x: f64) -> Value {
    match Number::from_f64(x) {
        Some(number) => Value::Number(number),
        None if x.is_nan() => Value::String("##NaN".to_string()),
        None if x > 0.0 => Value::String("##Inf".to_string()),
        None => Value::String("##-Inf".to_string()),
    }
}

/// The op an EDN map describes; `position` is its place in the history.
fn op_from(value: Value, position: usize, options: EdnOptions) -> Result<Op, String> {
    let Value::Object(mut map) = value else {
        return Err(format!("an op must be a map, not {value}"));
    };
    let mut field = |name: &str| map.remove(name).filter(|v| !v.is_null());
    let required = |value: Option<Value>, name: &str| {
        value.ok_or_else(|| format!("an op map without :{name}"))
    };
    let kind = match required(field("type"), "type")?.as_str() {
        Some("invoke") => OpType::Invoke,
        Some("ok") => OpType::Ok,
        Some("fail") => OpType::Fail,
        Some("info") => OpType::Info,
        _ => return Err(":type must be :invoke, :ok, :fail or :info".to_string()),
    };
    let process = match required(field("process"), "process")? {
        Value::String(name) if name == "nemesis" => Process::NEMESIS,
        Value::Number(n) if n.is_u64() => Process::Client(n.as_u64().expect("a u64")),
        other => {
            return Err(format!(
                ":process must be a natural number or :nemesis, not {other}"
            ))
        }
    };
    let f = match required(field("f"), "f")? {
        Value::String(f) => f,
        other => return Err(format!(":f must be a keyword, not {other}")),
    };
    let natural = |value: Option<Value>, name: &str, default: u64| match value {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!(":{name} must be a natural number, not {v}")),
    };
    let index = natural(field("index"), "index", position as u64)?;
    let time = natural(field("time"), "time", 0)?;
    let mut op = Op::new(process, kind, f).at(index, time);
    op.value = field("value");
    op.error = field("error").map(|error| match error {
        Value::String(text) => text,
        other => other.to_string(),
    });
    op.key = match field("key") {
        None => None,
        Some(Value::String(key)) => Some(key),
        Some(other) => Some(other.to_string()),
    };
    op.node = match field("node") {
        Some(Value::String(node)) => Some(vec![node]),
        Some(Value::Array(nodes)) => nodes
            .into_iter()
            .map(|node| match node {
                Value::String(node) => Some(node),
                _ => None,
            })
            .collect(),
        _ => None,
    };
    if options.independent && !process.is_nemesis() {
        let (key, value) = match op.value.take() {
            Some(Value::Array(tuple)) if tuple.len() == 2 => {
                let mut tuple = tuple.into_iter();
                (tuple.next().expect("a key"), tuple.next().expect("a value"))
            }
            // No result (`:timed-out`, say): the key is the invoke's.
            other if matches!(kind, OpType::Info | OpType::Fail) => {
                op.value = other;
                return Ok(op);
            }
            other => {
                let found = other.unwrap_or(Value::Null);
                return Err(format!(
                    "with independent keys, :value must be [key value], not {found}"
                ));
            }
        };
        op.key = Some(match key {
            Value::String(key) => key,
            other => other.to_string(),
        });
        op.value = Some(value).filter(|v| !v.is_null());
    }
    Ok(op)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(text: &str) -> Vec<Op> {
        read_edn_history(text, EdnOptions::default()).unwrap()
    }

    fn parse_error(text: &str) -> (usize, usize, String) {
        match read_edn_history(text, EdnOptions::default()) {
            Err(HistoryError::Parse {
                line,
                column,
                message,
            }) => (line, column, message),
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    /// A knossos-style history: invokes and completions, an info that never completes, a
    /// failure, and the nemesis.
    const HISTORY: &str = r#"
; a cas-register run
[{:type :invoke, :f :write, :value 3, :process 0, :time 1000, :index 0}
 {:type :info, :f :start, :value nil, :process :nemesis, :time 1500, :index 1}
 {:type :ok, :f :write, :value 3, :process 0, :time 2000, :index 2}
 {:type :invoke, :f :cas, :value [3 4], :process 1, :time 2500, :index 3}
 {:type :invoke, :f :read, :value nil, :process 2, :time 3000, :index 4}
 {:type :info, :f :cas, :value [3 4], :process 1, :time 4000, :index 5, :error :timeout}
 {:type :ok, :f :read, :value 4, :process 2, :time 5000, :index 6}
 {:type :invoke, :f :write, :value 1, :process 3, :time 6000, :index 7}
 {:type :fail, :f :write, :value 1, :process 3, :time 7000, :index 8, :error "refused"}
 {:type :info, :f :stop, :value nil, :process :nemesis, :time 8000, :index 9}]
"#;

    #[test]
    fn a_jepsen_history_reads_field_by_field() {
        let ops = read(HISTORY);
        assert_eq!(ops.len(), 10);
        let expected = Op::new(Process::Client(1), OpType::Info, "cas")
            .at(5, 4000)
            .value(json!([3, 4]))
            .error("timeout");
        assert_eq!(ops[5], expected);
        assert_eq!(
            ops[1],
            Op::new(Process::NEMESIS, OpType::Info, "start").at(1, 1500)
        );
        assert_eq!(ops[4].value, None);
        assert_eq!(ops[8].error.as_deref(), Some("refused"));
        let model = crate::linearizability::find_model("cas-register").unwrap();
        let limits = crate::linearizability::Limits::default();
        let result = crate::linearizability::check(&ops, model, limits).unwrap();
        assert_eq!(result.valid, crate::Valid::True);
    }

    #[test]
    fn a_stream_of_tagged_maps_reads_like_a_vector() {
        let text = "#jepsen.history.Op{:index 0, :time 5, :type :invoke, :process 0, :f :read, :value nil}\n\
                    #jepsen.history.Op{:index 1, :time 6, :type :ok, :process 0, :f :read, :value 1}";
        let ops = read(text);
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[1].value, Some(json!(1)));
        let without_indices =
            read("{:type :invoke :process 0 :f :read} {:type :ok :process 0 :f :read}");
        assert_eq!((without_indices[0].index, without_indices[1].index), (0, 1));
    }

    #[test]
    fn values_become_json() {
        let text = r#"{:type :ok, :process 0, :f :read,
                       :value {:set #{1 2}, :list (a "b\n\u00e9\"" \c \newline), :big 18446744073709551615,
                               :n 12N, :x 1.5, :d 2.5M, :ratio 1/4, :neg -3, :inf ##Inf,
                               :nested {1 [true false nil]}, :when #inst "2024-01-01", #_ #_ :gone 3 :k :ns/kw}}"#;
        let value = read(text)[0].value.clone().unwrap();
        assert_eq!(
            value,
            json!({
                "set": [1, 2], "list": ["a", "b\né\"", "c", "\n"], "big": 18446744073709551615u64,
                "n": 12, "x": 1.5, "d": 2.5, "ratio": 0.25, "neg": -3, "inf": "##Inf",
                "nested": {"1": [true, false, null]}, "when": "2024-01-01", "k": "ns/kw"
            })
        );
    }

    #[test]
    fn independent_tuples_become_key_and_value() {
        let text = "[{:type :invoke, :f :write, :value [7 3], :process 0}\n\
                     {:type :ok, :f :write, :value [7 3], :process 0}\n\
                     {:type :invoke, :f :read, :value [\"k\" nil], :process 1}\n\
                     {:type :info, :f :kill, :process :nemesis}]";
        let ops = read_edn_history(text, EdnOptions { independent: true }).unwrap();
        assert_eq!(
            (ops[0].key.as_deref(), ops[0].value.clone()),
            (Some("7"), Some(json!(3)))
        );
        assert_eq!(
            (ops[2].key.as_deref(), ops[2].value.clone()),
            (Some("k"), None)
        );
        assert_eq!(ops[3].key, None);
        let (line, _, message) = match read_edn_history(
            "{:type :invoke, :f :write, :value 3, :process 0}",
            EdnOptions { independent: true },
        ) {
            Err(HistoryError::Parse {
                line,
                column,
                message,
            }) => (line, column, message),
            other => panic!("{other:?}"),
        };
        assert_eq!(line, 1);
        assert!(message.contains("[key value]"), "{message}");
    }

    #[test]
    fn the_fields_jepsen_writes_today_are_read_or_ignored() {
        let text = r#"[{:index 0, :time 12, :type :invoke, :process 0, :f :write, :value 1, :node "n1"}
 {:index 1, :time 13, :type :info, :process :nemesis, :f :start-partition,
  :value {"n1" :isolated, "n2" #{"n3"}}, :sub-via #{:partition}}
 {:index 2, :time 14, :type :info, :process 0, :f :write, :value :timed-out, :node "n1",
  :error [:timeout "read timed out"], :exception {:via [{:type java.net.SocketTimeoutException}]}}
 {:index 3, :time 15, :type :invoke, :process 5, :f :read, :value nil, :node ["n2" "n3"]}]"#;
        let ops = read(text);
        assert_eq!(ops.len(), 4);
        assert_eq!(ops[0].node, Some(vec!["n1".to_string()]));
        assert_eq!(ops[3].node, Some(vec!["n2".to_string(), "n3".to_string()]));
        assert!(ops[1].process.is_nemesis() && ops[1].f == "start-partition");
        assert_eq!(ops[2].kind, OpType::Info);
        assert_eq!(ops[2].value, Some(json!("timed-out")));
        assert_eq!(
            ops[2].error.as_deref(),
            Some(r#"["timeout","read timed out"]"#)
        );
        assert_eq!((ops[2].index, ops[2].time), (2, 14));
    }

    #[test]
    fn an_independent_completion_without_a_result_needs_no_tuple() {
        let text = "[{:type :invoke, :f :cas, :value [7 [1 2]], :process 0}\n\
                     {:type :info, :f :cas, :value :timed-out, :process 0}\n\
                     {:type :invoke, :f :write, :value [8 3], :process 1}\n\
                     {:type :fail, :f :write, :value nil, :process 1}\n\
                     {:type :invoke, :f :write, :value [8 4], :process 2}\n\
                     {:type :info, :f :write, :value [8 :timed-out], :process 2}]";
        let ops = read_edn_history(text, EdnOptions { independent: true }).unwrap();
        let keys_and_values: Vec<_> = ops
            .iter()
            .map(|op| (op.key.as_deref(), op.value.clone()))
            .collect();
        assert_eq!(
            keys_and_values,
            [
                (Some("7"), Some(json!([1, 2]))),
                (None, Some(json!("timed-out"))),
                (Some("8"), Some(json!(3))),
                (None, None),
                (Some("8"), Some(json!(4))),
                (Some("8"), Some(json!("timed-out"))),
            ]
        );
        let ok_without_a_tuple = "[{:type :invoke, :f :read, :value [7 nil], :process 0}\n\
                                  {:type :ok, :f :read, :value 3, :process 0}]";
        let error = read_edn_history(ok_without_a_tuple, EdnOptions { independent: true });
        assert!(
            matches!(error, Err(HistoryError::Parse { line: 2, .. })),
            "an ok completion's result must name its key: {error:?}"
        );
    }

    #[test]
    fn errors_name_their_line_and_column() {
        assert_eq!(
            parse_error("[{:type :invoke, :process 0, :f :read}\n {:type :ok, :f :read}]"),
            (2, 2, "an op map without :process".to_string())
        );
        assert_eq!(
            parse_error("{:type :invoke\n  :process 0 :f :read :value \"abc}"),
            (2, 30, "a string that is never closed".to_string())
        );
        assert_eq!(
            parse_error("[{:type :ok :process 0 :f :read}\n  {:a 1"),
            (2, 3, "'{' is never closed".to_string())
        );
        assert_eq!(parse_error("{:a 1 :b}").2, "a map with a key and no value");
        assert_eq!(
            parse_error("{:type :maybe :process 0 :f :x}").2,
            ":type must be :invoke, :ok, :fail or :info"
        );
        assert_eq!(
            parse_error("{:type :ok :process -1 :f :x}").2,
            ":process must be a natural number or :nemesis, not -1"
        );
        assert_eq!(
            parse_error("{:type :ok :process 1 :f :x :time 1.5}").2,
            ":time must be a natural number, not 1.5"
        );
        assert_eq!(parse_error("[1]").2, "an op must be a map, not 1");
        assert_eq!(parse_error("{:a 1.2.3}").2, "a bad number \"1.2.3\"");
        assert_eq!(
            parse_error("{:a \"\\q\"}").2,
            "an unknown escape in a string"
        );
        assert_eq!(parse_error(")").2, "unexpected ')'");
        assert_eq!(parse_error("{:a \\foo}").2, "an unknown character \\foo");
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        assert_eq!(parse_error("{:é \"é\" :b}").1, 1);
        assert_eq!(parse_error("[\"é\" )").1, 6);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        assert!(parse_error(&deep).2.contains("nested deeper"));
    }

    #[test]
    fn fuzz_found_edge_cases_are_errors_not_panics() {
        for text in [
            "",
            "#",
            "#_",
            "\\",
            "\"\\u12",
            "\"\\ud800\"",
            "\"\\ud800\\u0041\"",
            ":",
            "#:a",
            "##",
            "{:a #x}",
            "-",
            "+1/-2",
            "1e",
            "0x10",
            "\"\\u00é\"",
            "\\é",
            "#{",
            "(",
            "[[] ",
        ] {
            let _ = read_edn_history(text, EdnOptions::default());
        }
        assert!(read("").is_empty());
        assert!(read("; only a comment\n, ,").is_empty());
        assert_eq!(
            read("{:type :ok :process 0 :f :read :value \"\\ud83d\\ude00\"}")[0].value,
            Some(json!("😀"))
        );
    }
}
