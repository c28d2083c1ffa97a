//! schedlab's experiments: one run specification ([`RunSpec`]) that the
//! CLI and experiment files both build, experiment files with sweeps and
//! variants ([`Experiment`]), placement policies of other crates registered
//! by name for them ([`policies`]), built-in experiments for published scheduler
//! changes, the fidelity corpus of published results of real kernel changes
//! ([`fidelity`]), runs in the guests of a host ([`vm`]), and the runner that
//! does the runs in parallel, sharded and resumable ([`runner`]). Reports
//! (and the fidelity score's arithmetic) are the `report` crate's.
//!
//! # Example
//! ```
//! use lab::{Experiment, runner};
//!
//! let text = r#"
//!     name = "tiny"
//!     iterations = 2
//!     metrics = ["time"]
//!     [run]
//!     machine = "xeon-12c24t"
//!     cpus = "0-3"
//!     benchmark = "hackbench"
//!     pipe = true
//!     fds = 2
//!     loops = 5
//!     [sweep]
//!     groups = [1, 2]
//!     [[variant]]
//!     name = "latest"
//!     [[variant]]
//!     name = "no-sis-util"
//!     features = { sis_util = "off" }
//! "#;
//! let exp = Experiment::parse("tiny.toml", text, false)?;
//! assert_eq!(exp.runs().len(), 2 * 2 * 2);
//! let dir = tempfile::tempdir()?;
//! let records = runner::run(&exp, &runner::RunOptions {
//!     jobs: 2, shard: None, resume: false,
//!     log: dir.path().join("tiny.runs.jsonl"),
//!     bounds: lab::exec::Bounds::default(),
//!     on_start: &|_, _| {}, on_done: &|_| {},
//! })?;
//! assert!(records.iter().all(|r| r.metrics["time"] > 0.0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod builtin;
pub mod exec;
pub mod experiment;
pub mod fidelity;
pub mod kernel;
pub mod metrics;
pub mod outcome;
pub mod policies;
pub mod runlog;
pub mod runner;
pub mod scenario;
pub mod spec;
pub mod sweep;
pub mod vm;
pub mod workload;

pub use experiment::{Experiment, ExperimentError};
pub use spec::{Mode, Policy, RunSpec, SpecError};
pub use workload::WorkloadSpec;
