//! Perfetto traces of schedlab simulations.
//!
//! The simulator sends a run's scheduler events to a
//! [`sim::trace::TraceSink`]; [`PerfettoWriter`] is the sink that streams
//! them to a Perfetto protobuf trace (`.pftrace`), readable by
//! ui.perfetto.dev and Perfetto's trace_processor:
//! - kernel events as ftrace event bundles per CPU: `sched_switch`,
//!   `sched_waking`, `sched_wakeup`, `sched_wakeup_new`,
//!   `sched_migrate_task`, `cpu_idle` — what a kernel capture holds, so
//!   Perfetto's CPU and thread-state views work unchanged;
//! - what only the model knows, on tracks of the writer's own: an instant per
//!   placement decision (the stage that chose the CPU, its probes and cost)
//!   and per balancer pass, and counters for each CPU's run-queue length and
//!   each LLC's SIS_UTIL `nr_idle_scan`.
//!
//! The messages are hand-written `prost` messages ([`proto`]), so no
//! protobuf compiler is needed to build. [`read::summarize`] decodes a
//! trace and counts its events. How to use and view a trace:
//! docs/visualising.md.

#![warn(missing_docs)]

pub mod proto;
pub mod read;
mod writer;

pub use writer::{
    stopper_pid, task_pid, PerfettoWriter, TraceError, TraceStats, Window, BUNDLE_EVENTS,
};
