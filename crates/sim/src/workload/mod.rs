//! Workload models: they declare tasks and channels and read back marks; they
//! never reach into the scheduler.

pub mod hackbench;
pub mod spin;
