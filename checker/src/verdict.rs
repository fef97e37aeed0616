use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::explain::cause::Explanation;

/// How many violations of each kind a result lists in full; the counts are always exact.
pub const REPORTED_VIOLATIONS: usize = 100;

/// A checker's verdict, serialised as Jepsen's `:valid?`: `true`, `false` or `"unknown"`.
///
/// Verdicts merge with [`Valid::merge`]: invalid beats unknown beats valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Valid {
    True,
    Unknown,
    False,
}

impl Valid {
    /// The verdict of two checkers together: the worse of the two.
    pub fn merge(self, other: Valid) -> Valid {
        match (self, other) {
            (Valid::False, _) | (_, Valid::False) => Valid::False,
            (Valid::Unknown, _) | (_, Valid::Unknown) => Valid::Unknown,
            _ => Valid::True,
        }
    }

    /// Jepsen's exit code for this verdict: 0 valid, 1 invalid, 2 unknown.
    pub fn exit_code(self) -> i32 {
        match self {
            Valid::True => 0,
            Valid::False => 1,
            Valid::Unknown => 2,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Valid::True => "valid",
            Valid::False => "INVALID",
            Valid::Unknown => "unknown",
        }
    }
}

/// What every checker's result answers, whatever else it holds, so that a verdict can be made
/// of any set of them without reading their fields.
pub trait Checked {
    /// The checker's name, as in `results.json` (`lock-safety`).
    fn name(&self) -> &'static str;
    fn valid(&self) -> Valid;
    /// What it found wrong, a few words each, for the verdict line (`3 double grants`).
    fn violations(&self) -> Vec<String> {
        Vec::new()
    }
    /// What it vouches for when valid (`no acknowledged write lost`); `None` where it checked
    /// nothing a user would miss.
    fn vouches(&self) -> Option<String> {
        None
    }
    /// Why it is unknown, where it is and can say.
    fn unknown_because(&self) -> Option<String> {
        None
    }
    /// Its lines in a run's summary, before the verdict, each with its label (`holds`); none
    /// where it has nothing to say.
    fn summary(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// What it found, one line each, at most `limit` of each kind.
    fn findings(&self, _limit: usize) -> Vec<String> {
        Vec::new()
    }
    /// The mechanism of each violation it lists, in its order, where one was found.
    fn explanations(&self) -> Vec<&Explanation> {
        Vec::new()
    }
}

impl Serialize for Valid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Valid::True => s.serialize_bool(true),
            Valid::False => s.serialize_bool(false),
            Valid::Unknown => s.serialize_str("unknown"),
        }
    }
}

impl<'de> Deserialize<'de> for Valid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Bool(true) => Ok(Valid::True),
            serde_json::Value::Bool(false) => Ok(Valid::False),
            serde_json::Value::String(s) if s == "unknown" => Ok(Valid::Unknown),
            other => Err(serde::de::Error::custom(format!(
                "expected true, false or \"unknown\", found {other}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_beats_unknown_beats_valid() {
        assert_eq!(Valid::True.merge(Valid::Unknown), Valid::Unknown);
        assert_eq!(Valid::Unknown.merge(Valid::False), Valid::False);
        assert_eq!(Valid::True.merge(Valid::True), Valid::True);
    }

    #[test]
    fn serialises_like_jepsen() {
        assert_eq!(
            serde_json::to_string(&Valid::Unknown).unwrap(),
            "\"unknown\""
        );
        assert_eq!(
            serde_json::from_str::<Valid>("false").unwrap(),
            Valid::False
        );
        assert!(serde_json::from_str::<Valid>("\"maybe\"").is_err());
    }
}
