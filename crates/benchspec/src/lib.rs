//! Benchmark definitions shared by the simulator (`sim`) and the native ports
//! (`native`): the parameters, their validation and the exact text the
//! original tools print. One definition, so `schedlab sim` and `schedlab
//! bench` cannot drift apart.
//!
//! - [`hackbench`]: rt-tests' hackbench;
//! - [`schbench`], with its latency histogram in [`plat`];
//! - [`tbench`] (dbench's network benchmark), with the NBENCH load files it
//!   replays in [`loadfile`].
//!
//! ```
//! use benchspec::hackbench::Hackbench;
//! let hb = Hackbench { groups: 10, loops: 20000, threads: true, ..Default::default() };
//! assert!(hb.header().starts_with("Running in threaded mode with 10 groups"));
//! assert_eq!(Hackbench::time_line(1_234_999_999), "Time: 1.234");
//! ```

#![warn(missing_docs)]

pub mod hackbench;
pub mod loadfile;
pub mod plat;
pub mod rtapp;
pub mod schbench;
pub mod tbench;

/// A benchmark parameter the original tool would reject.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{flag} {problem}")]
pub struct SpecError {
    /// The flag at fault, e.g. `-g/--groups`.
    pub flag: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

/// A benchmark input file (a tbench loadfile) that cannot be read or used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{flag} {path}: {}{problem}", line.map(|n| format!("line {n}: ")).unwrap_or_default())]
pub struct FileError {
    /// The flag that named the file, e.g. `--loadfile`.
    pub flag: &'static str,
    /// The file, as the user gave it.
    pub path: String,
    /// The 1-based line at fault, when the problem is in one line.
    pub line: Option<usize>,
    /// What is wrong.
    pub problem: String,
}
