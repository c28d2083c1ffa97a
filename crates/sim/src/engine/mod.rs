//! The discrete-event engine: CPUs running task programs under EEVDF, with
//! wake-ups placed by a [`Placement`] policy and every cost charged as CPU
//! time to the CPU that pays it.
//!
//! A CPU always runs a *segment*: a stretch of CPU time for the current op of
//! its current task (user compute, or a syscall whose effect lands at the end
//! of the segment), preceded by any kernel work the CPU owes (`debt`: context
//! switch, placement probes, remote enqueues, migration refill). The segment
//! ends with a `SegmentDone` event; user compute can be preempted mid-way
//! (tick or wake-up preemption), syscalls only on return. SMT siblings slow
//! each other: a segment's remaining work is re-timed whenever the number of
//! busy threads of its core changes.
//!
//! Host/vCPU layer: a guest CPU is a vCPU that runs only while the host
//! schedules it (`vcpu`, driven by `crate::host`): its segment clock is
//! paused and resumed and `CpuState::vcpu_preempted` set, without touching
//! the scheduler model.
//!
//! The engine is one type, [`Engine`], whose methods are split by concern
//! over this module's files, each adding its own `impl` block:
//! - `mod.rs`: the types, construction, public accessors, the event loop
//!   (`run`) and event dispatch;
//! - `clock`: time accounting, the segment clock and SMT speed;
//! - `core`: primitives under the kernel's names (activate_task,
//!   deactivate_task, set_task_cpu, resched_curr, kick_idle_cpu);
//! - `schedule`: ticks, __schedule, what a CPU does between segments;
//! - `idle`: the idle loop (the cpuidle driver and governor, the tick and
//!   the nohz bookkeeping of idle entry, the POLL and haltpoll time limits);
//! - `timers`: each CPU's pending timers, for the idle governors;
//! - `wakeup`: placement, wake_up_new_task, try_to_wake_up and the enqueue
//!   that ends them;
//! - `ops`: the op interpreter (a task's program, its blocking and exit);
//! - `pelt`: PELT updates and the placement view's copy of the run queue;
//! - `pthread`: pthread mutexes, condition variables, rt-app's barriers,
//!   timers and per-phase log;
//! - `balance`: the load balancer's hooks (tick, newidle, nohz idle
//!   balance, the active-balance stopper) and the migrations it asks for;
//! - `invariants`: the `--check` invariants;
//! - `trace`: the trace sink and the helpers of the trace hooks;
//! - `vcpu`: the guest side of the host layer (pause, resume, halts, the
//!   one-event stepping the co-simulation drives).

use crate::cacheline::LineTable;
use crate::channel::{ChanKind, Channel};
use crate::costs::MachineCosts;
use crate::eevdf::{nice_to_weight, CfsRq, EevdfParams, Entity};
use crate::event::{Event, EventQueue};
use crate::kernel::Kernel;
use crate::pelt::Pelt;
use crate::placement::{wf, Placement};
use crate::rq::RunQueue;
use crate::state::TaskPlacement;
use crate::task::{ChanId, Op, Pc, TaskId, TaskSpec};
use crate::Nanos;
use topology::{CpuMask, SchedDomains, Topology};

mod affinity;
mod config;
pub use config::*;
mod balance;
mod clock;
mod core;
mod fork;
pub use fork::WorkloadFailed;
mod idle;
mod invariants;
mod numa;
mod omp;
pub use omp::{OmpBarrierId, OmpFlagId, OmpStats};
mod ops;
mod pelt;
mod pthread;
pub use pthread::PhaseRow;
mod schedule;
mod sync;
pub use sync::{Bin, MetricSink, SharedSink};
mod phases;
pub use phases::PhaseTimes;
mod timers;
mod trace;
mod vcpu;
pub use vcpu::{FlaggedBy, GuestVmStats, VcpuRun};
mod wakeup;

/// Why a task is blocked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    Read(ChanId),
    Write(ChanId),
    Poll(ChanId),
    Sleep,
    Child,
    Join(TaskId),
    Futex(crate::task::FutexId),
    /// A pthread mutex, condition variable or barrier (engine/pthread.rs).
    Pthread,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskState {
    /// Declared, not yet spawned.
    Unborn,
    /// On a run queue (running or waiting).
    Runnable,
    Blocked(Block),
    Exited,
}

