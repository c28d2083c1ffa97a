//! Fair-class scenarios: what the fair class's pick and pre-emption rules
//! decide on one CPU, in a real kernel and in the simulator's profile of it
//! (CFS before 6.6, `crates/sim/src/cfs.rs`; EEVDF from 6.6,
//! `crates/sim/src/eevdf.rs`). Each scenario runs natively in the guest
//! ([`crate::fair_runner`], threads named after their role) and as a
//! simulator workload ([`simulate`]); both sides become the same list of
//! switch and wake-up events ([`SchedEv`], from the tracefs `trace` file or
//! from the simulator's trace hooks) and one analysis ([`analyse`]) turns
//! it into the outcome.
//!
//! - `fair-pingpong`: two threads pinned to one CPU exchanging 1-byte
//!   messages through a pipe pair (each write wakes the partner with
//!   WF_SYNC, then the writer blocks reading). Outcome: switches per
//!   message and the share of switches in which the writer was pre-empted
//!   (prev_state R) before it blocked: check_preempt_wakeup (6.1) /
//!   check_preempt_wakeup_fair (6.12) on a wakee that slept one message.
//! - `fair-wake-short` / `fair-wake-long`: a busy loop on CPU c; a sleeper
//!   pinned to c runs 10 ms of CPU time, sleeps 1 ms / 200 ms and is woken
//!   by a futex from another CPU. Outcome: does the wakee pre-empt the busy loop at the wake-up
//!   (6.1: place_entity's sleeper credit of half sched_latency, then
//!   wakeup_preempt_entity against the wake-up granularity; 6.12:
//!   place_entity's lag, pick_eevdf with RUN_TO_PARITY), or wait for the
//!   busy loop's tick (check_preempt_tick / update_deadline).
//! - `fair-fork`: a busy loop on c; a parent pinned to c creates a thread
//!   (allowed on c only) and joins it. Outcome: who runs first after the
//!   fork (6.1: task_fork_fair + place_entity's START_DEBIT put the child
//!   a vslice after min_vruntime; 6.12: place_entity with
//!   PLACE_DEADLINE_INITIAL, half a slice of deadline), and how long the
//!   child waits.

use crate::error::OracleError;
use serde::Serialize;
use sim::engine::Engine;
use sim::rq::RunQueue;
use sim::task::{Op, TaskId, TaskSpec};
use sim::trace::{PrevState, Runner, TraceEvent, TraceSetup, TraceSink, TraceSlot};
use sim::workload::{Record, Report, Stop, Workload};
use sim::Nanos;
use topology::{CpuMask, Topology};

/// The fair-class scenarios: name, kernel functions exercised, shape.
pub const FAIR_SCENARIOS: &[(&str, &str, &str)] = &[
    ("fair-pingpong", "check_preempt_wakeup(_fair)", "two threads pinned to CPU c exchange 1-byte messages through a pipe pair (100 per round each way): switches per message, writers pre-empted before blocking"),
    ("fair-wake-short", "place_entity + wake-up preemption", "busy loop on c; a sleeper pinned to c runs 10 ms of CPU time, sleeps 1 ms and is woken by futex from CPU 0: does it pre-empt the busy loop at once?"),
    ("fair-wake-long", "place_entity + wake-up preemption", "as fair-wake-short with a 200 ms sleep (6.1: the sleeper credit of half sched_latency applies in full)"),
    ("fair-fork", "task_fork_fair / place_entity (new task)", "busy loop on c; a parent pinned to c creates a thread allowed on c only and joins it: who runs first after the fork, how long the child waits"),
];

/// Whether `name` is a fair-class scenario.
pub fn is_fair(name: &str) -> bool {
    FAIR_SCENARIOS.iter().any(|s| s.0 == name)
}

/// Messages each way per ping-pong round.
pub const PINGPONG_PER_ROUND: u64 = 100;
/// The short sleep, ns.
pub const SHORT_SLEEP_NS: Nanos = 1_000_000;
/// The long sleep, ns.
pub const LONG_SLEEP_NS: Nanos = 200_000_000;
/// What the sleeper runs after each wake-up before it sleeps again, ns of
/// its own CPU time (the guest spins on CLOCK_THREAD_CPUTIME_ID): long
/// enough that it is not a mostly-sleeping task. With a short run (0.1 ms)
/// a CFS sleeper falls behind the busy loop by the whole sleeper credit
/// (place_entity clamps it at min_vruntime - sched_latency/2) and pre-empts
/// after any sleep; after 10 ms of running it sleeps with a vruntime close
/// to the busy loop's, which is the case the short sleep is meant to test.
pub const SLEEPER_RUN_NS: Nanos = 10_000_000;
/// What a forked child runs before it exits, ns.
pub const CHILD_RUN_NS: Nanos = 20_000;
/// The parent's sleep between forks, ns.
pub const FORK_GAP_NS: Nanos = 5_000_000;
/// A wakee that runs within this much of its wake-up, as the first switch
/// on its CPU after it, replacing a runnable task, ran "at once" (wake-up
/// preemption). Under TCG the resched IPI to the busy vCPU takes 0.24-0.7
/// ms of guest time (kvm-8vcpu, 6.1 and 6.12 captures); the tick is 4 ms
/// at HZ=250 (Debian's kernels), and a busy loop that is not pre-empted at
/// the wake-up runs on to its slice's end (6-12 ms in the captures), so
/// the two are apart. A tick that happens to fall within 1 ms would be
/// counted as at once (at most a quarter of tick-driven switches).
pub const AT_ONCE_NS: Nanos = 1_000_000;

