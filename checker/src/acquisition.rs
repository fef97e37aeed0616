//! Why an acquire failed, as its `error` says.
//!
//! Clients start the error of a refused acquire with one of these words, so that checkers can
//! tell contention (someone else holds the lock) from a split vote (nobody reached a quorum)
//! from unavailability (the lock service could not be asked).

/// The lock is held by another client: `held: ...`.
pub const HELD: &str = "held";
/// Every node answered, some granted, but fewer than a quorum: `split vote: ...`.
pub const SPLIT_VOTE: &str = "split vote";

/// The cause of a failed acquire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    Held,
    SplitVote,
    /// Anything else: nodes down or unreachable, errors.
    Unavailable,
}

impl Cause {
    /// Reads the cause from a failed acquire's error.
    pub fn of(error: Option<&str>) -> Cause {
        match error {
            Some(e) if e.starts_with(HELD) => Cause::Held,
            Some(e) if e.starts_with(SPLIT_VOTE) => Cause::SplitVote,
            _ => Cause::Unavailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_read_from_the_error_prefix() {
        assert_eq!(Cause::of(Some("held: by another client")), Cause::Held);
        assert_eq!(Cause::of(Some("split vote: 2/5 granted")), Cause::SplitVote);
        assert_eq!(Cause::of(Some("n1: not connected")), Cause::Unavailable);
        assert_eq!(Cause::of(None), Cause::Unavailable);
    }
}
