//! How a call of a session-lock client went wrong, for the SQL servers whose locks live with a
//! connection's server-side session (PostgreSQL's advisory locks, MariaDB's `GET_LOCK`).

/// What went wrong with one call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// The lock wait ran out: another session holds the lock.
    #[error("{0}")]
    Busy(String),
    /// The server refused the statement, or it was never sent: it took no effect.
    #[error("{0}")]
    Definite(String),
    /// It may have taken effect: a timeout, a connection lost mid-statement.
    #[error("{0}")]
    Indeterminate(String),
}
