//! schedlab's simulator: a deterministic discrete-event model of a Linux
//! machine running a benchmark.
//!
//! The pieces, each in its own module:
//! - [`event`]: the (time, sequence) event queue;
//! - [`eevdf`]: per-CPU EEVDF run queues behind the [`rq::RunQueue`]
//!   interface; [`pelt`]: load tracking;
//! - [`task`] and [`channel`]: tasks as programs of operations, pipes, unix
//!   sockets and loopback TCP with the kernel's blocking and wake-up rules;
//! - [`costs`], [`cost_profile`] and [`cacheline`]: hardware and OS costs by
//!   machine, and the cache-line model for shared state;
//! - [`state`]: the per-CPU and per-LLC scheduler state placement reads;
//! - [`placement`]: the wake-up placement policies, behind a narrow view;
//! - [`balance`]: the load balancers, behind a narrow view;
//! - [`kernel`]: the kernel's scheduler state beside the run queues and its
//!   entry points (`select_task_rq`, the wake-up and balance views,
//!   jiffies), shared by the engine, the VM host and the oracle's probe;
//! - [`cpuidle`] and [`idle_loop`]: idle states, governors and the idle
//!   loop's tick and nohz bookkeeping;
//! - [`engine`]: the event loop that ties them together;
//! - [`numa`]: memory placement and automatic NUMA balancing;
//! - [`host`]: the host layer (guests on vCPUs a host can pre-empt);
//! - [`workload`]: benchmark models (hackbench, schbench, tbench, NPB,
//!   rt-app, spin, falseshare);
//! - [`run`]: one-call entry points and the result record;
//! - [`trace`]: the events a trace writer is sent (the writer is elsewhere).
//!
//! No module imports a module that imports it back (checked by
//! `tests/module_cycles.rs`): `run` builds an engine and a workload, the
//! engine drives the placement and balancing policies through their narrow
//! views, and those read the kernel's state and costs below them.
//!
//! # One wake-up, file by file
//!
//! A hackbench sender writes to a pipe whose reader sleeps; this is the
//! path of that message (Linux's own names in brackets):
//!
//! 1. `engine/mod.rs`, `Engine::run`: the event loop pops the earliest
//!    event and `dispatch`es it; the sender's CPU reached the end of its
//!    current segment (a stretch of one op's work).
//! 2. `engine/schedule.rs`, `segment_done`: the op's work is done; it is
//!    applied.
//! 3. `engine/ops.rs`, `apply_op`: the write puts bytes in the channel
//!    (`channel.rs`, `pipe_write`'s rules) and reports whom it wakes; the
//!    pipe's own kernel lines (its `pipe_inode_info` and buffer slot, the
//!    bytes, the file's reference count) move to the writer's CPU through
//!    [`cacheline::LineTable`] at their distance (`channel_lines`);
//!    `do_wakes` wakes the waiting reader with WF_SYNC
//!    (`wake_up_interruptible_sync_poll`).
//! 4. `engine/wakeup.rs`, `try_to_wake_up` (kernel/sched/core.c): the
//!    waker writes the reader's `task_struct` lines, the reader becomes
//!    runnable; `select_task_rq` (core.c's, with its
//!    fallback, in `kernel/mod.rs`) builds a [`placement::WakeEnv`] and asks the
//!    [`placement::Placement`] policy, e.g. `placement/linux/`'s
//!    `select_task_rq_fair` (`wake_wide`, `wake_affine`,
//!    `select_idle_sibling` and its scans, version by version).
//! 5. `placement/mod.rs`, `WakeEnv`: every remote read the policy makes
//!    (another CPU's run queue, the LLC's shared line) goes through
//!    [`cacheline::LineTable`], which charges a transfer at the distance
//!    from the line's last writer; the cost is added to the waker CPU's
//!    debt, so a slow scan delays the waker as it does in the kernel.
//! 6. `engine/wakeup.rs`, `ttwu_do_activate` and
//!    `engine/core.rs`, `activate_task` / `wakeup_preempt`: the reader is
//!    enqueued on the chosen CPU's run queue (`eevdf.rs`, `enqueue_entity`),
//!    then that CPU is kicked out of idle (`kick_idle_cpu`: IPI and the
//!    idle state's exit latency) or checked for preemption
//!    (`check_preempt_wakeup`, `resched_curr`).
//! 7. `engine/clock.rs`, `start_segment_at` / `arm_segment`: the waker's
//!    debt becomes part of its next segment, and the woken CPU's next
//!    segment starts when it has left idle or switched
//!    (`engine/schedule.rs`, `schedule`, where the reader's task_struct
//!    and kernel-stack lines come to its CPU); each arms its end event, and
//!    the loop goes on.
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

/// The revision of the model's behaviour: changed with every change that
/// moves simulated results (a rule, a cost, a fitted factor), so that run
/// logs of an older model are not resumed into a newer one
/// (`lab::runlog::fingerprint`). 2026-12-06: profiles before 6.6 run CFS,
/// Kunpeng 920's OS factor refitted; then (`.lines`) the kernel's own
/// objects of channels and tasks charged as lines, the busy hand-off, and
/// Kunpeng 920's two parameters refitted; then (`.pipe614`) profiles from
/// 6.14 wake a pipe's writer only when a read frees a buffer.
pub const MODEL_REVISION: &str = "2026-12-06.pipe614";

pub mod balance;
pub mod cacheline;
pub mod cfs;
pub mod channel;
pub mod cost_profile;
pub mod costs;
pub mod cpuidle;
pub mod eevdf;
pub mod engine;
pub mod event;
pub mod fair_features;
pub mod host;
pub mod idle_loop;
pub mod ipc_features;
pub mod kernel;
pub mod numa;
pub mod pelt;
pub mod placement;
mod prefetch;
pub mod rng;
pub mod rq;
pub mod run;
pub mod state;
pub mod task;
mod timeline;
pub mod toggle;
pub mod trace;
pub mod workload;
