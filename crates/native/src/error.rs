//! The library's error type.

use std::time::Duration;

/// Everything that can stop a native benchmark run.
///
/// Every variant is fatal for the run that returned it, and every run cleans
/// up after itself before returning one: no child process or thread
/// survives, whatever the variant.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is out of range. `flag` names the command-line flag
    /// (`-g`, `--cpus`, ...), `problem` says what is wrong with the value.
    #[error("{flag}: {problem}")]
    InvalidArg {
        /// The flag, as the user typed it (`-g`, `--cpus`, ...).
        flag: &'static str,
        /// What is wrong, in a few words.
        problem: String,
    },
    /// A system limit is too low for the requested run; checked before any
    /// task is started. The message names the limit and how to raise it.
    #[error("{0}")]
    Limit(String),
    /// The run was stopped by SIGINT, SIGTERM or SIGHUP; all tasks were
    /// reaped.
    #[error("interrupted by {0}; all benchmark tasks were stopped and reaped")]
    Interrupted(&'static str),
    /// The caller's progress callback asked the run to stop (its output
    /// is gone); all tasks were reaped.
    #[error(
        "stopped: the progress output was closed; all benchmark tasks were stopped and reaped"
    )]
    Stopped,
    /// The run exceeded `--timeout`; all tasks were reaped.
    #[error("--timeout: the run did not finish within {0:?}; all benchmark tasks were stopped and reaped")]
    Timeout(Duration),
    /// A benchmark task failed (for example a child exited with an error).
    #[error("{0}")]
    Task(String),
    /// A loadfile could not be read or parsed; names the file, and the
    /// line when the problem is in one.
    #[error(transparent)]
    Loadfile(#[from] benchspec::FileError),
    /// A system call failed.
    #[error("{what}: {source}")]
    Sys {
        /// What we were doing.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// A parameter the benchmark itself rejects (checked by `benchspec`, the
/// same check the simulator makes).
impl From<benchspec::SpecError> for Error {
    fn from(e: benchspec::SpecError) -> Self {
        Error::arg(e.flag, e.problem)
    }
}

impl Error {
    pub(crate) fn arg(flag: &'static str, problem: impl Into<String>) -> Self {
        Error::InvalidArg {
            flag,
            problem: problem.into(),
        }
    }

    pub(crate) fn sys(what: impl Into<String>, errno: nix::errno::Errno) -> Self {
        Error::Sys {
            what: what.into(),
            source: std::io::Error::from_raw_os_error(errno as i32),
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Sys {
            what: what.into(),
            source,
        }
    }

    /// True when the run was stopped by a signal.
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Error::Interrupted(_))
    }

    /// The number of the signal that stopped the run ([`Error::Interrupted`]),
    /// for the shell's exit status 128 + N (130 for SIGINT, 143 for SIGTERM,
    /// 129 for SIGHUP).
    pub fn interrupt_signal(&self) -> Option<i32> {
        match self {
            Error::Interrupted("SIGTERM") => Some(libc::SIGTERM),
            Error::Interrupted("SIGHUP") => Some(libc::SIGHUP),
            Error::Interrupted(_) => Some(libc::SIGINT),
            _ => None,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, Error>;