/// A task's engine state. The fields are laid out in the order written
/// (`repr(C)`), those every op of the running task reads or writes first,
/// so that an event touches the task's first cache lines only (on large
/// machines the task array is far beyond the private caches); the record
/// starts on a line.
#[repr(C, align(64))]
struct Task {
    /// The op being executed (resolved by `start_op`).
    op: Op,
    pc: Pc,
    /// Work left in the current Compute op.
    op_left: Nanos,
    /// Bytes left in the current Read/Write op.
    bytes_left: u32,
    /// The current op already paid its syscall entry (resumed after a block).
    resumed: bool,
    state: TaskState,
    /// Its description; the program and the mm, which every op start
    /// reads, are its first fields (`TaskSpec` is `repr(C)`), so they share
    /// the record's second line with `state`.
    spec: TaskSpec,
    /// task_cpu(): the CPU whose run queue holds it, or held it last.
    cpu: usize,
    /// CPU it last ran on (for migration refill).
    last_ran: Option<usize>,
    /// That CPU's switch count (`CpuTime::switches`) when it was last
    /// switched in there: how many tasks ran there since, for its refill.
    ran_at_switch: u64,
    pelt: Pelt,
    /// A task joining this one.
    joiner: Option<TaskId>,
    /// Exited children not yet reaped.
    unreaped: u32,
    /// Time variables (Op::Stamp).
    vars: [Nanos; crate::task::TASK_VARS],
    /// The per-CPU lock it holds: (set, CPU).
    held_lock: Option<(crate::task::LockSetId, usize)>,
}

/// Events in a row at one simulated instant after which a run stops
/// (`Bound::Stalled`), or 16 per task when that is more: far more than any
/// instant of a real run holds (every task forking, waking and switching at
/// once), reached within a second or two when time has stopped.
pub const STALL_EVENTS: u64 = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// In an idle state since the given time.
    Idle {
        since: Nanos,
        state: usize,
        tick_stopped: bool,
    },
    /// Leaving an idle state (IPI + exit latency).
    LeavingIdle,
    /// Running a segment.
    Busy,
}

/// A CPU's engine state, laid out in the order written (`repr(C)`): what
/// every event on the CPU reads (generation, mode, debt, pending balance
/// work, the segment clock and the run queue's current task) in its first
/// two lines (`hot_fields_share_two_lines` checks it), the rest of the run
/// queue next, accounting and the idle governor's history last; the record
/// starts on a line.
#[repr(C, align(64))]
struct Cpu<R> {
    gen: u32,
    need_resched: bool,
    /// Kernel work owed, charged at the start of the next segment.
    debt: Nanos,
    mode: Mode,
    /// Balancing work the CPU owes before it schedules.
    bal: CpuBalance,
    /// Pipe and socket calls made here (`Engine::channel_reuse`).
    chan_calls: u64,
    /// The running segment.
    seg: SegmentClock,
    /// The run queue (`CfsRq` keeps its current task first).
    rq: R,
    /// mm of the last user task run here (lazy TLB: idle keeps it).
    last_mm: Option<u32>,
    /// Periodic tick.
    tick: TickState,
    pelt: Pelt,
    /// Busy/idle time accounting.
    time: CpuTime,
    /// Idle governor history.
    idle: IdleGovernor,
}

/// What a CPU's next event will probably touch, noted when its segment
/// starts: the segment's task, the channel of the op the segment runs (its
/// end applies the op: `apply_op`) and the channel of the op after it in
/// the program (which the task starts then: `start_op`). A hint only: a
/// wrong one costs a wasted prefetch.
#[derive(Clone, Copy, Debug)]
struct NextHint {
    task: TaskId,
    chan: ChanId,
    then: ChanId,
}

impl Default for NextHint {
    fn default() -> Self {
        NextHint {
            task: TaskId(u32::MAX),
            chan: ChanId(u32::MAX),
            then: ChanId(u32::MAX),
        }
    }
}

/// Load-balancing work pending on a CPU, run when it next decides what to
/// do (`continue_cpu`).
#[derive(Clone, Copy, Debug, Default)]
struct CpuBalance {
    /// Newidle balancing already ran for this idle entry.
    newidle_done: bool,
    /// A tick hit the idle task (its tick still runs): balance as idle.
    idle_tick: bool,
    /// The nohz idle-balance kick arrived.
    ilb: bool,
    /// The stopper must push a task to this CPU (active balance).
    stopper: Option<u32>,
    /// The stopper must move a task for NUMA balancing (engine/numa.rs).
    numa_stop: bool,
    /// Counted as idle in the idle-while-work-waits clock.
    idle: bool,
    /// Counted as having a task waiting (nr_running >= 2).
    waiting: bool,
    /// One of `idle_tick`, `ilb`, `stopper`, `numa_stop` is set: the one
    /// test `continue_cpu` makes on every event (set by the `request_*`
    /// methods, cleared by `take_pending`).
    pending: bool,
}

impl CpuBalance {
    fn request_idle_tick(&mut self) {
        self.idle_tick = true;
        self.pending = true;
    }

    fn request_ilb(&mut self) {
        self.ilb = true;
        self.pending = true;
    }

    fn request_stopper(&mut self, dst: u32) {
        self.stopper = Some(dst);
        self.pending = true;
    }

    fn request_numa_stop(&mut self) {
        self.numa_stop = true;
        self.pending = true;
    }

