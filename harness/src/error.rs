//! The errors a user can meet, and the one place exit codes are decided.

use splitbrain_checker::Valid;

/// Why a command could not finish.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// Bad arguments, config or input file: nothing was started.
    #[error("{0}")]
    BadInput(String),
    /// Ctrl-C or SIGTERM before anything started (an adapter's install): nothing to keep.
    #[error("{0}")]
    Interrupted(String),
    /// Anything else: Docker, images, I/O, a crashed task.
    #[error(transparent)]
    Crash(#[from] anyhow::Error),
}

/// Jepsen's exit codes, plus the shell's convention for an interrupted run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Verdict(Valid),
    /// Ctrl-C or SIGTERM: the run stopped early, cleaned up, and kept its history.
    Interrupted,
    BadInput,
    Crash,
    Success,
}

impl Exit {
    pub fn code(self) -> i32 {
        match self {
            Exit::Verdict(valid) => valid.exit_code(),
            Exit::Success => 0,
            Exit::Interrupted => 130,
            Exit::BadInput => 254,
            Exit::Crash => 255,
        }
    }
}

impl From<&HarnessError> for Exit {
    fn from(e: &HarnessError) -> Exit {
        match e {
            HarnessError::BadInput(_) => Exit::BadInput,
            HarnessError::Interrupted(_) => Exit::Interrupted,
            HarnessError::Crash(_) => Exit::Crash,
        }
    }
}