/// Which scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// fair-pingpong.
    PingPong,
    /// fair-wake-short / fair-wake-long.
    Wake,
    /// fair-fork.
    Fork,
}

/// One fair-class scenario on one machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FairSetup {
    /// Scenario name.
    pub name: String,
    /// Which scenario.
    pub kind: Kind,
    /// The CPU everything of interest runs on.
    pub cpu: usize,
    /// The waker's CPU (wake scenarios).
    pub other: usize,
    /// The sleep of a wake scenario, ns.
    pub sleep_ns: Nanos,
    /// Rounds (one warm-up round more is run and not counted).
    pub rounds: usize,
}

impl FairSetup {
    /// The thread names (comm) of the scenario's roles: busy loop,
    /// the two partners (ping and pong, sleeper and waker, parent and
    /// child).
    pub fn comms(&self) -> [&'static str; 3] {
        match (self.kind, self.name.as_str()) {
            (Kind::PingPong, _) => ["fp-none", "fp-ping", "fp-pong"],
            (Kind::Wake, "fair-wake-short") => ["fs-busy", "fs-sleeper", "fs-waker"],
            (Kind::Wake, _) => ["fl-busy", "fl-sleeper", "fl-waker"],
            (Kind::Fork, _) => ["ff-busy", "ff-parent", "ff-child"],
        }
    }

    /// `fair NAME cpu C other W rounds N`: the guest's header line.
    pub fn line(&self) -> String {
        format!(
            "fair {} cpu {} other {} rounds {}",
            self.name, self.cpu, self.other, self.rounds
        )
    }
}

/// The setup of fair scenario `name` on `t` with `rounds` rounds: CPU 1
/// (c) and CPU 0 (the waker's).
pub fn setup(name: &str, t: &Topology, rounds: usize) -> Result<FairSetup, OracleError> {
    if t.nr_cpus() < 2 {
        return Err(OracleError::Arg {
            flag: format!("scenario {name}"),
            why: format!("needs two CPUs; {} has one", t.name()),
        });
    }
    let (kind, sleep_ns) = match name {
        "fair-pingpong" => (Kind::PingPong, 0),
        "fair-wake-short" => (Kind::Wake, SHORT_SLEEP_NS),
        "fair-wake-long" => (Kind::Wake, LONG_SLEEP_NS),
        "fair-fork" => (Kind::Fork, 0),
        _ => {
            return Err(OracleError::Arg {
                flag: "scenario".into(),
                why: format!(
                    "unknown fair scenario {name:?} (valid: {})",
                    FAIR_SCENARIOS
                        .iter()
                        .map(|s| s.0)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
        }
    };
    Ok(FairSetup {
        name: name.to_string(),
        kind,
        cpu: 1,
        other: 0,
        sleep_ns,
        rounds: rounds.max(1),
    })
}

/// The most rounds a fair-scenario report may ask the simulator to run.
pub const MAX_ROUNDS: usize = 10_000;

/// Parse the guest's header lines (`fair NAME cpu C other W rounds N`).
pub fn parse_output(text: &str, t: &Topology) -> Result<Vec<FairSetup>, OracleError> {
    let mut out = Vec::new();
    for l in text.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.first() != Some(&"fair") {
            continue;
        }
        let bad = || OracleError::Report(format!("unreadable fair-scenario line {l:?}"));
        if w.len() != 8 || w[2] != "cpu" || w[4] != "other" || w[6] != "rounds" {
            return Err(bad());
        }
        let rounds: usize = w[7].parse().map_err(|_| bad())?;
        let (cpu, other): (usize, usize) = (
            w[3].parse().map_err(|_| bad())?,
            w[5].parse().map_err(|_| bad())?,
        );
        // the report comes from a file: its CPUs must be the machine's,
        // two different ones, and its rounds a count a run can hold
        let n = t.nr_cpus();
        if cpu >= n || other >= n || cpu == other || rounds == 0 || rounds > MAX_ROUNDS {
            return Err(OracleError::Report(format!(
                "fair-scenario line {l:?}: cpu and other must be two of the machine's {n} CPUs and rounds 1..={MAX_ROUNDS}"
            )));
        }
        let mut s = setup(w[1], t, rounds)?;
        s.cpu = cpu;
        s.other = other;
        out.push(s);
    }
    Ok(out)
}

/// A task in an event: its name and an id (the kernel's pid, the
/// simulator's task id; 0 for the idle task).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRef {
    /// comm.
    pub comm: String,
    /// pid or task id.
    pub id: u64,
}

/// A switch or a wake-up, from either side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchedEv {
    /// sched_switch on `cpu`.
    Switch {
        /// Time, ns.
        ts_ns: u64,
        /// The CPU.
        cpu: usize,
        /// The task leaving (the idle task included).
        prev: TaskRef,
        /// It was left runnable (prev_state R: pre-empted).
        prev_runnable: bool,
        /// The task entering.
        next: TaskRef,
    },
    /// sched_wakeup / sched_wakeup_new putting `task` on `cpu`.
    Wakeup {
        /// Time, ns.
        ts_ns: u64,
        /// The CPU it was put on (target_cpu).
        cpu: usize,
        /// The task.
        task: TaskRef,
        /// A new task (sched_wakeup_new).
        new: bool,
    },
}

