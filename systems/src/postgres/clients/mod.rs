//! PostgreSQL's lock clients: the session's advisory lock and the transaction's.

mod advisory;
pub(super) mod pg_advisory;
pub(super) mod pg_advisory_xact;

use splitbrain_workloads::{
    held_by_another, new_token, ClientConfig, ClientKind, CrashPoint, Fences, Grant, LockClient,
    Outcome,
};

use super::session::{lock, PgSession};
use super::Server;
use crate::session_error::SessionError;
