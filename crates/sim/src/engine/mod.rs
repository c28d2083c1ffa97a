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
//! Host/vCPU layer (later): a guest CPU is a vCPU that runs only while the
//! host schedules it. The hooks for that are `CpuState::vcpu_preempted` and
//! the per-CPU segment clock, which can be paused and resumed without
//! touching the scheduler model.

use crate::cacheline::LineTable;
use crate::channel::{ChanKind, Channel, IoResult, Wakes};
use crate::costs::MachineCosts;
use crate::eevdf::{nice_to_weight, CfsRq, EevdfParams, Entity};
use crate::event::{Event, EventQueue, Slot};
use crate::pelt::Pelt;
use crate::placement::{wf, Placement, PlacementStats, Stage, WakeEnv, WakeRequest};
use crate::rq::RunQueue;
use crate::state::{CpuState, LlcShared, RqIdleStats, TaskPlacement};
use crate::task::{ChanId, Op, Pc, TaskId, TaskSpec};
use crate::Nanos;
use topology::{CpuMask, SchedDomains, Topology};

/// Why a task is blocked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    Read(ChanId),
    Write(ChanId),
    Poll(ChanId),
    Sleep,
    Child,
    Join(TaskId),
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

struct Task {
    spec: TaskSpec,
    pc: Pc,
    state: TaskState,
    /// task_cpu(): the CPU whose run queue holds it, or held it last.
    cpu: usize,
    /// CPU it last ran on (for migration refill).
    last_ran: Option<usize>,
    /// Work left in the current Compute op.
    op_left: Nanos,
    /// Bytes left in the current Read/Write op.
    bytes_left: u32,
    /// The current op already paid its syscall entry (resumed after a block).
    resumed: bool,
    /// A task joining this one.
    joiner: Option<TaskId>,
    /// Exited children not yet reaped.
    unreaped: u32,
    pelt: Pelt,
    /// The op being executed (resolved by `start_op`).
    op: Op,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// In an idle state since the given time.
    Idle {
        since: Nanos,
        state: usize,
        tick_stopped: bool,
    },
    /// Leaving an idle state (IPI + exit latency).
    Waking,
    /// Running a segment.
    Busy,
}

struct Cpu<R> {
    rq: R,
    pelt: Pelt,
    gen: u32,
    mode: Mode,
    /// Kernel work owed, charged at the start of the next segment.
    debt: Nanos,
    need_resched: bool,
    /// Segment clock: start, work left at full speed at start, speed /1024.
    seg_start: Nanos,
    seg_work: Nanos,
    seg_speed: u64,
    /// Part of the segment's work that is debt (consumed first).
    seg_debt: Nanos,
    /// The segment is user compute (preemptible at once).
    seg_user: bool,
    /// The segment belongs to a task (false: kernel-only work).
    seg_task: Option<TaskId>,
    busy_ns: Nanos,
    idle_ns: Nanos,
    since: Nanos,
    /// mm of the last user task run here (lazy TLB: idle keeps it).
    last_mm: Option<u32>,
    /// Recent idle durations for the governor (average of the last 8).
    idle_hist: [Nanos; 8],
    idle_hist_pos: usize,
    tick_offset: Nanos,
    tick_armed: bool,
    /// SMT core index for speed updates.
    core_first: usize,
}

/// Counters of a run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RunCounters {
    /// Events processed.
    pub events: u64,
    /// Successful try_to_wake_up calls (including new tasks).
    pub wakeups: u64,
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
    /// Idle exits (IPI-kicked CPUs).
    pub idle_exits: u64,
    /// User compute performed, in ns of full-speed work (equals the sum of
    /// the programs' Compute ops: work is never lost or repeated).
    pub compute_work_ns: u64,
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
    /// Stop after this much simulated time (safety net).
    pub time_limit: Nanos,
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

/// The simulated machine.
pub struct Engine<'t, R: RunQueue = CfsRq> {
    topo: &'t Topology,
    sd: &'t SchedDomains,
    costs: MachineCosts,
    cfg: EngineConfig,
    policy: Box<dyn Placement>,
    now: Nanos,
    events: EventQueue,
    cpus: Vec<Cpu<R>>,
    cpu_state: Vec<CpuState>,
    idle_stats: Vec<RqIdleStats>,
    llc: Vec<LlcShared>,
    tasks: Vec<Task>,
    ents: Vec<Entity>,
    tplace: Vec<TaskPlacement>,
    chans: Vec<Channel>,
    lines: LineTable,
    /// Placement statistics.
    pub pstats: PlacementStats,
    /// Run counters.
    pub counters: RunCounters,
    marks: Vec<Option<Nanos>>,
    live_tasks: usize,
    tick_ns: Nanos,
    violation: Option<InvariantError>,
    /// Last LLC-level balance per (LLC, child group) (None: never).
    llc_last_balance: Vec<Vec<Option<Nanos>>>,
}

impl<'t, R: RunQueue> Engine<'t, R> {
    /// A machine with no tasks yet.
    pub fn new(
        topo: &'t Topology,
        sd: &'t SchedDomains,
        costs: MachineCosts,
        cfg: EngineConfig,
        policy: Box<dyn Placement>,
    ) -> Self {
        let n = topo.nr_cpus();
        let mut lines = LineTable::new(n);
        let tick_ns = 1_000_000_000 / costs.hz.max(1);
        let mut rng = crate::rng::Rng::stream(cfg.seed, 1);
        let cpus = (0..n)
            .map(|c| Cpu {
                rq: R::default(),
                pelt: Pelt::new(0),
                gen: 0,
                mode: Mode::Idle {
                    since: 0,
                    state: 0,
                    tick_stopped: true,
                },
                debt: 0,
                need_resched: false,
                seg_start: 0,
                seg_work: 0,
                seg_speed: 1024,
                seg_debt: 0,
                seg_user: false,
                seg_task: None,
                busy_ns: 0,
                idle_ns: 0,
                since: 0,
                last_mm: None,
                idle_hist: [0; 8],
                idle_hist_pos: 0,
                // sched_skew_tick: per-CPU tick phase
                tick_offset: rng.below(tick_ns),
                tick_armed: false,
                core_first: topo.smt_mask(c).first().unwrap_or(c),
            })
            .collect();
        let cpu_state = (0..n).map(|_| CpuState::boot(lines.alloc())).collect();
        let idle_stats = vec![RqIdleStats::boot(); n];
        let llc = (0..sd.nr_llcs())
            .map(|_| LlcShared {
                line: lines.alloc(),
                ..Default::default()
            })
            .collect::<Vec<_>>();
        let mut e = Engine {
            topo,
            sd,
            costs,
            cfg,
            policy,
            now: 0,
            events: EventQueue::new(n),
            cpus,
            cpu_state,
            idle_stats,
            llc,
            tasks: Vec::new(),
            ents: Vec::new(),
            tplace: Vec::new(),
            chans: Vec::new(),
            lines,
            pstats: PlacementStats::default(),
            counters: RunCounters::default(),
            marks: Vec::new(),
            live_tasks: 0,
            tick_ns,
            violation: None,
            llc_last_balance: Vec::new(),
        };
        // nr_busy_cpus starts at the span weight (kernel init), then every
        // CPU here starts idle with its tick stopped.
        for l in 0..e.llc.len() {
            e.llc[l].nr_busy_cpus = 0;
        }
        if e.policy.wants_llc_balance() {
            for l in 0..e.llc.len() {
                let groups =
                    e.sd.llc_ids()
                        .get(l)
                        .and_then(|&f| e.sd.sd_llc(f))
                        .map_or(0, |d| d.groups.len());
                e.llc_last_balance.push(vec![None; groups]);
                for g in 0..groups {
                    e.events.push(
                        0,
                        Event::LlcBalance {
                            llc: l as u32,
                            group: g as u32,
                        },
                    );
                }
            }
        }
        e
    }