    /// The pending requests, cleared (`None`: nothing pending).
    #[inline]
    fn take_pending(&mut self) -> Option<CpuBalance> {
        if !self.pending {
            return None;
        }
        let p = *self;
        self.idle_tick = false;
        self.ilb = false;
        self.stopper = None;
        self.numa_stop = false;
        self.pending = false;
        Some(p)
    }
}

/// Time during which some allowed CPU was idle while another had a
/// runnable task waiting.
#[derive(Clone, Copy, Debug, Default)]
struct IdleWaitClock {
    /// First time no allowed CPU was idle.
    all_busy_at: Option<Nanos>,
    idle_cpus: u32,
    waiting_cpus: u32,
    since: Nanos,
    total: Nanos,
}

/// A CPU's segment clock (see the module doc): the segment's work is timed
/// at the core's current SMT speed and re-timed when that changes.
struct SegmentClock {
    /// Segment clock: start, work left at full speed at start, speed /1024.
    start: Nanos,
    work: Nanos,
    speed: u64,
    /// The memory part of `speed` (`Op::ComputeMem` on remote pages),
    /// /1024; SMT changes re-time with it.
    mem_speed: u64,
    /// Part of the segment's work that is debt (consumed first).
    debt: Nanos,
    /// The segment is user compute (preemptible at once).
    user: bool,
    /// The segment is a spin for a lock (user mode, not program work).
    spin: bool,
    /// The segment belongs to a task (false: kernel-only work).
    task: Option<TaskId>,
}

/// Busy and idle time of a CPU, accounted up to `since`.
struct CpuTime {
    /// Switches to a task on this CPU.
    switches: u64,
    busy_ns: Nanos,
    idle_ns: Nanos,
    since: Nanos,
}

/// What the idle governor remembers of a CPU's idle periods.
struct IdleGovernor {
    /// Recent idle durations for the governor (average of the last 8).
    hist: [Nanos; 8],
    hist_pos: usize,
    /// haltpoll: the adaptive poll limit (`dev->poll_limit_ns`), 0 at boot.
    poll_limit_ns: Nanos,
    /// haltpoll: when the current idle period's halt began (after polling).
    halt_since: Option<Nanos>,
    /// The time to the next timer the governor last saw (its
    /// `next_timer_ns` / `sleep_length_ns`; `Nanos::MAX`: none).
    sleep_ns: Nanos,
}

/// `Mode::Idle::state` of a CPU that polls (cpuidle's POLL state: no exit
/// latency, and TIF_POLLING spares the waker the IPI).
pub(super) const POLL_STATE: usize = usize::MAX;

/// A CPU's periodic tick.
struct TickState {
    /// sched_skew_tick: the CPU's tick phase.
    offset: Nanos,
    /// A Tick event is pending.
    armed: bool,
}

