//! The run log: one JSON line per finished run, after a header line that
//! describes the whole experiment. It is what makes `--resume` redo only
//! the missing runs and `--merge` build one report from the logs of
//! `--shard` runs on different machines.
//!
//! A run's line is written with one `write` call and flushed as soon as the
//! run ends, so a crash or Ctrl-C leaves at worst a final line without its
//! newline, which reading ignores.

use crate::experiment::Experiment;
use report::RunRecord;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Problems with a run log, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The log.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a run log, or a line is damaged.
    #[error("{path}: line {line}: {message}")]
    Format {
        /// The log.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The logs do not belong together.
    #[error("{0}")]
    Mismatch(String),
}

/// The first line of a run log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Format marker and version.
    pub schedlab_runlog: u32,
    /// Hash of the expanded experiment: logs with the same fingerprint
    /// hold runs of the same experiment.
    pub fingerprint: String,
    /// The shard this log holds (`I/N`), if any.
    pub shard: Option<String>,
    /// The expanded experiment.
    pub experiment: Experiment,
}

/// 64-bit FNV-1a of the experiment's canonical JSON, as hex.
pub fn fingerprint(exp: &Experiment) -> String {
    let text = serde_json::to_string(exp).expect("plain data serialises");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// A log open for appending.
pub struct RunLog {
    path: PathBuf,
    file: File,
}

impl RunLog {
    /// Start a new log (replacing any file at `path`) with its header.
    pub fn create(path: &Path, header: &Header) -> Result<RunLog, LogError> {
        let io = |source| LogError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::create(path).map_err(io)?;
        let line = serde_json::to_string(header).expect("plain data serialises") + "\n";
        file.write_all(line.as_bytes()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(RunLog {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Reopen an existing log for appending (after [`read`] checked it).
    /// A torn last line (no newline) is cut off first.
    pub fn reopen(path: &Path) -> Result<RunLog, LogError> {
        let io = |source| LogError::Io {
            path: path.to_path_buf(),
            source,
        };
        let text = std::fs::read(path).map_err(io)?;
        let keep = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let file = OpenOptions::new().write(true).open(path).map_err(io)?;
        file.set_len(keep as u64).map_err(io)?;
        drop(file);
        let file = OpenOptions::new().append(true).open(path).map_err(io)?;
        Ok(RunLog {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Append one finished run.
    pub fn append(&mut self, rec: &RunRecord) -> Result<(), LogError> {
        let line = serde_json::to_string(rec).expect("plain data serialises") + "\n";
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.flush())
            .map_err(|source| LogError::Io {
                path: self.path.clone(),
                source,
            })
    }
}

/// Read a log: its header and every complete run line (a last line
/// without its newline was cut short and is ignored).
pub fn read(path: &Path) -> Result<(Header, Vec<RunRecord>), LogError> {
    let text = std::fs::read(path).map_err(|source| LogError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let format = |line: usize, message: String| LogError::Format {
        path: path.to_path_buf(),
        line,
        message,
    };
    let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut lines = text[..complete].split(|&b| b == b'\n');
    let header: Header = match lines.next().filter(|l| !l.is_empty()) {
        Some(l) => serde_json::from_slice(l)
            .map_err(|e| format(1, format!("not a schedlab run log header ({e})")))?,
        None => return Err(format(1, "not a schedlab run log (no header line)".into())),
    };
    let mut records = Vec::new();
    for (i, l) in lines.enumerate() {
        if l.is_empty() {
            continue;
        }
        let r = serde_json::from_slice::<RunRecord>(l)
            .map_err(|e| format(i + 2, format!("damaged run line ({e})")))?;
        records.push(r);
    }
    Ok((header, records))
}