    /// Add a channel. `payload` channels count towards the run's
    /// `bytes_written`/`bytes_read` and `messages` (control channels, such as
    /// hackbench's ready/wake pipes, do not).
    pub fn add_channel(&mut self, kind: ChanKind, payload: bool) -> ChanId {
        let line = self.lines.alloc();
        let mut ch = Channel::new(kind, line);
        ch.payload = payload;
        self.chans.push(ch);
        (self.chans.len() - 1) as ChanId
    }

    /// Declare a task. Tasks with `spawned == false` start runnable at time
    /// 0 on the first allowed CPU (placed like a fork from there).
    pub fn add_task(&mut self, spec: TaskSpec) -> TaskId {
        let id = self.tasks.len() as TaskId;
        let weight = nice_to_weight(spec.nice);
        let mut ent = Entity::new(weight, self.cfg.eevdf.base_slice);
        ent.idle_policy = false;
        self.ents.push(ent);
        let first = self.cfg.allowed.first().unwrap_or(0);
        self.tplace.push(TaskPlacement {
            cpus_allowed: self.cfg.allowed.clone(),
            recent_used_cpu: first,
            wakee_flips: 0,
            wakee_flip_decay_ts: 0,
            last_wakee: None,
            per_cpu_kthread: false,
            idle_policy: false,
            load_avg: 0,
            util_avg: 0,
        });
        self.tasks.push(Task {
            spec,
            pc: Pc::default(),
            state: TaskState::Unborn,
            cpu: first,
            last_ran: None,
            op_left: 0,
            bytes_left: 0,
            resumed: false,
            joiner: None,
            unreaped: 0,
            pelt: Pelt::new(0),
            op: Op::Exit,
        });
        id
    }

    /// Time recorded by `Op::Mark(id)`.
    pub fn mark(&self, id: u32) -> Option<Nanos> {
        self.marks.get(id as usize).copied().flatten()
    }

    /// Current simulated time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Per-CPU (busy, idle) ns.
    pub fn cpu_times(&self) -> Vec<(Nanos, Nanos)> {
        self.cpus.iter().map(|c| (c.busy_ns, c.idle_ns)).collect()
    }

    /// Channel byte totals (written, read).
    pub fn channel_bytes(&self) -> (u64, u64) {
        self.chans
            .iter()
            .fold((0, 0), |(w, r), c| (w + c.bytes_written, r + c.bytes_read))
    }

    /// PELT (load_avg, util_avg) of a task, as of its last update.
    pub fn task_signals(&self, t: TaskId) -> (u64, u64) {
        let p = &self.tasks[t as usize].pelt;
        (p.load_avg, p.util_avg)
    }

    /// Tasks that have not exited.
    pub fn live_tasks(&self) -> usize {
        self.live_tasks
    }

    /// Run until every task has exited (or the time limit). Returns an error
    /// if `--check` found an invariant violation or the run deadlocked.
    pub fn run(&mut self) -> Result<(), InvariantError> {
        // Start the initial tasks.
        for t in 0..self.tasks.len() {
            if !self.tasks[t].spec.spawned {
                self.live_tasks += 1;
                let cpu = self.tasks[t].cpu;
                self.wake_up_new_task(t as TaskId, cpu);
            }
        }
        while let Some((t, ev)) = self.events.pop() {
            if self.live_tasks == 0 {
                break;
            }
            debug_assert!(t >= self.now, "time went backwards");
            if t < self.now {
                return Err(InvariantError {
                    time: t,
                    what: "time went backwards".into(),
                });
            }
            if t > self.cfg.time_limit {
                return Err(InvariantError {
                    time: t,
                    what: format!(
                        "time limit of {} s reached with {} tasks alive",
                        self.cfg.time_limit / 1_000_000_000,
                        self.live_tasks
                    ),
                });
            }
            self.now = t;
            self.counters.events += 1;
            self.dispatch(ev);
            if let Some(v) = self.violation.take() {
                return Err(v);
            }
            if self.cfg.check && self.counters.events.is_multiple_of(64) {
                self.check_invariants()?;
            }
        }
        if self.live_tasks > 0 {
            return Err(InvariantError {
                time: self.now,
                what: format!(
                    "deadlock: {} tasks blocked forever (lost wakeup?)",
                    self.live_tasks
                ),
            });
        }
        self.finish_accounting();
        if self.cfg.check {
            self.check_invariants()?;
            self.check_final()?;
        }
        Ok(())
    }

