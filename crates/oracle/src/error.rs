//! The oracle's errors: each one line, naming the file, flag or tool at fault.

use std::path::PathBuf;
use thiserror::Error;

/// What can go wrong preparing, booting or reading back a guest.
#[derive(Debug, Error)]
pub enum OracleError {
    /// The machine has a shape qemu cannot be asked for.
    #[error("--machine {machine}: qemu cannot express this topology: {why}")]
    Inexpressible { machine: String, why: String },
    /// A file we need is missing or unreadable.
    #[error("{what} {path}: {why}")]
    File {
        what: &'static str,
        path: PathBuf,
        why: String,
    },
    /// The guest binary is not statically linked.
    #[error("--guest-binary {0}: not a statically linked executable (build it with RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --target x86_64-unknown-linux-gnu -p schedlab)")]
    NotStatic(PathBuf),
    /// qemu could not be started.
    #[error("--qemu {path}: cannot start: {why}")]
    NoQemu { path: PathBuf, why: String },
    /// qemu exited before the guest came up (its own message).
    #[error("qemu refused to start the guest: {0}")]
    QemuRefused(String),
    /// The guest did not report within its time limit.
    #[error("the guest did not {what} within {secs} s (last console line: {last})")]
    Timeout {
        what: &'static str,
        secs: u64,
        last: String,
    },
    /// The guest stopped without reporting its results.
    #[error("the guest stopped before its results were complete (last console line: {0})")]
    GuestDied(String),
    /// A guest report (domain dump, trace, scenario output) could not be read.
    #[error("guest report: {0}")]
    Report(String),
    /// A bad argument.
    #[error("{flag}: {why}")]
    Arg { flag: String, why: String },
    /// Host I/O while preparing the guest.
    #[error("{0}")]
    Io(String),
}