impl SchedEv {
    fn ts(&self) -> u64 {
        match self {
            SchedEv::Switch { ts_ns, .. } | SchedEv::Wakeup { ts_ns, .. } => *ts_ns,
        }
    }
}

/// The switch and wake-up events of a tracefs `trace` file.
pub fn kernel_events(text: &str) -> Vec<SchedEv> {
    let mut out = Vec::new();
    for l in text.lines() {
        let Some(e) = crate::trace::parse_line(l) else {
            continue;
        };
        let f = |k: &str| e.fields.get(k).map(|s| s.trim().to_string());
        let n = |k: &str| f(k).and_then(|s| s.parse::<u64>().ok());
        let ts_ns = e.ts_us * 1000;
        match e.name.as_str() {
            "sched_switch" => {
                let (Some(pc), Some(pp), Some(st), Some(nc), Some(np)) = (
                    f("prev_comm"),
                    n("prev_pid"),
                    f("prev_state"),
                    f("next_comm"),
                    n("next_pid"),
                ) else {
                    continue;
                };
                out.push(SchedEv::Switch {
                    ts_ns,
                    cpu: e.cpu,
                    prev: TaskRef { comm: pc, id: pp },
                    // "R" or "R+" (TASK_REPORT_MAX: pre-empted)
                    prev_runnable: st.starts_with('R'),
                    next: TaskRef { comm: nc, id: np },
                });
            }
            "sched_wakeup" | "sched_wakeup_new" => {
                let (Some(c), Some(p), Some(cpu)) = (f("comm"), n("pid"), n("target_cpu")) else {
                    continue;
                };
                out.push(SchedEv::Wakeup {
                    ts_ns,
                    cpu: cpu as usize,
                    task: TaskRef { comm: c, id: p },
                    new: e.name == "sched_wakeup_new",
                });
            }
            _ => {}
        }
    }
    out
}

/// One wake-up (or fork) of the scenario's wakee and what followed on its CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WakeRound {
    /// How long the wakee slept: from its last switch-out asleep to the
    /// wake-up, ns (0 for a new task).
    pub slept_ns: u64,
    /// Wake-up to the wakee's first switch in on its CPU, ns.
    pub delay_ns: u64,
    /// The wakee's switch-in was the first switch on the CPU after the
    /// wake-up (nothing ran in between).
    pub first: bool,
    /// Comm of the task it replaced.
    pub prev: String,
    /// That task was left runnable (pre-empted).
    pub prev_runnable: bool,
    /// The busy loop ran between the wake-up and the wakee's first run
    /// (it was switched in, or it was the task the wakee replaced after
    /// another switch).
    pub busy_ran_before: bool,
    /// The first switch on the CPU after the wake-up switched the wakee in.
    pub first_next_is_wakee: bool,
    /// Comm of the task the first switch replaced, and whether it was left
    /// runnable.
    pub first_prev: String,
    /// See `first_prev`.
    pub first_prev_runnable: bool,
}

/// A scenario's outcome, the same fields from both sides.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Outcome {
    /// Ping-pong: messages sent (both ways), counted from the rounds.
    pub messages: u64,
    /// Ping-pong: switches on c away from a partner.
    pub switches: u64,
    /// Ping-pong: of those, the partner was left runnable (pre-empted).
    pub preempted: u64,
    /// Wake/fork: the wake-ups (forks) of the wakee seen on c, after the
    /// warm-up round.
    pub wakeups: usize,
    /// Of those, the wakee ran "at once": its switch-in was the first
    /// switch on c after the wake-up and within [`AT_ONCE_NS`], replacing
    /// a runnable task.
    pub at_once: usize,
    /// Fork: the child was the first to run on c after the fork.
    pub child_first: usize,
    /// Fork: the busy loop ran before the child's first run.
    pub busy_first: usize,
    /// Wake/fork: median and maximum of the delay to the wakee's first run, µs.
    pub median_delay_us: f64,
    /// See `median_delay_us`.
    pub max_delay_us: f64,
    /// Wake: the median sleep before the wake-ups, µs.
    pub median_sleep_us: f64,
    /// Per wake-up.
    pub rounds: Vec<WakeRound>,
}

impl Outcome {
    /// Switches per message (ping-pong).
    pub fn switches_per_message(&self) -> f64 {
        if self.messages == 0 {
            0.0
        } else {
            self.switches as f64 / self.messages as f64
        }
    }

    /// The verdict in a few words, the value compared between the sides.
    /// Ping-pong: switches per message (to two decimals); whether the
    /// writer is pre-empted is reported but not compared: it follows the
    /// pair's vruntime gap, which their creation and migration leave and
    /// which neither side controls (START_DEBIT placement of each thread,
    /// the renormalisation when it is pinned onto c). Wake: "pre-empts at
    /// wake-up" when at least 3/4 of the wake-ups ran at once, "waits for
    /// the tick" when at most 1/4 did, "mixed" between. Fork: who ran
    /// first after the fork in at least 3/4 of the forks.
    pub fn verdict(&self, kind: Kind) -> String {
        let share = |n: usize, of: usize| n as f64 / of.max(1) as f64;
        match kind {
            Kind::PingPong => format!("{:.2} switches/message", self.switches_per_message()),
            Kind::Wake => {
                let f = share(self.at_once, self.wakeups);
                if self.wakeups == 0 {
                    "no wake-ups".into()
                } else if f >= 0.75 {
                    "pre-empts at wake-up".into()
                } else if f <= 0.25 {
                    "waits for the busy loop's tick".into()
                } else {
                    "mixed".into()
                }
            }
            Kind::Fork => {
                if self.wakeups == 0 {
                    "no forks".into()
                } else if share(self.child_first, self.wakeups) >= 0.75 {
                    "child runs first".into()
                } else if share(self.busy_first, self.wakeups) >= 0.75 {
                    "busy loop runs first".into()
                } else {
                    "mixed".into()
                }
            }
        }
    }
}