/// The simulated machine.
pub struct Engine<'t, R: RunQueue = CfsRq> {
    /// The kernel's scheduler state and entry points (kernel/), shared
    /// with the VM host.
    pub k: Kernel<'t>,
    cfg: EngineConfig,
    now: Nanos,
    events: EventQueue,
    /// On machines of more than 64 CPUs, what each CPU's next event will
    /// probably touch (`prefetch_next`); empty on smaller ones, whose state
    /// stays in the first-level cache.
    next_hint: Vec<NextHint>,
    /// The run has at least `PREFETCH_TASKS_FROM` tasks: their state is
    /// beyond the private caches, and the engine asks for a task's lines
    /// ahead of the event that reads them (kept as a flag: tested at every
    /// op).
    many_tasks: bool,
    cpus: Vec<Cpu<R>>,
    tasks: Vec<Task>,
    ents: Vec<Entity>,
    chans: Vec<Channel>,
    /// Draws for the wake-up latency spread (its own stream of the seed).
    jitter: crate::rng::Rng,
    /// Run counters.
    pub counters: RunCounters,
    marks: Vec<Option<Nanos>>,
    live_tasks: usize,
    /// Tasks declared per address space (`TaskSpec::mm`): more than one
    /// means threads of one process, whose file table is shared.
    mm_tasks: Vec<u32>,
    /// Payload bytes buffered in the run's channels, by `ChanKind` (the
    /// depth that makes pipe and socket calls run colder).
    chan_buffered: [u64; 3],
    /// CPUs the run may use (at least 1): the depth above is per CPU.
    run_cpus: u64,
    /// `(DEPTH_BASE_BYTES + 1) * run_cpus`: below it the depth per CPU is
    /// within the depth table's free base.
    depth_free_bytes: u64,
    /// Per `ChanKind`: its depth table is all zero (no lookup needed).
    depth_flat: [bool; 3],
    violation: Option<InvariantError>,
    /// The simulated time at the last progress mark, and the event count
    /// since when it has not moved (`STALL_EVENTS`).
    stall: (Nanos, u64),
    /// Host time and scan work of the policy's calls (`--stats`).
    pub phases: PhaseTimes,
    idle_wait_clock: IdleWaitClock,
    futexes: Vec<sync::Futex>,
    lists: Vec<sync::WaitList>,
    locksets: Vec<sync::CpuLockSet>,
    /// Raw samples per metric: (time, value), kept only without a
    /// metric sink or when asked (`keep_samples`): they grow with the run.
    samples: Vec<Vec<(Nanos, Nanos)>>,
    /// Keep raw samples even with a sink.
    keep_samples: bool,
    /// Bytes of the records that grow with the run (raw samples, interval
    /// summaries, phase rows), checked against
    /// [`EngineConfig::max_record_bytes`].
    pub(crate) record_bytes: u64,
    /// The workload's bounded bookkeeping of its samples.
    sink: Option<Box<dyn MetricSink>>,
    /// A second sink every sample also goes to (the combined report of
    /// several guests).
    shared_sink: Option<SharedSink>,
    /// Summarised metrics: (bin width, origin mark).
    binned: Vec<Option<(Nanos, u32)>>,
    /// Their bins.
    bins: Vec<Vec<sync::Bin>>,
    /// Extra delay before a wake-up's IPI leaves: the waker's work on the
    /// earlier wakes of the same batch.
    batch_lead: Nanos,
    /// Stop the run at this time (None: when every task has exited).
    stop_at: Option<Nanos>,
    /// Each CPU's pending timers.
    timers: timers::CpuTimers,
    /// Where the run's events go (None: not traced).
    trace: Option<Box<dyn crate::trace::TraceSink>>,
    /// The placement of the wake-up in progress (kept only while traced).
    pick_note: trace::PickNote,
    /// Mutexes, condition variables, barriers and rt-app timers and logs.
    pthreads: pthread::Pthreads,
    /// Per-task placement counts, kept only when a workload asks
    /// (`track_tasks`): (migrations, decisions by stage).
    per_task: Option<Vec<TaskPlaceCounts>>,
    /// The host layer's guest side (None: bare metal).
    vm: Option<Box<vcpu::VmState>>,
    /// Memory and NUMA balancing (None: no workload memory declared).
    numa: Option<Box<numa::NumaState>>,
    /// OpenMP barriers and flags (engine/omp.rs).
    omp: omp::Omp,
    /// CPU sets for affinity changes during the run (engine/affinity.rs).
    affinity: affinity::AffinityState,
    /// Pools of tasks started by `Op::Fork` (engine/fork.rs).
    forks: fork::ForkPools,
    /// Each CPU's core id (the topology's place, kept compact).
    cpu_core: Vec<u32>,
    /// Busy hardware threads per core (`Engine::busy_threads`).
    core_busy: Vec<u8>,
}

