//! What the engine is configured with and what it reports besides the
//! workload's own record: the configuration, the run's counters and
//! bounds, progress, errors, and the memory estimates per task and
//! channel. The engine itself is the parent module.

use super::*;

/// Counters of a run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RunCounters {
    /// Events processed.
    pub events: u64,
    /// Successful try_to_wake_up calls (including new tasks).
    pub wakeups: u64,
    /// Of those, wake-ups of a delayed task where it is queued
    /// (ttwu_runnable, DELAY_DEQUEUE): no placement ran.
    pub wakeups_in_place: u64,
    /// Wake-ups that moved the task to another CPU.
    pub migrations: u64,
    /// Context switches.
    pub context_switches: u64,
    /// Wake-up preemptions.
    pub preemptions: u64,
    /// Messages written (write calls that completed).
    pub messages: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Idle periods in which the tick was stopped (tick_nohz_idle_stop_tick
    /// succeeded: the CPU enters the nohz set).
    pub tick_stops: u64,
    /// Wake-ups of a polling idle CPU (no IPI, no exit latency).
    pub polled_wakeups: u64,
    /// Idle exits (IPI-kicked CPUs).
    pub idle_exits: u64,
    /// User compute performed, in ns of full-speed work (equals the sum of
    /// the programs' Compute ops: work is never lost or repeated).
    pub compute_work_ns: u64,
    /// CPU time in user mode (programs' work and spinning, at the speed it
    /// ran), ns; the rest of the CPUs' busy time is system time.
    pub user_ns: u64,
    /// Cache-line transfers charged by the line model (reads and writes
    /// that moved a modelled line, each object counted once).
    pub line_transfers: u64,
    /// Of which found the line still in flight and waited (contended).
    pub line_transfers_contended: u64,
    /// CPU time charged for those transfers, waits included, ns.
    pub line_transfer_ns: u64,
    /// Of which waiting for a transfer in flight, ns.
    pub line_wait_ns: u64,
    /// Lines moved, by the kernel object (or user memory) they belong to
    /// and the distance they moved (each line of an object counted).
    pub line_transfers_by: crate::cacheline::LinesMoved,
}

/// Engine configuration.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// EEVDF tunables.
    pub eevdf: EevdfParams,
    /// CPUs the workload may use (taskset / numactl -N).
    pub allowed: CpuMask,
    /// Seed.
    pub seed: u64,
    /// Verify invariants as the run goes (`--check`).
    pub check: bool,
    /// available_idle_cpu checks vcpu_is_preempted.
    pub vcpu_preempt_check: bool,
    /// sched_idle CPUs count as idle in the scans.
    pub sched_idle_as_idle: bool,
    /// Which wake-ups go through the target's wake list.
    pub ttwu_queue: crate::placement::linux::TtwuQueue,
    /// Stop after this much simulated time (safety net).
    pub time_limit: Nanos,
    /// Stop after this many events (u64::MAX: no bound).
    pub max_events: u64,
    /// Stop when what the run records as it goes (raw samples, interval
    /// summaries, rt-app's phase rows: records that grow with the run's
    /// length) passes this many bytes (`--max-memory`; u64::MAX: no
    /// bound).
    pub max_record_bytes: u64,
    /// Where the run publishes how far it has got (None: nowhere).
    pub progress: Option<std::sync::Arc<Progress>>,
    /// The cpuidle driver and governor: what idle entry does with the tick.
    pub cpuidle: crate::cpuidle::Cpuidle,
    /// The kernel's idle-loop rules (when the tick stops, POLL's limit).
    pub idle_loop: crate::idle_loop::IdleLoopFeatures,
    /// The kernel's pipe and socket rules (when a read wakes a writer).
    pub ipc: crate::ipc_features::IpcFeatures,
    /// Measure the host time spent in the policy's calls ([`PhaseTimes`]);
    /// a diagnostic for `--stats`, off by default (it reads the clock
    /// twice per call).
    pub phase_timing: bool,
}

/// How far a run has got, published every [`Progress::EVERY`] events for
/// a display polled from another thread (the engine itself shows nothing).
#[derive(Debug, Default)]
pub struct Progress {
    /// Events processed.
    pub events: std::sync::atomic::AtomicU64,
    /// Simulated time, ns.
    pub now: std::sync::atomic::AtomicU64,
}

impl Progress {
    /// Events between two updates (a power of two).
    pub const EVERY: u64 = 1 << 16;

    pub(super) fn publish(&self, events: u64, now: Nanos) {
        use std::sync::atomic::Ordering::Relaxed;
        self.events.store(events, Relaxed);
        self.now.store(now, Relaxed);
    }
}

