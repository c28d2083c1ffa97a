//! Benchmark definitions shared by the simulator (`sim`) and the native ports
//! (`native`): the parameters, their validation and the exact text the
//! original tools print. One definition, so `schedlab sim` and `schedlab
//! bench` cannot drift apart.
//!
//! ```
//! use benchspec::hackbench::Hackbench;
//! let hb = Hackbench { groups: 10, loops: 20000, threads: true, ..Default::default() };
//! assert!(hb.header().starts_with("Running in threaded mode with 10 groups"));
//! assert_eq!(Hackbench::time_line(1_234_999_999), "Time: 1.234");
//! ```

#![warn(missing_docs)]

pub mod hackbench;
pub mod plat;
pub mod schbench;

/// A benchmark parameter the original tool would reject.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{flag} {problem}")]
pub struct SpecError {
    /// The flag at fault, e.g. `-g/--groups`.
    pub flag: &'static str,
    /// What is wrong with it.
    pub problem: String,
}