/// The outcome of `s` from its events (either side). Events of other
/// threads are ignored; of the wakee's wake-ups (forks) on c, the last
/// `s.rounds` are counted (the warm-up round and start-up wake-ups come
/// before them).
pub fn analyse(s: &FairSetup, evs: &[SchedEv]) -> Outcome {
    let mut evs: Vec<&SchedEv> = evs.iter().collect();
    evs.sort_by_key(|e| e.ts());
    let [busy, a, b] = s.comms();
    let mut o = Outcome::default();
    match s.kind {
        Kind::PingPong => {
            o.messages = 2 * PINGPONG_PER_ROUND * s.rounds as u64;
            for e in &evs {
                if let SchedEv::Switch {
                    cpu,
                    prev,
                    prev_runnable,
                    ..
                } = e
                {
                    if *cpu == s.cpu && (prev.comm == a || prev.comm == b) {
                        o.switches += 1;
                        o.preempted += *prev_runnable as u64;
                    }
                }
            }
            // the warm-up round's messages are in the trace too
            o.messages += 2 * PINGPONG_PER_ROUND;
        }
        Kind::Wake | Kind::Fork => {
            let (wakee, new) = if s.kind == Kind::Wake {
                (a, false)
            } else {
                (b, true)
            };
            // when each task last left a CPU asleep: a wake-up's sleep
            let mut slept_at: std::collections::HashMap<u64, u64> = Default::default();
            for (i, e) in evs.iter().enumerate() {
                if let SchedEv::Switch {
                    ts_ns,
                    prev,
                    prev_runnable: false,
                    ..
                } = e
                {
                    slept_at.insert(prev.id, *ts_ns);
                }
                let SchedEv::Wakeup {
                    ts_ns,
                    cpu,
                    task,
                    new: n,
                } = e
                else {
                    continue;
                };
                // a new thread is cloned with its parent's comm and names
                // itself when it first runs (pthread_setname_np): match
                // either name, then follow its pid
                let named = task.comm == wakee || (new && task.comm == a);
                if !named || *n != new || *cpu != s.cpu {
                    continue;
                }
                let mut first: Option<(String, bool, bool)> = None;
                let mut busy_ran = false;
                for f in &evs[i + 1..] {
                    let SchedEv::Switch {
                        ts_ns: t2,
                        cpu: c2,
                        prev,
                        prev_runnable,
                        next,
                    } = f
                    else {
                        continue;
                    };
                    if *c2 != s.cpu {
                        continue;
                    }
                    let is_first = first.is_none();
                    if is_first {
                        first = Some((prev.comm.clone(), *prev_runnable, next.id == task.id));
                    }
                    if next.id == task.id {
                        if !is_first && prev.comm == busy {
                            busy_ran = true;
                        }
                        let (fp, fr, fnx) = first.clone().unwrap_or_default();
                        o.rounds.push(WakeRound {
                            slept_ns: slept_at
                                .get(&task.id)
                                .map_or(0, |&t0| ts_ns.saturating_sub(t0)),
                            delay_ns: t2.saturating_sub(*ts_ns),
                            first: is_first,
                            prev: prev.comm.clone(),
                            prev_runnable: *prev_runnable,
                            busy_ran_before: busy_ran,
                            first_next_is_wakee: fnx,
                            first_prev: fp,
                            first_prev_runnable: fr,
                        });
                        break;
                    }
                    if next.comm == busy {
                        busy_ran = true;
                    }
                }
            }
            // the last `rounds` wake-ups: before them come the warm-up
            // round and any start-up wake-up of the same task (the
            // simulator's sleeper starts with a sleep, its parent is a new
            // task on c)
            let extra = o.rounds.len().saturating_sub(s.rounds);
            o.rounds.drain(..extra);
            o.wakeups = o.rounds.len();
            for r in &o.rounds {
                if r.first && r.prev_runnable && r.delay_ns <= AT_ONCE_NS {
                    o.at_once += 1;
                }
                if r.first_next_is_wakee {
                    o.child_first += 1;
                }
                if r.busy_ran_before {
                    o.busy_first += 1;
                }
            }
            let mut sl: Vec<u64> = o.rounds.iter().map(|r| r.slept_ns).collect();
            sl.sort_unstable();
            if !sl.is_empty() {
                o.median_sleep_us = sl[sl.len() / 2] as f64 / 1e3;
            }
            let mut d: Vec<u64> = o.rounds.iter().map(|r| r.delay_ns).collect();
            d.sort_unstable();
            if !d.is_empty() {
                o.median_delay_us = d[d.len() / 2] as f64 / 1e3;
                o.max_delay_us = d[d.len() - 1] as f64 / 1e3;
            }
        }
    }
    o
}