    fn finish_accounting(&mut self) {
        let now = self.now;
        for c in 0..self.cpus.len() {
            self.account(c, now);
        }
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
                if self.cpus[c].gen == gen && self.cpus[c].mode == Mode::Waking {
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
                    && self.cpus[c].seg_user
                {
                    self.preempt_segment(c);
                }
            }
            Event::Tick { cpu } => self.tick(cpu as usize),
            Event::Timer { task } => {
                let t = task as usize;
                if self.tasks[t].state == TaskState::Blocked(Block::Sleep) {
                    // The timer fires on the CPU that armed it; `current` is
                    // whatever that interrupt hit (record_wakee and wake_wide
                    // then read the interrupted task, as in the kernel).
                    let cpu = self.tasks[t].cpu;
                    let current = self.cpus[cpu]
                        .rq
                        .curr()
                        .filter(|_| self.cpus[cpu].mode == Mode::Busy);
                    self.try_to_wake_up(task, cpu, current, wf::TTWU, true);
                }
            }
            Event::LlcBalance { llc, group } => self.llc_balance(llc as usize, group as usize),
        }
    }

    // ----- time accounting and SMT speed -------------------------------

    fn account(&mut self, c: usize, now: Nanos) {
        let cpu = &mut self.cpus[c];
        let d = now - cpu.since;
        if cpu.mode == Mode::Busy {
            cpu.busy_ns += d;
        } else {
            cpu.idle_ns += d;
        }
        cpu.since = now;
    }

    fn set_mode(&mut self, c: usize, mode: Mode) {
        let was_busy = self.cpus[c].mode == Mode::Busy;
        self.account(c, self.now);
        self.cpus[c].mode = mode;
        let is_busy = mode == Mode::Busy;
        if was_busy != is_busy && self.topo.threads_per_core() > 1 {
            self.retime_core(c);
        }
    }

    fn busy_threads(&self, c: usize) -> usize {
        self.topo
            .smt_mask(c)
            .iter()
            .filter(|&s| self.cpus[s].mode == Mode::Busy)
            .count()
    }

    /// The number of busy threads of `c`'s core changed: settle every
    /// sibling's running segment at its old speed and re-time it.
    fn retime_core(&mut self, c: usize) {
        let busy = self.busy_threads(c);
        let speed = self.costs.smt_speed_1024(busy);
        let first = self.cpus[c].core_first;
        let smt = self.topo.smt_mask(first).clone();
        for s in smt.iter() {
            if s == c || self.cpus[s].mode != Mode::Busy || self.cpus[s].seg_speed == speed {
                continue;
            }
            let done = self.settle_segment(s);
            if let Some(t) = self.cpus[s].seg_task {
                let op_left = &mut self.tasks[t as usize].op_left;
                *op_left = op_left.saturating_sub(done);
            }
            self.cpus[s].seg_speed = speed;
            self.arm_segment(s);
        }
        if self.cpus[c].mode == Mode::Busy {
            self.cpus[c].seg_speed = speed;
        }
    }

    /// Bring the segment clock of `c` to now: work done so far is removed.
    fn settle_segment(&mut self, c: usize) -> Nanos {
        let now = self.now;
        let cpu = &mut self.cpus[c];
        let elapsed = now - cpu.seg_start;
        let done = if cpu.seg_speed == 1024 {
            elapsed
        } else {
            elapsed * cpu.seg_speed / 1024
        }
        .min(cpu.seg_work);
        cpu.seg_work -= done;
        cpu.seg_start = now;
        let from_debt = done.min(cpu.seg_debt);
        cpu.seg_debt -= from_debt;
        if cpu.seg_user {
            self.counters.compute_work_ns += done - from_debt;
        }
        done - from_debt
    }

    fn arm_segment(&mut self, c: usize) {
        let cpu = &mut self.cpus[c];
        cpu.gen = cpu.gen.wrapping_add(1);
        // full speed (no busy SMT sibling) is the common case: no division
        let dur = if cpu.seg_speed == 1024 {
            cpu.seg_work
        } else {
            (cpu.seg_work * 1024).div_ceil(cpu.seg_speed.max(1))
        };
        let gen = cpu.gen;
        self.events.set_slot(
            c,
            Slot::Main,
            self.now + dur,
            Event::SegmentDone { cpu: c as u32, gen },
        );
    }

    fn start_segment(&mut self, c: usize, task: Option<TaskId>, work: Nanos, user: bool) {
        let speed = if self.topo.threads_per_core() > 1 {
            self.costs.smt_speed_1024(self.busy_threads(c))
        } else {
            1024
        };
        let cpu = &mut self.cpus[c];
        cpu.seg_start = self.now;
        cpu.seg_debt = cpu.debt;
        cpu.seg_work = work + cpu.debt;
        cpu.debt = 0;
        cpu.seg_speed = speed;
        cpu.seg_user = user;
        cpu.seg_task = task;
        self.arm_segment(c);
    }

    // ----- ticks ---------------------------------------------------------

    fn arm_tick(&mut self, c: usize) {
        if self.cpus[c].tick_armed {
            return;
        }
        self.cpus[c].tick_armed = true;
        let off = self.cpus[c].tick_offset;
        let next = ((self.now.saturating_sub(off)) / self.tick_ns + 1) * self.tick_ns + off;
        self.events.push(next, Event::Tick { cpu: c as u32 });
    }

    fn tick(&mut self, c: usize) {
        self.cpus[c].tick_armed = false;
        if self.cpus[c].mode != Mode::Busy {
            return; // NO_HZ idle: the tick stops
        }
        let now = self.now;
        if let Some(cur) = self.cpus[c].rq.curr() {
            let resched = self.cpus[c].rq.update_curr(&mut self.ents, now);
            self.update_task_pelt(cur as usize, true, true);
            if resched {
                self.cpus[c].need_resched = true;
                if self.cpus[c].seg_user {
                    self.preempt_segment(c);
                }
            }
        }
        self.update_rq_pelt(c);
        self.arm_tick(c);
    }

    // ----- PELT ----------------------------------------------------------

    fn update_rq_pelt(&mut self, c: usize) {
        let now = self.now;
        let cpu = &mut self.cpus[c];
        let running = cpu.rq.curr().is_some() && cpu.mode == Mode::Busy;
        cpu.pelt.update(
            now,
            cpu.rq.load_weight(),
            cpu.rq.nr_running() as u64,
            running,
            1,
        );
        let st = &mut self.cpu_state[c];
        st.load_avg = cpu.pelt.load_avg;
        st.util_avg = cpu.pelt.util_avg.min(1024);
        st.runnable_avg = cpu.pelt.runnable_avg;
    }

    /// Advance a task's PELT signals to now; `runnable`/`running` describe
    /// the interval that just elapsed, so callers update *before* changing
    /// the task's state (as the kernel's update_load_avg runs before the
    /// enqueue/dequeue it accounts for).
    fn update_task_pelt(&mut self, t: usize, runnable: bool, running: bool) {
        let w = self.ents[t].weight;
        self.tasks[t]
            .pelt
            .update(self.now, runnable as u64, runnable as u64, running, w);
        self.tplace[t].load_avg = self.tasks[t].pelt.load_avg;
        self.tplace[t].util_avg = self.tasks[t].pelt.util_avg;
    }

    // ----- wake-up -------------------------------------------------------

    /// Run a policy hook with a fresh view for `this_cpu`; returns the
    /// hook's result, the modelled cost and the run-queue probes it made.
    fn wake_env_call<T>(
        &mut self,
        this_cpu: usize,
        f: impl FnOnce(&mut dyn Placement, &mut WakeEnv) -> T,
    ) -> (T, Nanos, u32) {
        let mut env = WakeEnv {
            topo: self.topo,
            sd: self.sd,
            costs: &self.costs,
            cpus: &self.cpu_state,
            idle_stats: &mut self.idle_stats,
            llc: &mut self.llc,
            tasks: &mut self.tplace,
            lines: &mut self.lines,
            stats: &mut self.pstats,
            now: self.now,
            jiffies: self.now / self.tick_ns,
            hz: self.costs.hz,
            this_cpu,
            cost_ns: 0,
            probes: 0,
            vcpu_preempt_check: self.cfg.vcpu_preempt_check,
            sched_idle_as_idle: self.cfg.sched_idle_as_idle,
        };
        let r = f(self.policy.as_mut(), &mut env);
        (r, env.cost_ns, env.probes)
    }

    /// Place `t`; returns the CPU and the modelled cost of the decision
    /// (charged to `waker_cpu`).
    fn select_cpu(
        &mut self,
        t: TaskId,
        waker_cpu: usize,
        waker: Option<TaskId>,
        flags: u32,
    ) -> (usize, Nanos) {
        let prev = self.tasks[t as usize].cpu;
        let allowed_one = self.tplace[t as usize].cpus_allowed.weight() == 1;
        let (dec, cost) = if allowed_one {
            let cpu = self.tplace[t as usize].cpus_allowed.first().unwrap_or(prev);
            (
                crate::placement::Decision {
                    cpu,
                    stage: Stage::NoIdleFound,
                },
                0,
            )
        } else {
            let req = WakeRequest {
                task: t,
                prev_cpu: prev,
                wake_flags: flags,
                waker,
            };
            let (d, cost, probes) =
                self.wake_env_call(waker_cpu, |p, env| p.select_task_rq(env, req));
            let _ = self.pstats.probes_per_wakeup.record(probes as u64);
            self.pstats.probes += probes as u64;
            self.pstats.cost_ns += cost;
            (d, cost)
        };
        self.cpus[waker_cpu].debt += cost;
        let mut cpu = dec.cpu;
        if cpu >= self.topo.nr_cpus() || !self.tplace[t as usize].cpus_allowed.test(cpu) {
            // select_fallback_rq: an allowed CPU on prev's node, else any.
            self.pstats.fallback_rq += 1;
            let allowed = &self.tplace[t as usize].cpus_allowed;
            cpu = allowed
                .and(self.topo.node_mask(prev))
                .first()
                .or(allowed.first())
                .unwrap_or(prev);
        }
        self.pstats.stages[dec.stage as usize] += 1;
        self.pstats.digest(t, cpu);
        if waker.is_some() && flags & wf::TTWU != 0 {
            let where_ = if cpu == waker_cpu {
                0
            } else if self.topo.cluster_mask(waker_cpu).test(cpu) {
                1
            } else if self.sd.cpus_share_cache(waker_cpu, cpu) {
                2
            } else {
                3
            };
            self.pstats.wake_locality[where_] += 1;
        }
        (cpu, cost)
    }

    fn wake_up_new_task(&mut self, t: TaskId, parent_cpu: usize) {
        let ti = t as usize;
        self.tasks[ti].cpu = parent_cpu;
        // wake_up_new_task (4.16+): p->recent_used_cpu = task_cpu(p)
        self.tplace[ti].recent_used_cpu = parent_cpu;
        let (cpu, lead) = self.select_cpu(t, parent_cpu, None, wf::FORK);
        self.tasks[ti].cpu = cpu;
        self.tasks[ti].state = TaskState::Runnable;
        self.tasks[ti].pelt = Pelt::new(self.now);
        // init_entity_runnable_average: a new task starts with full load;
        // post_init_entity_util_avg gives it a share of the rq's spare util.
        let rq_util = self.cpu_state[cpu].util_avg;
        let rq_load = self.cpu_state[cpu].load_avg;
        let w = self.ents[ti].weight;
        let cap = (1024u64.saturating_sub(rq_util)) / 2;
        let util = if rq_util != 0 {
            (rq_util * w / (rq_load + 1)).min(cap)
        } else {
            cap
        };
        self.tasks[ti].pelt.load_avg = w;
        self.tasks[ti].pelt.util_avg = util;
        let div = self.tasks[ti].pelt.divider();
        self.tasks[ti].pelt.util_sum = util * div;
        self.tasks[ti].pelt.load_sum = div;
        self.tasks[ti].pelt.runnable_avg = util;
        self.tasks[ti].pelt.runnable_sum = util * div;
        self.counters.wakeups += 1;
        if cpu != parent_cpu {
            self.counters.migrations += 1;
        }
        self.activate(t, cpu, parent_cpu, true, lead, false);
    }

    /// try_to_wake_up: place a blocked task and enqueue it. `from_irq`: the
    /// wake-up comes from interrupt context (a timer) on `waker_cpu`, not
    /// from the task running there.
    fn try_to_wake_up(
        &mut self,
        t: TaskId,
        waker_cpu: usize,
        waker: Option<TaskId>,
        flags: u32,
        from_irq: bool,
    ) {
        let ti = t as usize;
        if !matches!(self.tasks[ti].state, TaskState::Blocked(_)) {
            return;
        }
        // The blocked time decays the signals (not runnable), then it wakes.
        self.update_task_pelt(ti, false, false);
        self.tasks[ti].state = TaskState::Runnable;
        self.tasks[ti].resumed = true;
        let prev = self.tasks[ti].cpu;
        let (cpu, lead) = self.select_cpu(t, waker_cpu, waker, flags | wf::TTWU);
        self.counters.wakeups += 1;
        if cpu != prev {
            self.counters.migrations += 1;
            self.update_rq_pelt(prev);
            let se = self.tasks[ti].pelt;
            self.cpus[prev].pelt.detach(&se, self.ents[ti].weight);
            self.sync_rq_state(prev);
            self.tasks[ti].cpu = cpu;
        }
        self.activate(t, cpu, waker_cpu, cpu != prev, lead, from_irq);
    }

    /// Enqueue `t` on `cpu` (ttwu_do_activate / wake_up_new_task tail) and
    /// kick or preempt the CPU. `lead` is the waker's modelled work before
    /// the IPI goes out (the placement scan, already charged to it).
    fn activate(
        &mut self,
        t: TaskId,
        cpu: usize,
        waker_cpu: usize,
        attach: bool,
        lead: Nanos,
        from_irq: bool,
    ) {
        let ti = t as usize;
        let now = self.now;
        self.update_rq_pelt(cpu);
        if attach {
            let se = self.tasks[ti].pelt;
            self.cpus[cpu].pelt.attach(&se, self.ents[ti].weight);
        }
        let initial = self.tasks[ti].pc.pc == 0 && self.tasks[ti].last_ran.is_none();
        // update_curr inside enqueue may find curr past its deadline
        // (update_deadline -> resched_curr)
        let deadline_resched =
            self.cpus[cpu]
                .rq
                .enqueue(&mut self.ents, t, now, initial, &self.cfg.eevdf);
        // The waker writes the target run queue (remote enqueue).
        let line = self.cpu_state[cpu].line;
        let c = self.lines.write(line, waker_cpu, self.topo, &self.costs);
        self.cpus[waker_cpu].debt += c;
        let lead = lead + c;
        // ttwu_do_activate: fold the idle period into avg_idle (wake-ups
        // only, not new tasks).
        let idle_stamp = self.cpu_state[cpu].idle_stamp;
        if idle_stamp != 0 && !initial {
            let st = &mut self.idle_stats[cpu];
            let delta = now.saturating_sub(idle_stamp);
            let max = 2 * st.max_idle_balance_cost;
            let avg = st.avg_idle as i64 + (delta as i64 - st.avg_idle as i64) / 8;
            st.avg_idle = (avg.max(0) as u64).min(max);
            st.wake_stamp = now / self.tick_ns;
            st.wake_avg_idle = st.avg_idle / 2;
            self.cpu_state[cpu].idle_stamp = 0;
        }
        self.sync_rq_state(cpu);
        match self.cpus[cpu].mode {
            Mode::Idle {
                since,
                state,
                tick_stopped,
            } => {
                // Kick: IPI (unless the wake happens on this CPU, e.g. its own
                // timer) plus the idle state's exit latency.
                let exit = match self.costs.idle_states.get(state) {
                    Some(s) if self.costs.charge_idle_exit => s.exit_latency_ns,
                    _ => 0,
                };
                let ipi = if waker_cpu != cpu {
                    self.costs.ipi_ns
                } else {
                    0
                };
                self.record_idle(cpu, now - since);
                self.account(cpu, now);
                self.cpus[cpu].mode = Mode::Waking;
                self.cpus[cpu].gen = self.cpus[cpu].gen.wrapping_add(1);
                self.cpu_state[cpu].idle_exit_latency = 0;
                if tick_stopped {
                    // nohz exit: set_cpu_sd_state_busy writes nr_busy_cpus
                    self.nohz_busy(cpu, true);
                }
                let gen = self.cpus[cpu].gen;
                self.events.set_slot(
                    cpu,
                    Slot::Main,
                    now + lead + ipi + exit,
                    Event::IdleExit {
                        cpu: cpu as u32,
                        gen,
                    },
                );
            }
            Mode::Waking => {}
            Mode::Busy => {
                // check_preempt_wakeup returns early when a resched is
                // already pending (no second check, no second IPI).
                if self.cpus[cpu].need_resched {
                    return;
                }
                let rq = &mut self.cpus[cpu].rq;
                let preempt = deadline_resched
                    || rq.curr().is_none()
                    || rq.check_preempt_wakeup(&mut self.ents, t, now, &self.cfg.eevdf);
                if !preempt {
                    return;
                }
                self.counters.preemptions += 1;
                // resched_curr: TIF_NEED_RESCHED is set at once, under the
                // rq lock; the IPI only makes a remote CPU notice it sooner.
                self.cpus[cpu].need_resched = true;
                if cpu != waker_cpu {
                    self.events.push(
                        now + lead + self.costs.ipi_ns,
                        Event::Resched { cpu: cpu as u32 },
                    );
                } else if from_irq && self.cpus[cpu].seg_user {
                    // a timer interrupt preempts user code on interrupt exit
                    self.preempt_segment(cpu);
                }
            }
        }
    }

    fn record_idle(&mut self, c: usize, dur: Nanos) {
        let cpu = &mut self.cpus[c];
        cpu.idle_hist[cpu.idle_hist_pos] = dur;
        cpu.idle_hist_pos = (cpu.idle_hist_pos + 1) % cpu.idle_hist.len();
    }

    fn nohz_busy(&mut self, c: usize, busy: bool) {
        let l = self.sd.llc_index(c);
        let line = self.llc[l].line;
        let cost = self.lines.write(line, c, self.topo, &self.costs);
        self.cpus[c].debt += cost;
        self.pstats.llc_shared_writes += 1;
        if busy {
            self.llc[l].nr_busy_cpus += 1;
        } else {
            self.llc[l].nr_busy_cpus = self.llc[l].nr_busy_cpus.saturating_sub(1);
        }
    }

    fn sync_rq_state(&mut self, c: usize) {
        let rq = &self.cpus[c].rq;
        let st = &mut self.cpu_state[c];
        st.nr_running = rq.nr_running();
        st.nr_idle_tasks = rq.nr_idle();
        st.load_avg = self.cpus[c].pelt.load_avg;
        st.util_avg = self.cpus[c].pelt.util_avg.min(1024);
    }

    // ----- running -------------------------------------------------------

    fn preempt_segment(&mut self, c: usize) {
        // Stop user compute now; the rest of the op stays with the task.
        let done = self.settle_segment(c);
        if let Some(t) = self.cpus[c].seg_task {
            let ti = t as usize;
            self.tasks[ti].op_left = self.tasks[ti].op_left.saturating_sub(done);
        }
        self.cpus[c].gen = self.cpus[c].gen.wrapping_add(1);
        self.events.clear_slot(c, Slot::Main);
        // The debt part not yet worked off goes back to the CPU.
        self.cpus[c].debt += self.cpus[c].seg_debt;
        self.cpus[c].seg_debt = 0;
        self.cpus[c].seg_work = 0;
        self.continue_cpu(c);
    }

    fn segment_done(&mut self, c: usize) {
        if self.cpus[c].seg_user {
            self.counters.compute_work_ns += self.cpus[c].seg_work - self.cpus[c].seg_debt;
        }
        self.cpus[c].seg_work = 0;
        self.cpus[c].seg_debt = 0;
        if let Some(t) = self.cpus[c].seg_task {
            self.apply_op(c, t);
        }
        self.continue_cpu(c);
    }

    /// Decide what `c` does next: keep running its task's next op, switch,
    /// or go idle.
    fn continue_cpu(&mut self, c: usize) {
        loop {
            let curr = self.cpus[c].rq.curr();
            let runnable =
                curr.is_some_and(|t| self.tasks[t as usize].state == TaskState::Runnable);
            if (!runnable || self.cpus[c].need_resched) && !self.schedule(c) {
                return; // went idle (or is working off debt first)
            }
            let t = self.cpus[c].rq.curr().expect("scheduled task");
            if self.start_op(c, t) {
                return;
            }
        }
    }

    /// __schedule: pick the next task on `c`. Returns false if the CPU went
    /// idle (or runs kernel debt before going idle).
    fn schedule(&mut self, c: usize) -> bool {
        let now = self.now;
        self.cpus[c].need_resched = false;
        let prev = self.cpus[c].rq.curr();
        // prev ran until now (a blocked or exited prev was updated then)
        if let Some(p) = prev.filter(|&p| self.tasks[p as usize].state == TaskState::Runnable) {
            self.update_task_pelt(p as usize, true, true);
        }
        let next = self.cpus[c].rq.pick_next(&self.ents, &self.cfg.eevdf);
        // next waited runnable until now
        if let Some(n) = next.filter(|&n| Some(n) != prev) {
            self.update_task_pelt(n as usize, true, false);
        }
        self.cpus[c].rq.set_next(&mut self.ents, next, now);
        self.update_rq_pelt(c);
        match next {
            None => {
                if self.cpus[c].debt > 0 {
                    // finish kernel work, then come back here
                    self.start_segment(c, None, 0, false);
                    return false;
                }
                self.enter_idle(c);
                false
            }
            Some(n) => {
                let ni = n as usize;
                self.cpu_state[c].curr_is_idle = false;
                if prev != Some(n) {
                    self.counters.context_switches += 1;
                    let mm = self.tasks[ni].spec.mm;
                    let mut cost = self.costs.ctx_switch_ns;
                    if self.cpus[c].last_mm != Some(mm) {
                        cost += self.costs.mm_switch_extra_ns;
                    }
                    self.cpus[c].last_mm = Some(mm);
                    if let Some(from) = self.tasks[ni].last_ran {
                        if from != c {
                            // cache refill of the task's working set
                            let d = self.topo.distance(from, c);
                            cost += self.tasks[ni].spec.footprint_lines as u64 * self.costs.c2c(d);
                        }
                    }
                    self.cpus[c].debt += cost;
                    // the CPU's own run-queue line is written by the switch
                    let line = self.cpu_state[c].line;
                    self.cpus[c].debt += self.lines.write(line, c, self.topo, &self.costs);
                }
                self.tasks[ni].last_ran = Some(c);
                if self.cpus[c].mode != Mode::Busy {
                    self.set_mode(c, Mode::Busy);
                }
                self.arm_tick(c);
                true
            }
        }
    }

    fn enter_idle(&mut self, c: usize) {
        let now = self.now;
        // menu governor, simplified: predict the average of recent idle
        // periods; stop the tick only if that is at least a tick.
        let h = &self.cpus[c].idle_hist;
        let predicted = h.iter().sum::<Nanos>() / h.len() as Nanos;
        let state = self.costs.pick_idle_state(predicted);
        let tick_stopped = predicted >= self.tick_ns;
        self.set_mode(
            c,
            Mode::Idle {
                since: now,
                state,
                tick_stopped,
            },
        );
        self.cpus[c].gen = self.cpus[c].gen.wrapping_add(1);
        self.events.clear_slot(c, Slot::Main);
        let st = &mut self.cpu_state[c];
        st.curr_is_idle = true;
        st.idle_stamp = now.max(1);
        st.idle_exit_latency = self
            .costs
            .idle_states
            .get(state)
            .map_or(0, |s| s.exit_latency_ns);
        let line = st.line;
        let _ = self.lines.write(line, c, self.topo, &self.costs);
        if tick_stopped {
            self.nohz_busy(c, false);
        }
        // set_next_task_idle -> update_idle_core
        // (its reads and the has_idle_cores write go through the line model;
        // the time is not charged: the CPU is on its way to idle)
        let (_, cost, probes) = self.wake_env_call(c, |p, env| p.cpu_enters_idle(env, c));
        self.pstats.probes += probes as u64;
        self.pstats.cost_ns += cost;
        self.cpus[c].debt = 0;
    }

    /// Start the current op of `t` on `c`. Returns true when a segment was
    /// started (the CPU is now busy until it ends); false when the op
    /// completed instantly and the caller should continue.
    fn start_op(&mut self, c: usize, t: TaskId) -> bool {
        let ti = t as usize;
        let prog_len = self.tasks[ti].spec.program.len();
        let task = &mut self.tasks[ti];
        let op = match task.pc.current(&task.spec.program) {
            Some(op) => op,
            None => {
                debug_assert!(prog_len > 0);
                Op::Exit
            }
        };
        // the op stays current until its effect is applied (apply_op)
        task.op = op;
        let costs = &self.costs;
        let resumed = task.resumed;
        let (work, user) = match op {
            Op::Compute(n) => {
                if task.op_left == 0 {
                    task.op_left = n;
                }
                (task.op_left, true)
            }
            Op::Write { chan, bytes } | Op::Read { chan, bytes } => {
                if task.bytes_left == 0 {
                    task.bytes_left = bytes;
                }
                let sys = match self.chans[chan as usize].kind {
                    ChanKind::Pipe => costs.pipe_syscall_ns,
                    ChanKind::UnixStream => costs.unix_syscall_ns,
                };
                let copy = costs.copy_ns(task.bytes_left as u64);
                (if resumed { copy } else { sys + copy }, false)
            }
            Op::Poll { .. } | Op::WaitChild | Op::Join { .. } | Op::Sleep(_) => {
                (if resumed { 0 } else { costs.syscall_ns }, false)
            }
            Op::Spawn { child } => {
                let proc_ = self.tasks[child as usize].spec.mm != self.tasks[ti].spec.mm;
                (
                    if proc_ {
                        self.costs.fork_ns
                    } else {
                        self.costs.thread_create_ns
                    },
                    false,
                )
            }
            Op::Exit => {
                // a thread shares its parent's mm; a process (or the
                // initial task) tears its own down
                let parent_mm = self.tasks[ti]
                    .spec
                    .parent
                    .map(|p| self.tasks[p as usize].spec.mm);
                let thread = parent_mm == Some(self.tasks[ti].spec.mm);
                let cost = if thread {
                    self.costs.thread_exit_ns
                } else {
                    self.costs.process_exit_ns
                };
                (cost, false)
            }
            Op::Mark(id) => {
                let id = id as usize;
                if self.marks.len() <= id {
                    self.marks.resize(id + 1, None);
                }
                self.marks[id] = Some(self.now);
                self.tasks[ti].pc.advance();
                return false;
            }
            Op::Loop(_) | Op::EndLoop => unreachable!("resolved by Pc::current"),
        };
        if work == 0 && self.cpus[c].debt == 0 {
            // effect-only op: apply at once
            self.apply_op(c, t);
            return false;
        }
        self.start_segment(c, Some(t), work, user);
        true
    }

    /// Apply the effect of `t`'s current op at the end of its segment.
    fn apply_op(&mut self, c: usize, t: TaskId) {
        let ti = t as usize;
        let task = &mut self.tasks[ti];
        match task.op {
            Op::Compute(_) => {
                task.op_left = 0;
                task.pc.advance();
            }
            Op::Write { chan, .. } => {
                let left = task.bytes_left;
                let line = self.chans[chan as usize].line;
                self.cpus[c].debt += self.lines.write(line, c, self.topo, &self.costs);
                let resumed = task.resumed;
                let (res, wakes) = self.chans[chan as usize].write(left, c as u32, resumed);
                match res {
                    IoResult::Done(n) => {
                        let payload = self.chans[chan as usize].payload;
                        if payload {
                            self.counters.bytes_written += n as u64;
                        }
                        let task = &mut self.tasks[ti];
                        task.bytes_left -= n;
                        if task.bytes_left == 0 {
                            task.pc.advance();
                            task.resumed = false;
                            self.counters.messages += payload as u64;
                        } else {
                            task.resumed = true; // retry the rest
                        }
                        self.do_wakes(c, t, chan, wakes);
                    }
                    IoResult::WouldBlock => {
                        self.chans[chan as usize].writers.push_back(t);
                        self.block(c, t, Block::Write(chan));
                    }
                }
            }
            Op::Read { chan, .. } => {
                let left = task.bytes_left;
                let line = self.chans[chan as usize].line;
                self.cpus[c].debt += self.lines.write(line, c, self.topo, &self.costs);
                let (topo, costs) = (self.topo, &self.costs);
                let mut pull_cost = 0;
                let resumed = task.resumed;
                let (res, wakes) = self.chans[chan as usize].read(left, resumed, |w, n| {
                    pull_cost += n.div_ceil(64) as u64 * costs.c2c(topo.distance(w as usize, c));
                });
                self.cpus[c].debt += pull_cost;
                match res {
                    IoResult::Done(n) => {
                        if self.chans[chan as usize].payload {
                            self.counters.bytes_read += n as u64;
                        }
                        let task = &mut self.tasks[ti];
                        task.bytes_left -= n;
                        task.resumed = false;
                        if task.bytes_left == 0 {
                            task.pc.advance();
                        }
                        self.do_wakes(c, t, chan, wakes);
                    }
                    IoResult::WouldBlock => {
                        self.chans[chan as usize].readers.push_back(t);
                        self.block(c, t, Block::Read(chan));
                    }
                }
            }
            Op::Poll { chan } => {
                let ch = &mut self.chans[chan as usize];
                ch.poll_usage = true;
                if ch.readable() {
                    let task = &mut self.tasks[ti];
                    task.pc.advance();
                    task.resumed = false;
                } else {
                    ch.pollers.push(t);
                    self.block(c, t, Block::Poll(chan));
                }
            }
            Op::Sleep(d) => {
                if task.resumed {
                    task.resumed = false;
                    task.pc.advance();
                } else {
                    self.events.push(self.now + d, Event::Timer { task: t });
                    self.block(c, t, Block::Sleep);
                }
            }
            Op::Spawn { child } => {
                task.pc.advance();
                self.live_tasks += 1;
                self.wake_up_new_task(child, c);
            }
            Op::WaitChild => {
                if task.unreaped > 0 {
                    task.unreaped -= 1;
                    task.resumed = false;
                    task.pc.advance();
                } else {
                    self.block(c, t, Block::Child);
                }
            }
            Op::Join { task: j } => {
                if self.tasks[j as usize].state == TaskState::Exited {
                    let task = &mut self.tasks[ti];
                    task.resumed = false;
                    task.pc.advance();
                } else {
                    self.tasks[j as usize].joiner = Some(t);
                    self.block(c, t, Block::Join(j));
                }
            }
            Op::Exit => self.do_exit(c, t),
            Op::Mark(_) | Op::Loop(_) | Op::EndLoop => unreachable!(),
        }
    }

    fn do_wakes(&mut self, c: usize, waker: TaskId, chan: ChanId, w: Wakes) {
        let ch = chan as usize;
        // Pipe and socket wake-ups are sync (wake_up_interruptible_sync_poll).
        let flags = wf::SYNC;
        if w.one_reader {
            if let Some(r) = self.chans[ch].readers.pop_front() {
                self.try_to_wake_up(r, c, Some(waker), flags, false);
            }
        }
        if w.all_readers {
            while let Some(r) = self.chans[ch].readers.pop_front() {
                self.try_to_wake_up(r, c, Some(waker), flags, false);
            }
        }
        if w.pollers && !self.chans[ch].pollers.is_empty() {
            let pollers = std::mem::take(&mut self.chans[ch].pollers);
            for p in pollers {
                self.try_to_wake_up(p, c, Some(waker), flags, false);
            }
        }
        if w.one_writer {
            if let Some(r) = self.chans[ch].writers.pop_front() {
                self.try_to_wake_up(r, c, Some(waker), flags, false);
            }
        }
        if w.all_writers {
            while let Some(r) = self.chans[ch].writers.pop_front() {
                self.try_to_wake_up(r, c, Some(waker), flags, false);
            }
        }
    }

    fn block(&mut self, c: usize, t: TaskId, why: Block) {
        let ti = t as usize;
        // it ran until now, then sleeps
        self.update_task_pelt(ti, true, true);
        self.tasks[ti].state = TaskState::Blocked(why);
        self.tasks[ti].resumed = false;
        self.update_rq_pelt(c);
        self.cpus[c]
            .rq
            .dequeue(&mut self.ents, t, self.now, &self.cfg.eevdf);
        self.sync_rq_state(c);
    }

    fn do_exit(&mut self, c: usize, t: TaskId) {
        let ti = t as usize;
        self.update_rq_pelt(c);
        self.cpus[c]
            .rq
            .dequeue(&mut self.ents, t, self.now, &self.cfg.eevdf);
        let se = self.tasks[ti].pelt;
        self.cpus[c].pelt.detach(&se, self.ents[ti].weight);
        self.tasks[ti].state = TaskState::Exited;
        self.sync_rq_state(c);
        self.live_tasks -= 1;
        if let Some(j) = self.tasks[ti].joiner.take() {
            // pthread_join: futex wake, not sync
            self.try_to_wake_up(j, c, Some(t), 0, false);
        }
        if let Some(p) = self.tasks[ti].spec.parent {
            let pi = p as usize;
            if self.tasks[pi].spec.mm != self.tasks[ti].spec.mm {
                self.tasks[pi].unreaped += 1;
                if self.tasks[pi].state == TaskState::Blocked(Block::Child) {
                    // do_notify_parent -> __wake_up_parent is a sync wake,
                    // but select_task_rq_fair drops WF_SYNC when current
                    // is exiting (PF_EXITING)
                    self.try_to_wake_up(p, c, Some(t), 0, false);
                }
            }
        }
    }

    // ----- periodic LLC balance (SIS_UTIL producer) -----------------------

    /// The periodic balance at the LLC level, one check per child group of
    /// the LLC domain per tick: should_we_balance lets the group's first
    /// idle CPU (else its first CPU) balance, when balance_interval (span
    /// weight ms, × busy_factor if that CPU is busy) has passed since the
    /// group last balanced. Until load balancing is modelled, the pass only
    /// runs the policy's hook (update_idle_cpu_scan for SIS_UTIL). The
    /// kernel re-checks on every tick of the balancing CPU or via nohz idle
    /// balance; here every group is checked at tick rate.
    fn llc_balance(&mut self, l: usize, g: usize) {
        let Some(dom) = self.sd.llc_ids().get(l).and_then(|&f| self.sd.sd_llc(f)) else {
            return;
        };
        let group = &dom.groups[g].span;
        let cpu = group
            .iter()
            .find(|&c| self.cpu_state[c].curr_is_idle && self.cpu_state[c].nr_running == 0)
            .or(group.first())
            .unwrap_or(0);
        let busy = self.cpus[cpu].mode == Mode::Busy;
        let interval_ms =
            dom.min_interval_ms.max(1) * if busy { dom.busy_factor as u64 } else { 1 };
        let due =
            self.llc_last_balance[l][g].is_none_or(|t| self.now >= t + interval_ms * 1_000_000);
        if due {
            self.llc_last_balance[l][g] = Some(self.now);
            // refresh the signals the balancer reads
            for c in dom.span.iter() {
                self.update_rq_pelt(c);
            }
            // Load balancing is not modelled yet, so the sweep's reads are
            // not charged (a kernel pays them with or without SIS_UTIL) and
            // are not placement cost; the nr_idle_scan write still lands on
            // the LLC line from this CPU, so later readers pay the transfer.
            let _ = self.wake_env_call(cpu, |p, env| p.llc_balance(env, cpu));
        }
        self.events.push(
            self.now + self.tick_ns,
            Event::LlcBalance {
                llc: l as u32,
                group: g as u32,
            },
        );
    }

    // ----- invariants ----------------------------------------------------

    /// Check the modelling invariants (DESIGN.md) on the current state.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        let err = |what: String| {
            Err(InvariantError {
                time: self.now,
                what,
            })
        };
        let mut on_rq = vec![0u32; self.tasks.len()];
        for (c, cpu) in self.cpus.iter().enumerate() {
            let mut n = cpu.rq.queued().len() as u32;
            for &t in cpu.rq.queued() {
                on_rq[t as usize] += 1;
            }
            if let Some(cur) = cpu.rq.curr() {
                if self.ents[cur as usize].on_rq {
                    on_rq[cur as usize] += 1;
                    n += 1;
                }
            }
            if n != cpu.rq.nr_running() {
                return err(format!(
                    "cpu {c}: nr_running {} but {n} tasks queued",
                    cpu.rq.nr_running()
                ));
            }
            if self.cpu_state[c].nr_running != cpu.rq.nr_running() {
                return err(format!("cpu {c}: placement view nr_running is stale"));
            }
            if cpu.rq.nr_running() > 0 && matches!(cpu.mode, Mode::Idle { .. }) {
                return err(format!(
                    "cpu {c}: idle with {} runnable tasks",
                    cpu.rq.nr_running()
                ));
            }
        }
        for (t, task) in self.tasks.iter().enumerate() {
            let runnable = task.state == TaskState::Runnable;
            if runnable && on_rq[t] != 1 {
                return err(format!("task {t} runnable but on {} run queues", on_rq[t]));
            }
            if !runnable && on_rq[t] != 0 {
                return err(format!("task {t} not runnable but queued"));
            }
            if runnable
                && !self.cpus[task.cpu].rq.queued().contains(&(t as u32))
                && self.cpus[task.cpu].rq.curr() != Some(t as u32)
            {
                return err(format!(
                    "task {t} is not on the run queue of task_cpu {}",
                    task.cpu
                ));
            }
        }
        let mut running = vec![false; self.tasks.len()];
        for cpu in &self.cpus {
            if let (Mode::Busy, Some(t)) = (cpu.mode, cpu.seg_task) {
                if std::mem::replace(&mut running[t as usize], true) {
                    return err(format!("task {t} runs on two CPUs"));
                }
            }
        }
        Ok(())
    }

    fn check_final(&self) -> Result<(), InvariantError> {
        let err = |what: String| {
            Err(InvariantError {
                time: self.now,
                what,
            })
        };
        let (w, r) = self.channel_bytes();
        let buffered: u64 = self.chans.iter().map(|c| c.buffered).sum();
        if w != r + buffered {
            return err(format!(
                "bytes written {w} != bytes read {r} + buffered {buffered}"
            ));
        }
        for (c, cpu) in self.cpus.iter().enumerate() {
            if cpu.busy_ns + cpu.idle_ns != self.now {
                return err(format!(
                    "cpu {c}: busy {} + idle {} != elapsed {}",
                    cpu.busy_ns, cpu.idle_ns, self.now
                ));
            }
        }
        for (t, task) in self.tasks.iter().enumerate() {
            if task.state != TaskState::Exited && task.state != TaskState::Unborn {
                return err(format!("task {t} never exited ({:?})", task.state));
            }
        }
        Ok(())
    }
}
