//! schedlab's simulator: a deterministic discrete-event model of a Linux
//! machine running a benchmark.
//!
//! The pieces, each in its own module:
//! - [`event`]: the (time, sequence) event queue;
//! - [`eevdf`]: per-CPU EEVDF run queues behind the [`rq::RunQueue`]
//!   interface; [`pelt`]: load tracking;
//! - [`task`] and [`channel`]: tasks as programs of operations, pipes and
//!   unix sockets with the kernel's blocking and wake-up rules;
//! - [`costs`] and [`cacheline`]: hardware and OS costs by machine, and the
//!   cache-line model for shared state;
//! - [`placement`]: the wake-up placement policies, behind a narrow view;
//! - [`engine`]: the event loop that ties them together;
//! - [`numa`]: memory placement and automatic NUMA balancing;
//! - [`host`]: the host layer (guests on vCPUs a host can pre-empt);
//! - [`workload`]: benchmark models (hackbench);
//! - [`run`]: one-call entry points and the result record;
//! - [`trace`]: the events a trace writer is sent (the writer is elsewhere).
//!
//! ```
//! use sim::run::{simulate_hackbench, SimOptions};
//! use sim::workload::hackbench::Hackbench;
//! let topo = topology::preset("kunpeng920-node").unwrap();
//! let hb = Hackbench { groups: 1, fds: 2, loops: 10, pipe: true, threads: true, ..Default::default() };
//! let r = simulate_hackbench(&topo, &hb, &SimOptions::default()).unwrap();
//! assert_eq!(r.counters.bytes_written, hb.total_bytes());
//! assert!(r.time_ns > 0);
//! ```

#![warn(missing_docs)]

/// Simulated time in nanoseconds.
pub type Nanos = u64;

pub mod balance;
pub mod cacheline;
pub mod channel;
pub mod cost_profile;
pub mod costs;
pub mod cpuidle;
pub mod eevdf;
pub mod engine;
pub mod event;
pub mod host;
pub mod idle_loop;
pub mod numa;
pub mod pelt;
pub mod placement;
mod prefetch;
pub mod rng;
pub mod rq;
pub mod run;
pub mod state;
pub mod task;
pub mod trace;
pub mod workload;