// ---------------------------------------------------------------------------
// The simulator's side

/// The scenario as a simulator workload on the guest's machine.
pub struct FairWorkload {
    /// The setup.
    pub setup: FairSetup,
}

fn mask(cpu: usize) -> CpuMask {
    CpuMask::from_cpus([cpu])
}

fn spec(
    name: &str,
    program: Vec<Op>,
    mm: u32,
    cpu: usize,
    spawned: bool,
    parent: Option<TaskId>,
) -> TaskSpec {
    TaskSpec {
        name: name.to_string(),
        program: program.into(),
        mm,
        parent,
        spawned,
        start_cpu: if spawned { None } else { Some(cpu) },
        nice: 0,
        footprint_lines: 0,
    }
}

impl FairWorkload {
    /// Simulated time the run needs.
    fn horizon(&self) -> Nanos {
        let s = &self.setup;
        let n = s.rounds as u64 + 1;
        match s.kind {
            Kind::PingPong => 0,
            // a round: the sleep, at most a slice or two of waiting, the run
            Kind::Wake => 20_000_000 + n * (s.sleep_ns + 60_000_000),
            Kind::Fork => 20_000_000 + n * (FORK_GAP_NS + 60_000_000),
        }
    }
}

impl Workload for FairWorkload {
    fn name(&self) -> &'static str {
        "fair-scenario"
    }

    fn build<R: RunQueue>(&self, e: &mut Engine<'_, R>, _first_cpu: usize) {
        let s = &self.setup;
        let on_c = mask(s.cpu);
        let [busy, a, b] = s.comms();
        let n = (s.rounds + 1) as u32;
        let busy_loop = |e: &mut Engine<'_, R>| {
            let t = e.add_task(spec(
                busy,
                vec![Op::Compute(u64::MAX / 4), Op::Exit],
                1,
                s.cpu,
                false,
                None,
            ));
            e.set_cpus_allowed(t, &on_c);
        };
        match s.kind {
            Kind::PingPong => {
                // the pipe pair: ping writes to p and reads q, pong the reverse
                let p = e.add_channel(sim::channel::ChanKind::Pipe, false);
                let q = e.add_channel(sim::channel::ChanKind::Pipe, false);
                let per = PINGPONG_PER_ROUND as u32 * n;
                let ping = vec![
                    Op::Loop(per),
                    Op::Write { chan: p, bytes: 1 },
                    Op::Read { chan: q, bytes: 1 },
                    Op::EndLoop,
                    Op::Exit,
                ];
                let pong = vec![
                    Op::Loop(per),
                    Op::Read { chan: p, bytes: 1 },
                    Op::Write { chan: q, bytes: 1 },
                    Op::EndLoop,
                    Op::Exit,
                ];
                let t1 = e.add_task(spec(a, ping, 1, s.cpu, false, None));
                let t2 = e.add_task(spec(b, pong, 1, s.cpu, false, None));
                e.set_cpus_allowed(t1, &on_c);
                e.set_cpus_allowed(t2, &on_c);
            }
            Kind::Wake => {
                busy_loop(e);
                // f: the sleeper's wake-up; g: "the sleeper is about to
                // sleep", which the waker waits for (the guest's waker
                // polls /proc for state S)
                let f = e.add_futex();
                let g = e.add_futex();
                let sleeper = vec![
                    Op::Sleep(5_000_000),
                    Op::Loop(n),
                    Op::FutexPost(g),
                    Op::FutexWait(f),
                    Op::Compute(SLEEPER_RUN_NS),
                    Op::EndLoop,
                    Op::Exit,
                ];
                let waker = vec![
                    Op::FutexSet {
                        futex: f,
                        blocked: true,
                    },
                    Op::FutexSet {
                        futex: g,
                        blocked: true,
                    },
                    Op::Loop(n),
                    Op::FutexWait(g),
                    Op::Sleep(s.sleep_ns),
                    Op::FutexPost(f),
                    Op::EndLoop,
                    Op::Exit,
                ];
                let ts = e.add_task(spec(a, sleeper, 1, s.cpu, false, None));
                e.set_cpus_allowed(ts, &on_c);
                let tw = e.add_task(spec(b, waker, 1, s.other, false, None));
                e.set_cpus_allowed(tw, &mask(s.other));
            }
            Kind::Fork => {
                busy_loop(e);
                let parent_id = e.nr_tasks() as u32;
                let mut prog = vec![Op::Sleep(20_000_000)];
                for k in 0..n {
                    let child = TaskId(parent_id + 1 + k);
                    prog.extend([
                        Op::Sleep(FORK_GAP_NS),
                        Op::Spawn { child },
                        Op::Join { task: child },
                    ]);
                }
                prog.push(Op::Exit);
                let tp = e.add_task(spec(a, prog, 1, s.cpu, false, None));
                e.set_cpus_allowed(tp, &on_c);
                for _ in 0..n {
                    let tc = e.add_task(spec(
                        b,
                        vec![Op::Compute(CHILD_RUN_NS), Op::Exit],
                        1,
                        s.cpu,
                        true,
                        Some(tp),
                    ));
                    e.set_cpus_allowed(tc, &on_c);
                }
            }
        }
    }

    fn stop(&self) -> Stop {
        match self.setup.kind {
            Kind::PingPong => Stop::AllExited,
            _ => Stop::At(self.horizon()),
        }
    }

    fn report(&self, _rec: &Record) -> Report {
        Report::default()
    }
}

