//! The one error type of this crate.
//!
//! Every variant renders as a single line that names the offending input
//! (file, preset name, CPU list token) and the problem, so the CLI can print
//! it as-is and exit with status 2.

use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a topology could not be built, parsed or imported.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// A CPU list such as `"0-3,8"` could not be parsed.
    #[error("bad CPU list {input:?}: {problem}")]
    CpuList {
        /// The whole list as given (trimmed).
        input: String,
        /// What is wrong, naming the bad token.
        problem: String,
    },
    /// `preset(name)` was asked for a machine it does not know.
    #[error("unknown preset {name:?}; valid presets: {valid}")]
    UnknownPreset {
        /// The name asked for.
        name: String,
        /// Comma-separated list of valid names.
        valid: String,
    },
    /// The machine description is inconsistent (overlapping cores, a CPU in
    /// two LLCs, a bad distance matrix, too many CPUs, ...).
    #[error("invalid topology {name:?}: {problem}")]
    Invalid {
        /// The topology's name.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// An `smp:` machine spec is wrong: names the key (with its value) and
    /// the allowed values.
    #[error("smp: {key}: {problem}")]
    Smp {
        /// The key as given, `KEY=VALUE` (or `item N` for an item that is
        /// not one).
        key: String,
        /// What is wrong and what is allowed.
        problem: String,
    },
    /// An input file (sysfs, hwloc XML) is missing, unreadable, garbled or
    /// inconsistent with the others.
    #[error("{}: {problem}", path.display())]
    File {
        /// The file (or directory) at fault.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
}

impl TopologyError {
    pub(crate) fn invalid(name: &str, problem: impl Into<String>) -> Self {
        TopologyError::Invalid {
            name: name.to_string(),
            problem: problem.into(),
        }
    }

    pub(crate) fn file(path: &Path, problem: impl Into<String>) -> Self {
        TopologyError::File {
            path: path.to_path_buf(),
            problem: problem.into(),
        }
    }
}