impl<'t, R: RunQueue> Engine<'t, R> {
    /// A machine with no tasks yet.
    pub fn new(
        topo: &'t Topology,
        sd: &'t SchedDomains,
        mut costs: MachineCosts,
        cfg: EngineConfig,
        policy: Box<dyn Placement>,
    ) -> Self {
        let n = topo.nr_cpus();
        // the driver's state table: cpuidle's POLL first where it registers
        // it; CPUs boot in the state that was first before it
        let boot_state = cfg
            .cpuidle
            .driver_states(topo.name(), &mut costs.idle_states) as usize;
        let tick_ns = 1_000_000_000 / costs.hz.max(1);
        let seed = cfg.seed;
        let mut rng = crate::rng::Rng::stream(seed, 1);
        let cpus = (0..n)
            .map(|c| Cpu {
                rq: {
                    let mut rq = R::default();
                    rq.configure(&cfg.eevdf);
                    rq.set_rq_id(c as u32 + 1);
                    rq
                },
                pelt: Pelt::new(0),
                gen: 0,
                mode: Mode::Idle {
                    since: 0,
                    state: boot_state,
                    tick_stopped: true,
                },
                debt: 0,
                need_resched: false,
                seg: SegmentClock {
                    start: 0,
                    work: 0,
                    speed: 1024,
                    mem_speed: 1024,
                    debt: 0,
                    user: false,
                    spin: false,
                    task: None,
                },
                time: CpuTime {
                    switches: 0,
                    busy_ns: 0,
                    idle_ns: 0,
                    since: 0,
                },
                last_mm: None,
                chan_calls: 0,
                idle: IdleGovernor {
                    hist: [0; 8],
                    hist_pos: 0,
                    poll_limit_ns: 0,
                    halt_since: None,
                    sleep_ns: Nanos::MAX,
                },
                tick: TickState {
                    // sched_skew_tick: per-CPU tick phase
                    offset: rng.below(tick_ns),
                    armed: false,
                },
                bal: CpuBalance {
                    idle: true,
                    ..Default::default()
                },
            })
            .collect();
        let run_cpus = (cfg.allowed.weight() as u64).max(1);
        let idle_cpus = cfg.allowed.weight() as u32;
        // by ChanKind: Pipe, UnixStream, TcpStream (no depth table)
        let depth_flat = [
            costs.pipe_depth_ns.iter().all(|&v| v == 0),
            costs.unix_depth_ns.iter().all(|&v| v == 0),
            true,
        ];
        let mut k = Kernel::boot(topo, sd, costs, policy);
        k.vcpu_preempt_check = cfg.vcpu_preempt_check;
        k.sched_idle_as_idle = cfg.sched_idle_as_idle;
        k.ttwu_queue = cfg.ttwu_queue;
        // nr_busy_cpus starts at 0: every CPU boots idle with its tick
        // stopped (`CpuState::boot`)
        Engine {
            k,
            cfg,
            now: 0,
            events: EventQueue::new(n),
            many_tasks: false,
            next_hint: if n > 64 {
                vec![NextHint::default(); n]
            } else {
                Vec::new()
            },
            cpus,
            tasks: Vec::new(),
            ents: Vec::new(),
            chans: Vec::new(),
            jitter: crate::rng::Rng::stream(seed, 2),
            counters: RunCounters::default(),
            marks: Vec::new(),
            live_tasks: 0,
            mm_tasks: Vec::new(),
            chan_buffered: [0; 3],
            run_cpus,
            depth_free_bytes: (crate::costs::DEPTH_BASE_BYTES + 1).saturating_mul(run_cpus),
            depth_flat,
            violation: None,
            stall: (0, 0),
            phases: PhaseTimes::default(),
            idle_wait_clock: IdleWaitClock {
                idle_cpus,
                ..Default::default()
            },
            futexes: Vec::new(),
            lists: Vec::new(),
            locksets: Vec::new(),
            samples: Vec::new(),
            keep_samples: false,
            record_bytes: 0,
            sink: None,
            shared_sink: None,
            binned: Vec::new(),
            bins: Vec::new(),
            batch_lead: 0,
            stop_at: None,
            timers: timers::CpuTimers::new(n),
            trace: None,
            pick_note: trace::PickNote::default(),
            pthreads: pthread::Pthreads::default(),
            per_task: None,
            vm: None,
            numa: None,
            omp: omp::Omp::default(),
            affinity: Default::default(),
            forks: Default::default(),
            cpu_core: (0..n).map(|c| topo.place(c).core as u32).collect(),
            // every CPU boots idle
            core_busy: vec![0; topo.places().iter().map(|p| p.core + 1).max().unwrap_or(1)],
        }
    }

    /// Add a channel. `payload` channels count towards the run's
    /// `bytes_written`/`bytes_read` and `messages` (control channels, such as
    /// hackbench's ready/wake pipes, do not).
    pub fn add_channel(&mut self, kind: ChanKind, payload: bool) -> ChanId {
        let line = crate::channel::alloc_channel_lines(&mut self.k.lines, &self.k.costs, kind);
        let mut ch = Channel::new(kind, line);
        ch.payload = payload;
        ch.wake_writer = self.cfg.ipc.pipe_wake_writer;
        self.chans.push(ch);
        ChanId((self.chans.len() - 1) as u32)
    }

    /// The CPUs tasks may use.
    pub fn allowed(&self) -> &CpuMask {
        &self.cfg.allowed
    }

    /// sched_setaffinity before the run: task `t` may use only `cpus` (and
    /// only those of them the run may use). Returns false, changing
    /// nothing, when no CPU is left.
    pub fn set_cpus_allowed(&mut self, t: TaskId, cpus: &CpuMask) -> bool {
        let allowed = self.cfg.allowed.and(cpus);
        match allowed.first() {
            None => false,
            Some(first) => {
                let ti = t.idx();
                if !allowed.test(self.tasks[ti].cpu) {
                    self.tasks[ti].cpu = first;
                }
                self.k.tplace[ti].cpus_allowed = allowed;
                true
            }
        }
    }

    /// Declare a task. Tasks with `spawned == false` start runnable at time
    /// 0 on the first allowed CPU (placed like a fork from there).
    pub fn add_task(&mut self, spec: TaskSpec) -> TaskId {
        let id = TaskId(self.tasks.len() as u32);
        let weight = nice_to_weight(spec.nice);
        let mut ent = Entity::new(weight, self.cfg.eevdf.base_slice);
        ent.idle_policy = false;
        self.ents.push(ent);
        let first = self.cfg.allowed.first().unwrap_or(0);
        self.k.add_task(self.cfg.allowed.clone(), first);
        let mm = spec.mm as usize;
        if self.mm_tasks.len() <= mm {
            self.mm_tasks.resize(mm + 1, 0);
        }
        self.mm_tasks[mm] += 1;
        self.tasks.push(Task {
            spec,
            pc: Pc::default(),
            state: TaskState::Unborn,
            cpu: first,
            last_ran: None,
            ran_at_switch: 0,
            op_left: 0,
            bytes_left: 0,
            resumed: false,
            joiner: None,
            unreaped: 0,
            pelt: Pelt::new(0),
            op: Op::Exit,
            vars: [0; crate::task::TASK_VARS],
            held_lock: None,
        });
        self.many_tasks = self.tasks.len() >= Self::PREFETCH_TASKS_FROM;
        id
    }

