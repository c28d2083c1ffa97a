//! Native ports of the three scheduler benchmarks that schedlab simulates:
//! **hackbench** (rt-tests), **schbench** (the 2023+ rework) and **tbench**
//! (dbench's network benchmark), run for real on the host so that the
//! simulator can be checked against the kernel on the machine in front of
//! you: the same benchmark, the same flags and the same report.
//!
//! Each benchmark is a module with a `Config` (the benchmark's own
//! parameters, with the original's defaults, plus how to run it on this
//! host), a `run` function and a `Report` that serialises to JSON with the
//! field names the simulator uses, and that formats the original tool's text
//! output. The parameters, their validation and every line printed are
//! `benchspec`'s, shared with the simulator, so the two cannot drift apart.
//!
//! Every run:
//! - pins every task to [`CpuSelection`] (like `taskset -c` / `numactl -N`);
//! - checks file-descriptor and process limits before starting anything;
//! - reaps every child process and thread on success, error, `timeout`, or
//!   SIGINT/SIGTERM/SIGHUP (which it catches while it runs and reports as
//!   [`Error::Interrupted`]);
//! - has every forked child die with the run's process, even when that is
//!   SIGKILLed (`PR_SET_PDEATHSIG`, checked against a parent that died
//!   before the child set it).
//!
//! Linux only.
//!
//! # Example
//! ```
//! use native::hackbench::{self, Hackbench, HackbenchConfig};
//!
//! // Two groups of 2 senders and 2 receivers over pipes, in threads.
//! let bench = Hackbench { pipe: true, threads: true, groups: 2, fds: 2, loops: 10,
//!                         ..Default::default() };
//! let cfg = HackbenchConfig { bench, ..Default::default() };
//! print!("{}", cfg.header());
//! let report = hackbench::run(&cfg)?;
//! println!("{}", report.time_line()); // "Time: 0.001"
//! assert_eq!(report.bytes_read, 2 * 2 * 2 * 10 * 100);
//! # Ok::<(), native::Error>(())
//! ```
#![warn(missing_docs)]

pub mod calibrate;
pub mod cpus;
mod error;
pub mod hackbench;
mod limits;
pub mod rtapp;
pub mod schbench;
mod schbench_math;
mod sys;
pub mod tbench;

/// tbench's NBENCH loadfiles, defined in `benchspec` (shared with the
/// simulator).
pub use benchspec::loadfile;
/// schbench's histogram, defined in `benchspec` (shared with the simulator).
pub use benchspec::plat;
pub use cpus::CpuSelection;
pub use error::{Error, Result};