/// A trace sink keeping switches and wake-ups as [`SchedEv`].
#[derive(Default)]
struct Collect {
    names: Vec<String>,
    evs: Vec<SchedEv>,
}

impl Collect {
    fn task(&self, id: TaskId) -> TaskRef {
        TaskRef {
            comm: self.names.get(id.idx()).cloned().unwrap_or_default(),
            id: id.0 as u64 + 1,
        }
    }
}

impl TraceSink for Collect {
    fn begin(&mut self, setup: &TraceSetup) {
        self.names = setup.tasks.iter().map(|t| t.name.clone()).collect();
    }
    fn event(&mut self, now: Nanos, ev: &TraceEvent) {
        let idle = TaskRef {
            comm: "swapper".into(),
            id: 0,
        };
        match *ev {
            TraceEvent::Switch { cpu, prev, next } => {
                let (p, runnable) = match prev {
                    Some((t, st)) => (self.task(t), st == PrevState::Runnable),
                    None => (idle.clone(), false),
                };
                let n = match next {
                    Runner::Task(t) => self.task(t),
                    Runner::Idle => idle,
                    Runner::Stopper => TaskRef {
                        comm: "migration".into(),
                        id: 0,
                    },
                };
                self.evs.push(SchedEv::Switch {
                    ts_ns: now,
                    cpu: cpu as usize,
                    prev: p,
                    prev_runnable: runnable,
                    next: n,
                });
            }
            TraceEvent::Wakeup {
                task,
                target_cpu,
                new,
                ..
            } => {
                let t = self.task(task);
                self.evs.push(SchedEv::Wakeup {
                    ts_ns: now,
                    cpu: target_cpu as usize,
                    task: t,
                    new,
                });
            }
            _ => {}
        }
    }
    fn end(&mut self, _now: Nanos) {}
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// Run `s` in the simulator on `t` with kernel profile `kernel` (HZ 250,
/// Debian's; the costs of `cost_machine`'s preset, or the default
/// profile's): its switch and wake-up events.
pub fn simulate_events(
    t: &Topology,
    s: &FairSetup,
    kernel: &str,
    cost_machine: Option<&str>,
) -> Result<Vec<SchedEv>, OracleError> {
    let f = sim::placement::linux::Features::kernel(kernel).map_err(|e| OracleError::Arg {
        flag: "--sim-kernel".into(),
        why: e.to_string(),
    })?;
    simulate_events_with(t, s, f, cost_machine)
}

/// [`simulate_events`] with the profile's features given (overrides applied).
pub fn simulate_events_with(
    t: &Topology,
    s: &FairSetup,
    f: sim::placement::linux::Features,
    cost_machine: Option<&str>,
) -> Result<Vec<SchedEv>, OracleError> {
    let mut costs = sim::costs::MachineCosts::for_machine(cost_machine.unwrap_or(t.name()));
    costs.hz = 250;
    let slot = TraceSlot::new(Box::<Collect>::default());
    let opt = sim::run::SimOptions {
        policy: sim::run::PolicyChoice::Linux(Box::new(f)),
        costs_profile: Some(costs),
        trace: Some(slot.clone()),
        numa_balancing: Some(false),
        ..Default::default()
    };
    let w = FairWorkload { setup: s.clone() };
    sim::run::simulate(t, &w, &opt).map_err(|e| OracleError::Arg {
        flag: format!("scenario {}", s.name),
        why: format!("the simulator: {e}"),
    })?;
    let sink = slot
        .take()
        .ok_or_else(|| OracleError::Io("the simulator kept its trace sink".into()))?;
    let c = sink
        .into_any()
        .downcast::<Collect>()
        .map_err(|_| OracleError::Io("the simulator's trace sink changed type".into()))?;
    Ok(c.evs)
}

/// The simulator's outcome of `s`.
pub fn simulate(
    t: &Topology,
    s: &FairSetup,
    kernel: &str,
    cost_machine: Option<&str>,
) -> Result<Outcome, OracleError> {
    Ok(analyse(s, &simulate_events(t, s, kernel, cost_machine)?))
}

/// One scenario's comparison.
#[derive(Clone, Debug, Serialize)]
pub struct FairRow {
    /// The setup.
    pub setup: FairSetup,
    /// The simulator's profile.
    pub sim_kernel: String,
    /// The kernel's outcome (from the trace).
    pub kernel: Outcome,
    /// The simulator's.
    pub sim: Outcome,
    /// The kernel's verdict.
    pub kernel_verdict: String,
    /// The simulator's.
    pub sim_verdict: String,
    /// Whether the verdicts are the same.
    pub agree: bool,
    /// Wake scenarios whose sleep in the kernel (the median from the
    /// trace) was more than a quarter longer or shorter than the nominal
    /// one: the simulator again with the kernel's sleep, and its verdict.
    pub sim_at_kernel_sleep: Option<(u64, Outcome, String)>,
}

/// Compare the kernel's trace with the simulator for every setup.
pub fn compare(
    t: &Topology,
    setups: &[FairSetup],
    trace_text: &str,
    kernel: &str,
    cost_machine: Option<&str>,
) -> Result<Vec<FairRow>, OracleError> {
    let evs = kernel_events(trace_text);
    let mut rows = Vec::new();
    for s in setups {
        let k = analyse(s, &evs);
        let m = simulate(t, s, kernel, cost_machine)?;
        let (kv, sv) = (k.verdict(s.kind), m.verdict(s.kind));
        let ks = (k.median_sleep_us * 1e3) as u64;
        let sim_at_kernel_sleep = if s.kind == Kind::Wake
            && k.wakeups > 0
            && (ks as f64 - s.sleep_ns as f64).abs() > 0.25 * s.sleep_ns as f64
        {
            let s2 = FairSetup {
                sleep_ns: ks,
                ..s.clone()
            };
            let m2 = simulate(t, &s2, kernel, cost_machine)?;
            let v2 = m2.verdict(s.kind);
            Some((ks, m2, v2))
        } else {
            None
        };
        rows.push(FairRow {
            sim_at_kernel_sleep,
            setup: s.clone(),
            sim_kernel: kernel.to_string(),
            agree: kv == sv,
            kernel_verdict: kv,
            sim_verdict: sv,
            kernel: k,
            sim: m,
        });
    }
    Ok(rows)
}

fn detail(kind: Kind, o: &Outcome) -> String {
    match kind {
        Kind::PingPong => format!(
            "{} switches / {} msgs, {} pre-empted",
            o.switches, o.messages, o.preempted
        ),
        Kind::Wake => format!(
            "{}/{} at once, delay median {:.0} us max {:.0} us, slept {:.0} us",
            o.at_once, o.wakeups, o.median_delay_us, o.max_delay_us, o.median_sleep_us
        ),
        Kind::Fork => format!(
            "child first {}/{}, busy first {}/{}, child delay median {:.0} us",
            o.child_first, o.wakeups, o.busy_first, o.wakeups, o.median_delay_us
        ),
    }
}

/// The fair-class table.
pub fn table(rows: &[FairRow]) -> String {
    let mut out = String::new();
    for r in rows {
        out.push_str(&format!(
            "{:<16} {}\n  kernel:    {:<24} {}\n  simulator: {:<24} {}\n",
            r.setup.name,
            if r.agree { "agree" } else { "DISAGREE" },
            r.kernel_verdict,
            detail(r.setup.kind, &r.kernel),
            r.sim_verdict,
            detail(r.setup.kind, &r.sim),
        ));
        if let Some((ns, o, v)) = &r.sim_at_kernel_sleep {
            out.push_str(&format!(
                "  simulator with the kernel's sleep ({:.0} us): {:<24} {}\n",
                *ns as f64 / 1e3,
                v,
                detail(r.setup.kind, o)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/fair")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    fn kvm() -> Topology {
        topology::preset("kvm-8vcpu").unwrap()
    }

    #[test]
    fn wake_rounds_from_a_trace() {
        let s = setup("fair-wake-short", &kvm(), 3).unwrap();
        let evs = kernel_events(&fixture("wake-short.txt"));
        assert_eq!(evs.len(), 12);
        let o = analyse(&s, &evs);
        // the warm-up round is dropped; rounds 1 (at once), 2 (tick), 3 (a
        // kworker first)
        assert_eq!((o.wakeups, o.at_once), (3, 1));
        assert_eq!(o.rounds[0].delay_ns, 40_000);
        assert!(o.rounds[0].first && o.rounds[0].prev_runnable);
        assert_eq!(o.rounds[1].delay_ns, 2_900_000);
        assert!(o.rounds[1].first && o.rounds[1].prev_runnable);
        assert!(!o.rounds[2].first);
        assert_eq!(o.rounds[2].prev, "kworker/1:1");
        assert_eq!(o.median_delay_us, 50.0);
        assert_eq!(o.max_delay_us, 2900.0);
        assert_eq!(o.verdict(Kind::Wake), "mixed");
    }

    #[test]
    fn forks_from_a_trace() {
        let s = setup("fair-fork", &kvm(), 2).unwrap();
        let o = analyse(&s, &kernel_events(&fixture("fork.txt")));
        assert_eq!(o.wakeups, 2);
        // fork 1: parent blocks, busy loop, child 12.02 ms later
        assert!(!o.rounds[0].first_next_is_wakee && o.rounds[0].busy_ran_before);
        assert_eq!(o.rounds[0].first_prev, "ff-parent");
        assert!(!o.rounds[0].first_prev_runnable);
        assert_eq!(o.rounds[0].delay_ns, 12_020_000);
        // fork 2: the child pre-empts its parent
        assert!(o.rounds[1].first_next_is_wakee && o.rounds[1].first_prev_runnable);
        assert_eq!((o.child_first, o.busy_first), (1, 1));
        assert_eq!(o.verdict(Kind::Fork), "mixed");
    }

    #[test]
    fn pingpong_from_a_trace() {
        let s = setup("fair-pingpong", &kvm(), 1).unwrap();
        let o = analyse(&s, &kernel_events(&fixture("pingpong.txt")));
        assert_eq!((o.switches, o.preempted), (4, 1));
        assert_eq!(o.messages, 400);
        assert_eq!(o.verdict(Kind::PingPong), "0.01 switches/message");
    }

    #[test]
    fn header_lines_and_setups() {
        let t = kvm();
        let s = setup("fair-wake-long", &t, 7).unwrap();
        assert_eq!((s.cpu, s.other, s.sleep_ns), (1, 0, LONG_SLEEP_NS));
        let text = format!(
            "scenario fair-wake-long\n{}\nround 1 waker 0 prev 1 chosen 1\n",
            s.line()
        );
        assert_eq!(parse_output(&text, &t).unwrap(), vec![s]);
        assert!(parse_output("fair fair-fork cpu x", &t).is_err());
        assert!(setup("fair-nope", &t, 1).is_err());
        let one = topology::machine("smp:cores=1").unwrap();
        let e = setup("fair-fork", &one, 1).unwrap_err().to_string();
        assert!(e.contains("needs two CPUs"), "{e}");
    }

    /// The simulator's outcomes on the guest's machine of `kernel run
    /// --machine kvm-8vcpu` (8 CPUs: sched_latency 24 ms, wake-up
    /// granularity 4 ms, EEVDF base slice 3 ms), 10 rounds. These are what
    /// the models say; a change of the fair class's rules shows here.
    fn sim(name: &str, kernel: &str) -> Outcome {
        let t = kvm();
        let s = setup(name, &t, 10).unwrap();
        simulate(&t, &s, kernel, Some("kvm-8vcpu")).unwrap()
    }

    #[test]
    fn simulated_pingpong_is_one_switch_per_message() {
        for k in ["linux-6.1", "linux-6.12"] {
            let o = sim("fair-pingpong", k);
            assert_eq!(o.messages, 2200, "{k}");
            // the two start-up switches come on top
            assert!((2200..=2202).contains(&o.switches), "{k}: {o:?}");
            assert_eq!(o.verdict(Kind::PingPong), "1.00 switches/message");
        }
    }

    #[test]
    fn simulated_short_sleeper() {
        // 6.1 (CFS): after 10 ms of running its vruntime is within the
        // wake-up granularity of the busy loop's; check_preempt_wakeup
        // does not pre-empt, the busy loop runs on to check_preempt_tick
        let o = sim("fair-wake-short", "linux-6.1");
        assert_eq!(o.wakeups, 10);
        assert!(o.at_once <= 1, "{o:?}");
        assert!(o.median_delay_us > 4000.0, "{o:?}");
        assert_eq!(o.verdict(Kind::Wake), "waits for the busy loop's tick");
        // 6.12 (EEVDF): pick_eevdf prefers the wakee whenever its lag makes
        // it eligible with the earlier deadline and the busy loop is past
        // its RUN_TO_PARITY protection: about half the rounds
        let o = sim("fair-wake-short", "linux-6.12");
        assert_eq!(o.wakeups, 10);
        assert!((3..=7).contains(&o.at_once), "{o:?}");
        assert_eq!(o.verdict(Kind::Wake), "mixed");
    }

    #[test]
    fn simulated_long_sleeper_preempts() {
        for k in ["linux-6.1", "linux-6.12"] {
            let o = sim("fair-wake-long", k);
            assert_eq!(o.wakeups, 10, "{k}");
            assert!(o.at_once >= 9, "{k}: {o:?}");
            assert_eq!(o.verdict(Kind::Wake), "pre-empts at wake-up", "{k}");
        }
    }

    #[test]
    fn simulated_fork() {
        // 6.1: START_DEBIT puts the child a vslice after min_vruntime; the
        // parent blocks in join and the busy loop runs first
        let o = sim("fair-fork", "linux-6.1");
        assert_eq!(
            (o.wakeups, o.child_first, o.busy_first),
            (10, 0, 10),
            "{o:?}"
        );
        assert!(o.median_delay_us > 4000.0, "{o:?}");
        // 6.12: the child is placed at the average vruntime with half a
        // slice of deadline and is picked first when the parent blocks
        let o = sim("fair-fork", "linux-6.12");
        assert_eq!(
            (o.wakeups, o.child_first, o.busy_first),
            (10, 10, 0),
            "{o:?}"
        );
        assert_eq!(o.verdict(Kind::Fork), "child runs first");
    }

    #[test]
    fn the_fair_class_override_decides() {
        // linux-6.12 with fair_class=cfs behaves as CFS on the fork
        let t = kvm();
        let s = setup("fair-fork", &t, 4).unwrap();
        let mut f = sim::placement::linux::Features::kernel("linux-6.12").unwrap();
        f.set("fair_class", "cfs").unwrap();
        let o = analyse(
            &s,
            &simulate_events_with(&t, &s, f, Some("kvm-8vcpu")).unwrap(),
        );
        assert_eq!((o.child_first, o.busy_first), (0, 4), "{o:?}");
    }

    #[test]
    fn a_report_naming_cpus_the_machine_lacks_is_an_error() {
        let t = topology::machine("smp:cores=8").unwrap();
        for line in [
            "fair fair-fork cpu 99 other 0 rounds 20",
            "fair fair-fork cpu 1 other 1 rounds 20",
            "fair fair-fork cpu 1 other 0 rounds 0",
            "fair fair-fork cpu 1 other 0 rounds 99999999999",
        ] {
            let e = parse_output(line, &t).unwrap_err().to_string();
            assert!(!e.contains('\n') && e.contains("fair-scenario line"), "{e}");
        }
        assert_eq!(
            parse_output("fair fair-fork cpu 1 other 0 rounds 20", &t).unwrap()[0].cpu,
            1
        );
    }
}