    /// Every mark slot (`Op::Mark`).
    pub fn marks(&self) -> &[Option<Nanos>] {
        &self.marks
    }

    /// Time recorded by `Op::Mark(id)`.
    pub fn mark(&self, id: u32) -> Option<Nanos> {
        self.marks.get(id as usize).copied().flatten()
    }

    /// Current simulated time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// End the run at simulated time `t` even if tasks are still alive (a
    /// benchmark that runs for a duration).
    pub fn set_stop_at(&mut self, t: Nanos) {
        self.stop_at = Some(t);
    }

    /// Per-CPU context switches to a task.
    pub fn cpu_switches(&self) -> Vec<u64> {
        self.cpus.iter().map(|c| c.time.switches).collect()
    }

    /// Per-CPU (busy, idle) ns.
    pub fn cpu_times(&self) -> Vec<(Nanos, Nanos)> {
        self.cpus
            .iter()
            .map(|c| (c.time.busy_ns, c.time.idle_ns))
            .collect()
    }

    /// Channel byte totals (written, read).
    pub fn channel_bytes(&self) -> (u64, u64) {
        self.chans
            .iter()
            .fold((0, 0), |(w, r), c| (w + c.bytes_written, r + c.bytes_read))
    }

    /// PELT (load_avg, util_avg) of a task, as of its last update.
    pub fn task_signals(&self, t: TaskId) -> (u64, u64) {
        let p = &self.tasks[t.idx()].pelt;
        (p.load_avg, p.util_avg)
    }

    /// CPU time each task consumed (its sum_exec_runtime), by task id,
    /// including the stretch a running task is in now.
    pub fn task_exec_ns(&self) -> Vec<Nanos> {
        (0..self.tasks.len())
            .map(|t| {
                let e = &self.ents[t];
                let cpu = self.tasks[t].cpu;
                let running =
                    self.cpus[cpu].mode == Mode::Busy && self.cpus[cpu].rq.curr() == Some(t as u32);
                e.sum_exec
                    + if running {
                        self.now.saturating_sub(e.exec_start)
                    } else {
                        0
                    }
            })
            .collect()
    }

    /// Keep per-task placement counts (migrations, stages) from now on;
    /// off unless a workload asks, so other runs pay nothing for them.
    pub fn track_tasks(&mut self) {
        self.per_task.get_or_insert_with(Vec::new);
    }

    /// Per-task placement counts by task id (empty unless `track_tasks`).
    pub fn task_place_counts(&self) -> Vec<TaskPlaceCounts> {
        match &self.per_task {
            Some(v) => {
                let mut v = v.clone();
                v.resize(self.tasks.len(), TaskPlaceCounts::default());
                v
            }
            None => Vec::new(),
        }
    }

    fn task_counts(&mut self, t: TaskId) -> Option<&mut TaskPlaceCounts> {
        let v = self.per_task.as_mut()?;
        let i = t.idx();
        if v.len() <= i {
            v.resize(i + 1, TaskPlaceCounts::default());
        }
        Some(&mut v[i])
    }

    /// Tasks that have not exited.
    pub fn live_tasks(&self) -> usize {
        self.live_tasks
    }

    /// Run until every task has exited (or the stop time). Returns an error
    /// if `--check` found an invariant violation, the run deadlocked or it
    /// reached a bound (time limit, event limit).
    pub fn run(&mut self) -> Result<(), RunError> {
        self.trace_begin();
        let r = self.run_events();
        self.trace_end();
        r
    }

    /// The body of [`Self::run`].
    fn run_events(&mut self) -> Result<(), RunError> {
        // Start the initial tasks.
        for t in 0..self.tasks.len() {
            if !self.tasks[t].spec.spawned {
                self.live_tasks += 1;
                match self.tasks[t].spec.start_cpu {
                    Some(cpu) => self.enqueue_new_task_on(TaskId(t as u32), cpu),
                    None => {
                        let cpu = self.tasks[t].cpu;
                        self.wake_up_new_task(TaskId(t as u32), cpu);
                    }
                }
            }
        }
        let mut stopped = false;
        while let Some((t, ev)) = self.events.pop() {
            if self.live_tasks == 0 {
                break;
            }
            if self.stop_at.is_some_and(|s| t > s) {
                // a timed run ends here, whatever is still running
                self.now = self.stop_at.unwrap_or(t).max(self.now);
                stopped = true;
                break;
            }
            self.check_bounds(t)?;
            self.handle_event(t, ev)?;
            self.prefetch_next();
        }
        self.end_run(stopped)
    }