/// A bound of the run reached before the workload finished.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Bound {
    /// The simulated-time limit ([`EngineConfig::time_limit`]).
    #[error("--time-limit: the run reached the simulated-time limit of {} s with {alive} tasks alive (raise it with --time-limit S)", limit / 1_000_000_000)]
    Time {
        /// The limit, ns.
        limit: Nanos,
        /// Tasks still alive.
        alive: usize,
    },
    /// The event limit ([`EngineConfig::max_events`]).
    #[error("--max-events: the run reached the limit of {limit} events at {:.3} s simulated with {alive} tasks alive (raise it with --max-events N)", *now as f64 / 1e9)]
    Events {
        /// The limit.
        limit: u64,
        /// Simulated time when it was reached, ns.
        now: Nanos,
        /// Tasks still alive.
        alive: usize,
    },
    /// What the run records reached the memory limit
    /// ([`EngineConfig::max_record_bytes`]).
    #[error("--max-memory: what the run records (samples, summaries, logged phases) reached the limit of {} MiB at {:.3} s simulated (raise it with --max-memory MIB)", limit >> 20, *now as f64 / 1e9)]
    Memory {
        /// The limit, bytes.
        limit: u64,
        /// Simulated time when it was reached, ns.
        now: Nanos,
    },
    /// Simulated time stopped advancing ([`super::STALL_EVENTS`] events at
    /// one instant).
    #[error("simulated time stopped advancing at {:.3} s: {events} events in a row took no time (a cost profile whose figures are all 0 lets work take none; check --cost-profile)", *now as f64 / 1e9)]
    Stalled {
        /// Events handled at that instant.
        events: u64,
        /// The instant, ns.
        now: Nanos,
    },
}

/// Why [`Engine::run`] stopped before the workload finished.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// `--check` found an invariant violated, or the run deadlocked.
    #[error(transparent)]
    Invariant(#[from] InvariantError),
    /// A bound of the run was reached.
    #[error(transparent)]
    Bound(#[from] Bound),
    /// The workload stopped itself with an error (a fork past its pool:
    /// engine/fork.rs).
    #[error(transparent)]
    Workload(#[from] WorkloadFailed),
}

impl EngineConfig {
    /// A configuration for a machine whose tasks may use `allowed`: default
    /// EEVDF tunables, seed 1, invariants checked, the idle tests of recent
    /// kernels, a 10 s time limit (the setting hand-built test runs use).
    pub fn checked(allowed: CpuMask) -> Self {
        EngineConfig {
            eevdf: EevdfParams::default(),
            allowed,
            seed: 1,
            check: true,
            vcpu_preempt_check: true,
            ttwu_queue: crate::placement::linux::TtwuQueue::CrossLlcOrIdle,
            sched_idle_as_idle: true,
            time_limit: 10_000_000_000,
            max_events: u64::MAX,
            max_record_bytes: u64::MAX,
            progress: None,
            // a driver with the menu governor (what every run modelled
            // before per-machine idle configurations)
            cpuidle: crate::cpuidle::Cpuidle {
                driver: crate::cpuidle::Driver::IntelIdle,
                governor: crate::cpuidle::Governor::Menu,
            },
            idle_loop: crate::idle_loop::IdleLoopFeatures::default(),
            ipc: crate::ipc_features::IpcFeatures::default(),
            phase_timing: false,
        }
    }
}

/// An invariant violation found by `--check`.
#[derive(Debug, thiserror::Error)]
#[error("invariant violated at t={time} ns: {what}")]
pub struct InvariantError {
    /// When.
    pub time: Nanos,
    /// What.
    pub what: String,
}

/// Bytes the engine holds per task on a machine of `ncpus` CPUs, not
/// counting its program (for memory estimates): the task, its entity and
/// placement fields, a heap CPU mask on large machines, its entry in a run
/// queue's timeline, and an allowance for its name, loop stack and other
/// queue entries.
pub fn bytes_per_task(ncpus: usize) -> u64 {
    (std::mem::size_of::<Task>()
        + std::mem::size_of::<Entity>()
        + crate::timeline::Timeline::BYTES_PER_ENTRY
        + std::mem::size_of::<TaskPlacement>()
        + 8 * ncpus.div_ceil(64)
        // its task_struct, kernel-stack and thread_info line records
        // (Kernel::add_task)
        + 3 * LineTable::bytes_per_line(ncpus)
        + 128) as u64
}

/// Bytes the engine holds per channel on a machine of `ncpus` CPUs, not
/// counting its buffered chunks (for memory estimates).
pub fn bytes_per_channel(ncpus: usize) -> u64 {
    (std::mem::size_of::<Channel>() + LineTable::bytes_per_line(ncpus) + 32) as u64
}

/// One task's placement counts (see `Engine::track_tasks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskPlaceCounts {
    /// Times it changed CPU (wake-up placement or a balancer move).
    pub migrations: u64,
    /// Its wake-up placement decisions by stage (`Stage::ALL` order).
    pub stages: [u64; crate::placement::Stage::COUNT],
}

impl Default for TaskPlaceCounts {
    fn default() -> Self {
        TaskPlaceCounts {
            migrations: 0,
            stages: [0; crate::placement::Stage::COUNT],
        }
    }
}