    /// Ask the hardware for the record of the CPU whose event probably
    /// comes next (its first two lines, what every event reads) and for
    /// that slot event's payload, which `pop` reads first: on a
    /// large machine it is far beyond the private caches, and its load
    /// would otherwise start the next event's chain of dependent misses
    /// (CPU, task, op, channel, line). On machines of more than 64 CPUs
    /// also for the task and channel that event will probably touch
    /// (`next_hint`), so that the chain's next links load in parallel with
    /// the first: engine 130.1 -> 123.7 ns per event at 1024 CPUs (mean of
    /// 5 alternating runs; docs/performance.md). Smaller machines skip it:
    /// their state stays in the first-level cache, and the hint costs
    /// instructions (the slot's and the CPU record's too: at 24 CPUs they
    /// cost 15 instructions an event, and without them bench-scale's
    /// kunpeng920-node run took 95.6 ns per event against 96.6, 25
    /// interleaved rounds). A hint only: it changes no state and cannot
    /// fault.
    #[inline]
    fn prefetch_next(&self) {
        if self.next_hint.is_empty() {
            return; // at most 64 CPUs
        }
        if let Some(c) = self.events.next_slot_hint() {
            self.events.prefetch_slot(c);
            if let Some(cpu) = self.cpus.get(c) {
                crate::prefetch::prefetch(cpu, 2);
            }
            if let Some(h) = self.next_hint.get(c) {
                if let Some(task) = self.tasks.get(h.task.idx()) {
                    crate::prefetch::prefetch(task, 2);
                }
                if let Some(ch) = self.chans.get(h.chan.idx()) {
                    crate::prefetch::prefetch(ch, 2);
                }
                if h.then != h.chan {
                    if let Some(ch) = self.chans.get(h.then.idx()) {
                        crate::prefetch::prefetch(ch, 1);
                    }
                }
            }
        }
    }

    /// The run's bounds for an event at `t`: time order, the simulated-time
    /// limit and the event limit (bare metal's `run` and a guest's step).
    #[inline]
    pub(super) fn check_bounds(&self, t: Nanos) -> Result<(), RunError> {
        debug_assert!(t >= self.now, "time went backwards");
        if t < self.now {
            return Err(InvariantError {
                time: t,
                what: "time went backwards".into(),
            }
            .into());
        }
        if t > self.cfg.time_limit {
            return Err(Bound::Time {
                limit: self.cfg.time_limit,
                alive: self.live_tasks,
            }
            .into());
        }
        if self.record_bytes > self.cfg.max_record_bytes {
            return Err(Bound::Memory {
                limit: self.cfg.max_record_bytes,
                now: self.now,
            }
            .into());
        }
        if self.counters.events >= self.cfg.max_events {
            return Err(Bound::Events {
                limit: self.cfg.max_events,
                now: self.now,
                alive: self.live_tasks,
            }
            .into());
        }
        Ok(())
    }

    /// Every `Progress::EVERY` events: the run stops when simulated time
    /// has not moved for `STALL_EVENTS` events (work that takes no time, as
    /// under a cost profile whose figures are all 0, would loop forever).
    #[cold]
    fn check_time_advances(&mut self, t: Nanos) -> Result<(), RunError> {
        if t != self.stall.0 {
            self.stall = (t, self.counters.events);
        } else if self.counters.events - self.stall.1
            >= STALL_EVENTS.max(16 * self.tasks.len() as u64)
        {
            return Err(Bound::Stalled {
                events: self.counters.events - self.stall.1,
                now: t,
            }
            .into());
        }
        Ok(())
    }

    /// Advance to `t` and handle `ev`: count it, publish progress, dispatch
    /// it, and report an invariant violation (`--check` every 64 events).
    #[inline]
    pub(super) fn handle_event(&mut self, t: Nanos, ev: Event) -> Result<(), RunError> {
        self.now = t;
        self.k.lines.now = t;
        self.counters.events += 1;
        if self.counters.events.is_multiple_of(Progress::EVERY) {
            if let Some(p) = &self.cfg.progress {
                p.publish(self.counters.events, t);
            }
            self.check_time_advances(t)?;
        }
        self.dispatch(ev);
        // tested before taken: `take` would store `None` back at every
        // event
        if self.violation.is_some() {
            if let Some(v) = self.violation.take() {
                return Err(v.into());
            }
        }
        self.take_fork_failure()?;
        if self.cfg.check && self.counters.events.is_multiple_of(64) {
            self.check_invariants()?;
        }
        Ok(())
    }

    /// The end of a run (bare metal's `run` or a guest's last step): tasks
    /// still blocked with nothing pending are a deadlock unless a timed run
    /// `stopped`; settle the accounting and make the final checks.
    pub(super) fn end_run(&mut self, stopped: bool) -> Result<(), RunError> {
        if self.live_tasks > 0 && !stopped {
            return Err(InvariantError {
                time: self.now,
                what: format!(
                    "deadlock: {} tasks blocked forever (lost wakeup?)",
                    self.live_tasks
                ),
            }
            .into());
        }
        self.finish_accounting();
        if self.cfg.check {
            self.check_invariants()?;
            self.check_final(stopped)?;
        }
        Ok(())
    }

    fn finish_accounting(&mut self) {
        let now = self.now;
        for c in 0..self.cpus.len() {
            self.account(c, now);
        }
        let tally = &self.k.lines.tally;
        self.counters.line_transfers = self.k.lines.transfers();
        self.counters.line_transfers_contended = tally.contended;
        self.counters.line_transfer_ns = tally.transfer_ns;
        self.counters.line_wait_ns = tally.wait_ns;
        self.counters.line_transfers_by = crate::cacheline::LinesMoved(self.k.lines.by_kind());
    }

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::SegmentDone { cpu, gen } => {
                let c = cpu as usize;
                if self.cpus[c].gen == gen && self.cpus[c].mode == Mode::Busy {
                    self.segment_done(c);
                }
            }
            Event::IdleExit { cpu, gen } => {
                let c = cpu as usize;
                if self.cpus[c].gen == gen && self.cpus[c].mode == Mode::LeavingIdle {
                    self.counters.idle_exits += 1;
                    self.set_mode(c, Mode::Busy);
                    self.continue_cpu(c);
                }
            }
            Event::Resched { cpu } => {
                // The IPI arrives: preempt user code if the resched is still
                // pending (it may have been honoured at a syscall return).
                let c = cpu as usize;
                if self.cpus[c].mode == Mode::Busy
                    && self.cpus[c].need_resched
                    && self.cpus[c].seg.user
                {
                    self.preempt_segment(c);
                }
            }
            Event::PollEnd { cpu, gen } => {
                let c = cpu as usize;
                if self.cpus[c].gen == gen {
                    self.poll_limit_reached(c);
                }
            }
            Event::VcpuHalt { cpu, gen } => {
                let c = cpu as usize;
                if self.cpus[c].gen == gen {
                    self.vm_halt(c);
                }
            }
            Event::Tick { cpu } => self.tick(cpu as usize),
            Event::Timer { task } => {
                let t = task.idx();
                if self.tasks[t].state == TaskState::Blocked(Block::Sleep) {
                    // The timer fires on the CPU that armed it; `current` is
                    // whatever that interrupt hit (record_wakee and wake_wide
                    // then read the interrupted task, as in the kernel).
                    let cpu = self.tasks[t].cpu;
                    let current = self.cpus[cpu]
                        .rq
                        .curr()
                        .map(TaskId)
                        .filter(|_| self.cpus[cpu].mode == Mode::Busy);
                    self.try_to_wake_up(task, cpu, current, wf::TTWU, true);
                }
            }
            Event::IlbKick { cpu } => self.ilb_kick_arrives(cpu as usize),
            Event::Stopper { src, dst } => self.stopper_wakes(src as usize, dst as usize),
            Event::NumaStopper { cpu } => self.numa_stopper_wakes(cpu as usize),
        }
    }
}

#[cfg(test)]
mod layout_tests {
    use std::mem::{offset_of, size_of};

    /// What a CPU's every event touches lies in the record's first two
    /// cache lines (on large machines the CPU array is far beyond the
    /// private caches, so each further line is a miss per event).
    #[test]
    fn hot_fields_share_two_lines() {
        type C = super::Cpu<crate::eevdf::CfsRq>;
        type R = crate::eevdf::CfsRq;
        let curr = offset_of!(C, rq) + offset_of!(R, curr);
        let ends = [
            offset_of!(C, gen) + 4,
            offset_of!(C, debt) + 8,
            offset_of!(C, mode) + size_of::<super::Mode>(),
            offset_of!(C, bal) + size_of::<super::CpuBalance>(),
            offset_of!(C, seg) + size_of::<super::SegmentClock>(),
            curr + size_of::<Option<u32>>(),
        ];
        for e in ends {
            assert!(e <= 128, "a hot field ends at byte {e}");
        }
    }

    /// The same for a task: what the start and the end of each of its ops
    /// read (op, pc, what is left of it, its state, program and mm).
    #[test]
    fn a_tasks_hot_fields_share_two_lines() {
        type T = super::Task;
        type S = crate::task::TaskSpec;
        let ends = [
            offset_of!(T, op) + size_of::<crate::task::Op>(),
            offset_of!(T, pc) + size_of::<crate::task::Pc>(),
            offset_of!(T, op_left) + 8,
            offset_of!(T, bytes_left) + 4,
            offset_of!(T, resumed) + 1,
            offset_of!(T, state) + size_of::<super::TaskState>(),
            offset_of!(T, spec) + offset_of!(S, program) + size_of::<crate::task::Program>(),
            offset_of!(T, spec) + offset_of!(S, mm) + 4,
        ];
        for e in ends {
            assert!(e <= 128, "a hot field ends at byte {e}");
        }
    }
}
