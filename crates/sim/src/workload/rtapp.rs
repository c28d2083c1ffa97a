//! rt-app workloads (benchspec's `rtapp` grammar): each thread rt-app
//! would create becomes a task whose program is its phases' events, with
//! the clock readings rt-app's `thread_body` and `run_event` make around
//! them (rt-app v1.0, src/rt-app.c), so the report is rt-app's per-thread
//! log: one row per executed phase.
//!
//! Events and what they become (engine/pthread.rs for the primitives):
//! - `run`: user compute of the event's duration at full core speed (what
//!   rt-app's calibrated loop count amounts to on the calibration CPU),
//!   timed by clock reads; `runtime`: 32 us bursts of compute, each
//!   followed by a clock read, until that much wall time has passed (a
//!   preempted thread gets less CPU than the duration, as in rt-app);
//! - `sleep`: nanosleep, an hrtimer sleep with the timer slack;
//! - `timer`: clock_nanosleep(TIMER_ABSTIME) to the timer's next period,
//!   one timer per name shared by every thread that names it, or per
//!   thread for names starting with "unique";
//! - `lock`/`unlock`, `wait`/`signal`/`broad`, `sync`: pthread mutexes and
//!   condition variables, one per name (mutex and condition names are
//!   separate, as rt-app's resources are typed);
//! - `suspend`/`resume`: rt-app's lock, cond_wait (or broadcast), unlock
//!   on the mutex and condition named after the thread;
//! - `barrier`: released when as many arrivals as the file has references
//!   to it (every instance counted) came.
//!
//! `yield` is sched_yield (`Op::Yield`, yield_task_fair of Linux 6.6).
//!
//! `mem`: rt-app's `memload`, a memset of at most the thread's buffer
//! (`mem_buffer_size`) at a time until the event's bytes are written. Each
//! thread that has a `mem` event gets its own region of that size in the
//! process's address space (rt-app makes one buffer per thread, named
//! after it, in `parse_thread_event_data`); the event is an
//! `Op::ComputeMem` touching the first min(bytes, buffer) bytes with
//! `bytes` of DRAM traffic and no CPU work of its own (a memset is a
//! store stream: its time is the traffic's, docs/rtapp.md). rt-app does not
//! time it: it adds nothing to the log's `run` column.
//!
//! `cpus` per phase: each thread starts with its first phase's set (a
//! sched_setaffinity before the run); a thread whose phases differ calls
//! `Op::SetAffinity` as each phase is entered, before its first clock read,
//! as rt-app's `thread_body` calls `set_thread_affinity` (which only makes
//! the call when the set changes). A phase with no set (nor the task) goes
//! back to every CPU the run may use.
//!
//! `fork` (rt-app master, src/rt-app.c `run_event` case `rtapp_fork` and
//! `create_thread`, commit 55cb0c0): the event creates one more thread
//! running the named task object, with its own copy of the object's
//! per-thread resources (unique timers, the `mem` buffer), index `ind` the
//! next of the run's thread count, and name `NAME-IND-NNNN` (NNNN: how many
//! threads were forked from NAME before, by any thread). It skips the start
//! barrier and takes the run's start (`t_zero`) as its timer origin, as
//! every thread does. The run can fork at most [`FORKS_LIMIT`] threads of
//! one name (rt-app exits at the next), so the simulator declares
//! min(forks the file can make, limit) tasks per forked name up front
//! (`RtApp::fork_counts`) and `Op::Fork` starts them in the order the run
//! forks (engine/fork.rs): pthread_create's cost, the caller's affinity,
//! fork placement from the caller's CPU. A fork past the limit ends the run
//! with an error, as it ends rt-app. Forked threads are joined with the
//! others: a run without `duration` ends when they have all ended.
//! A forked thread's first `cpus` change happens at its first phase (a
//! sched_setaffinity from the inherited set), as rt-app's
//! `set_thread_affinity` makes it; a forked object whose phases mix `cpus`
//! with none is refused (a phase without a set returns to the set the
//! thread inherited, which the model does not keep).

use super::{Record, Report, Stop, Workload};
use crate::engine::Engine;
use crate::numa::Span;
use crate::rq::RunQueue;
use crate::task::{
    BarrierId, CondId, CpuSetId, ForkPoolId, MutexId, Op, RtTimerId, TaskId, TaskSpec,
};
use crate::Nanos;
use benchspec::rtapp::log::{self, Row, ThreadSummary};
use benchspec::rtapp::{Calibration, Event, LogSize, RtApp, TaskDef, FORKS_LIMIT};
use serde_json::{json, Map};
use std::collections::BTreeMap;

/// An rt-app file ready to simulate.
#[derive(Clone, Debug)]
pub struct RtappSim {
    /// The parsed file.
    pub app: RtApp,
}

/// An rt-app file the simulator cannot run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{key}`: {problem}")]
pub struct RtappSimError {
    /// The key at fault.
    pub key: String,
    /// Why.
    pub problem: String,
}

const US: Nanos = 1000;

impl RtappSim {
    /// A parsed file is one the simulator models (the parser refuses the
    /// rest, and here a forked task whose phases mix `cpus` with none).
    pub fn new(app: RtApp) -> Result<Self, RtappSimError> {
        for t in app.forked_tasks() {
            let sets: Vec<_> = (0..t.phases.len()).map(|j| app.phase_cpus(t, j)).collect();
            if sets.iter().any(Option::is_some) && sets.iter().any(Option::is_none) {
                return Err(RtappSimError {
                    key: format!("tasks.{}", t.name),
                    problem: "is forked and only some of its phases have `cpus`: a forked thread's phase without a set returns to the affinity it inherited from its forker, which is not modelled (give every phase or the task `cpus`, or none)".into(),
                });
            }
        }
        Ok(RtappSim { app })
    }

    /// The forked task objects' pools: (task object index, first task id,
    /// tasks), in `tasks` order after the threads made at start.
    fn fork_layout(&self) -> Vec<(usize, TaskId, u32)> {
        let mut next = self.app.nr_threads();
        let mut out = Vec::new();
        for (x, &n) in self.app.fork_counts().iter().enumerate() {
            let n = n.min(FORKS_LIMIT);
            if n > 0 {
                out.push((x, TaskId(next), n));
                next += n;
            }
        }
        out
    }

    /// ns per loop for the perf column (None: rt-app calibrates at run
    /// time, which a simulation cannot; perf is then 0).
    fn ns_per_loop(&self) -> Option<u64> {
        match self.app.global.calibration {
            Calibration::NsPerLoop(n) => Some(n as u64),
            Calibration::Cpu(_) => None,
        }
    }

    /// The static columns of phase `j` of task object `ti`: (perf,
    /// c_duration, c_period).
    fn phase_columns(&self, ti: usize, j: usize) -> (u64, u64, u64) {
        let npl = self.ns_per_loop();
        let mut c = (0, 0, 0);
        for e in &self.app.tasks[ti].phases[j].events {
            match e {
                Event::Run(us) | Event::Runtime(us) => {
                    c.0 += npl.map_or(0, |n| us * 1000 / n);
                    c.1 += us;
                }
                Event::Timer { period_us, .. } => c.2 += period_us,
                _ => {}
            }
        }
        c
    }
}

/// A thread in the report.
struct Reported {
    /// Its task id.
    task: TaskId,
    /// rt-app's thread index.
    ind: u32,
    /// rt-app's name for it.
    label: String,
    /// Its task object (index of `tasks`).
    obj: usize,
}

/// Resource ids by name, made on first use.
#[derive(Default)]
struct Names {
    mutexes: BTreeMap<String, MutexId>,
    conds: BTreeMap<String, CondId>,
    barriers: BTreeMap<String, BarrierId>,
    timers: BTreeMap<(Option<u32>, String), RtTimerId>,
    cpusets: BTreeMap<Option<Vec<u32>>, CpuSetId>,
}

fn id<R: RunQueue, I: Copy>(
    map: &mut BTreeMap<String, I>,
    name: &str,
    e: &mut Engine<'_, R>,
    make: impl FnOnce(&mut Engine<'_, R>) -> I,
) -> I {
    if let Some(&i) = map.get(name) {
        return i;
    }
    let i = make(e);
    map.insert(name.to_string(), i);
    i
}

impl RtappSim {
    /// The program of one thread running task object `def`: `owner` keys
    /// its unique timers, `label` names its `mem` buffer, `forked` says it
    /// is made by a `fork` event.
    #[allow(clippy::too_many_arguments)]
    fn program<R: RunQueue>(
        &self,
        e: &mut Engine<'_, R>,
        names: &mut Names,
        pools: &[Option<ForkPoolId>],
        def: &TaskDef,
        owner: u32,
        label: &str,
        forked: bool,
    ) -> Vec<Op> {
        let cumulative = self.app.global.cumulative_slack;
        let mut p = Vec::new();
        if def.delay_us > 0 {
            p.push(Op::DelayUntil(def.delay_us * US));
        }
        p.push(Op::Loop(def.loops.unwrap_or(u32::MAX)));
        // a thread made at start has its first set before the run; a
        // forked one inherits its forker's and sets its own at each phase
        let changes = if forked {
            def.phases
                .iter()
                .enumerate()
                .any(|(j, _)| self.app.phase_cpus(def, j).is_some())
        } else {
            self.app.affinity_changes(def)
        };
        // the thread's `mem` buffer, made at its first `mem` event
        let mut buffer = None;
        for (j, phase) in def.phases.iter().enumerate() {
            if changes {
                let set = self.app.phase_cpus(def, j);
                let id = match names.cpusets.get(&set) {
                    Some(&id) => id,
                    None => {
                        let mask = match &set {
                            Some(cpus) => {
                                topology::CpuMask::from_cpus(cpus.iter().map(|&c| c as usize))
                            }
                            None => e.allowed().clone(),
                        };
                        let id = e.add_cpuset(&mask);
                        names.cpusets.insert(set, id);
                        id
                    }
                };
                // set_thread_affinity before each pass of the phase:
                // only its first pass can find a different set
                p.push(Op::SetAffinity(id));
            }
            p.push(Op::Loop(phase.loops.unwrap_or(u32::MAX)));
            p.push(Op::PhaseStart);
            for ev in &phase.events {
                let mut mutex = |n: &str, e: &mut Engine<'_, R>| {
                    id(&mut names.mutexes, n, e, |e| e.add_mutex())
                };
                match ev {
                    Event::Run(us) => p.extend([Op::RunStart, Op::Compute(us * US), Op::RunEnd]),
                    Event::Runtime(us) => {
                        p.extend([Op::RunStart, Op::Runtime(us * US), Op::RunEnd])
                    }
                    Event::Sleep(us) => p.push(Op::USleep(us * US)),
                    Event::Timer {
                        name,
                        period_us,
                        absolute,
                    } => {
                        let owner = name.starts_with("unique").then_some(owner);
                        let key = (owner, name.clone());
                        let timer = match names.timers.get(&key) {
                            Some(&i) => i,
                            None => {
                                let i = e.add_rt_timer(!absolute);
                                names.timers.insert(key, i);
                                i
                            }
                        };
                        p.push(Op::TimerWait {
                            timer,
                            period: period_us * US,
                            cumulative,
                        });
                    }
                    Event::Lock(m) => p.push(Op::MutexLock(mutex(m, e))),
                    Event::Unlock(m) => p.push(Op::MutexUnlock(mutex(m, e))),
                    Event::Wait { cond, mutex: m } => {
                        let mutex = mutex(m, e);
                        let cond = id(&mut names.conds, cond, e, |e| e.add_cond());
                        p.push(Op::CondWait { cond, mutex });
                    }
                    Event::Signal(c) => {
                        p.push(Op::CondSignal(id(&mut names.conds, c, e, |e| e.add_cond())))
                    }
                    Event::Broad(c) => p.push(Op::CondBroadcast(id(&mut names.conds, c, e, |e| {
                        e.add_cond()
                    }))),
                    Event::Sync { cond, mutex: m } => {
                        let mutex = mutex(m, e);
                        let cond = id(&mut names.conds, cond, e, |e| e.add_cond());
                        p.extend([Op::CondSignal(cond), Op::CondWait { cond, mutex }]);
                    }
                    Event::Suspend(n) | Event::Resume(n) => {
                        let mutex = mutex(n, e);
                        let cond = id(&mut names.conds, n, e, |e| e.add_cond());
                        p.push(Op::MutexLock(mutex));
                        p.push(if matches!(ev, Event::Suspend(_)) {
                            Op::CondWait { cond, mutex }
                        } else {
                            Op::CondBroadcast(cond)
                        });
                        p.push(Op::MutexUnlock(mutex));
                    }
                    Event::Barrier(b) => {
                        let users = self.app.barrier_users(b);
                        let bar = id(&mut names.barriers, b, e, |e| e.add_barrier(users));
                        p.push(Op::BarrierWait(bar));
                    }
                    Event::Yield => p.push(Op::Yield),
                    Event::Fork(name) => {
                        let x = self
                            .app
                            .tasks
                            .iter()
                            .position(|t| t.name == *name)
                            .expect("the parser checked every fork's task");
                        p.push(Op::Fork(pools[x].expect("a forked task has a pool")));
                    }
                    Event::Mem(0) => {}
                    &Event::Mem(bytes) => {
                        let size = self.app.global.mem_buffer_size;
                        let region = *buffer
                            .get_or_insert_with(|| e.add_region(0, &format!("mem-{label}"), size));
                        let access = e.add_access(&[Span {
                            region,
                            offset: 0,
                            len: bytes.min(size),
                            bytes,
                            sweeps: 1,
                        }]);
                        p.push(Op::ComputeMem { work: 0, access });
                    }
                }
            }
            p.push(Op::PhaseEnd(j as u32));
            p.push(Op::EndLoop);
        }
        p.push(Op::EndLoop);
        p.push(Op::Exit);
        p
    }
}

impl Workload for RtappSim {
    fn name(&self) -> &'static str {
        "rtapp"
    }

    fn build<R: RunQueue>(&self, e: &mut Engine<'_, R>, _first_cpu: usize) {
        e.track_tasks();
        let mut names = Names::default();
        let layout = self.fork_layout();
        // pool of each forked task object, numbered as add_fork_pool will
        let mut pools = vec![None; self.app.tasks.len()];
        for (i, &(x, _, _)) in layout.iter().enumerate() {
            pools[x] = Some(ForkPoolId(i as u32));
        }
        let threads: Vec<_> = self.app.threads().collect();
        for th in &threads {
            let p = self.program(e, &mut names, &pools, th.def, th.ind, &th.label(), false);
            let id = e.add_task(TaskSpec {
                name: th.def.name.clone(),
                program: p.into(),
                mm: 0,
                parent: None,
                spawned: false,
                start_cpu: None,
                nice: th.def.nice,
                footprint_lines: 0,
            });
            // the thread's first `cpus` (simulate_rtapp checked that every
            // set has a CPU the run may use)
            if let Some(cpus) = self.app.thread_cpus(th.def) {
                let mask = topology::CpuMask::from_cpus(cpus.iter().map(|&c| c as usize));
                e.set_cpus_allowed(id, &mask);
            }
        }
        for &(x, first, n) in &layout {
            let def = &self.app.tasks[x];
            let mut ids = Vec::with_capacity(n as usize);
            for k in 0..n {
                // each forked thread has its own copy of the object's
                // per-thread resources (unique timers, `mem` buffer)
                let owner = first.0 + k;
                let label = format!("{}-fork-{k:04}", def.name);
                let p = self.program(e, &mut names, &pools, def, owner, &label, true);
                ids.push(e.add_task(TaskSpec {
                    name: def.name.clone(),
                    program: p.into(),
                    mm: 0,
                    // a thread of the rt-app process (its exit is a
                    // thread's); the forker is known only at run time
                    parent: Some(TaskId(0)),
                    spawned: true,
                    start_cpu: None,
                    nice: def.nice,
                    footprint_lines: 0,
                }));
            }
            debug_assert_eq!(ids.first().copied(), Some(first));
            let pool = e.add_fork_pool(
                ids,
                format!(
                    "rt-app file: `fork` of `{}`: a thread forks it a {}th time, past rt-app's limit of {} forks of one task, where rt-app exits (src/rt-app.c FORKS_LIMIT)",
                    def.name,
                    FORKS_LIMIT + 1,
                    FORKS_LIMIT
                ),
            );
            debug_assert_eq!(Some(pool), pools[x]);
        }
    }

    fn stop(&self) -> Stop {
        match self.app.global.duration_s {
            Some(s) => Stop::At(s as Nanos * 1_000_000_000),
            None => Stop::AllExited,
        }
    }

    fn report(&self, rec: &Record) -> Report {
        // every thread the run made, in rt-app's index order: those made at
        // start, then the forked ones in the order they were forked
        let mut threads: Vec<Reported> = self
            .app
            .threads()
            .map(|th| Reported {
                task: TaskId(th.ind),
                ind: th.ind,
                label: th.label(),
                obj: self
                    .app
                    .tasks
                    .iter()
                    .position(|t| std::ptr::eq(t, th.def))
                    .expect("a thread's task is in the file"),
            })
            .collect();
        let layout = self.fork_layout();
        for &task in rec.forked() {
            let &(x, first, _) = layout
                .iter()
                .find(|&&(_, first, n)| (first.0..first.0 + n).contains(&task.0))
                .expect("a forked task is in a pool");
            let ind = threads.len() as u32;
            threads.push(Reported {
                task,
                ind,
                label: benchspec::rtapp::forked_label(
                    &self.app.tasks[x].name,
                    ind,
                    task.0 - first.0,
                ),
                obj: x,
            });
        }
        // position in `threads` of each task id
        let mut pos = BTreeMap::new();
        for (i, th) in threads.iter().enumerate() {
            pos.insert(th.task, i);
        }
        let mut rows: Vec<Vec<Row>> = vec![Vec::new(); threads.len()];
        for r in rec.phase_rows() {
            let Some(&i) = pos.get(&r.task) else {
                continue;
            };
            let (perf, c_duration, c_period) = self.phase_columns(threads[i].obj, r.phase as usize);
            let (start, end) = (r.start / US, r.end / US);
            rows[i].push(Row {
                idx: threads[i].ind,
                perf,
                run: r.run_us,
                period: (r.end - r.start) / US,
                start,
                end,
                rel_st: start,
                slack: r.slack_us,
                c_duration,
                c_period,
                wu_lat: r.wu_lat_us,
            });
        }
        let g = &self.app.global;
        let mut files = Vec::new();
        let mut summaries = Vec::new();
        let mut text = format!(
            "{:<20} {:>6} {:>7} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9}\n",
            "thread", "rows", "run%", "cpu%", "slack-miss", "wu-p50", "wu-p90", "wu-p99", "wu-max"
        );
        for (th, rows) in threads.iter().zip(&rows) {
            let label = &th.label;
            let s = ThreadSummary::of(label, rows).with_cpu_time(rows, rec.task_exec(th.task));
            text.push_str(&format!(
                "{:<20} {:>6} {:>7.2} {:>7.2} {:>10} {:>9} {:>9} {:>9} {:>9}\n",
                label,
                s.rows,
                s.cpu_share_pct,
                s.cpu_time_pct.unwrap_or(0.0),
                s.slack_misses,
                s.wu_lat_us.p50,
                s.wu_lat_us.p90,
                s.wu_lat_us.p99,
                s.wu_lat_us.max
            ));
            summaries.push(s);
            if g.log_size != LogSize::Disable {
                let mut body = log::header(self.app.tasks[th.obj].nice);
                for r in rows {
                    body.push_str(&r.line());
                }
                files.push((format!("{}-{}.log", g.log_basename, label), body));
            }
        }
        text.push_str(
            "(run%: time in run events over the logged span; cpu%: CPU time consumed over it; wake-up latencies in us after timer events, per phase row)\n",
        );
        let mut threads_json = Vec::new();
        for (th, s) in threads.iter().zip(&summaries) {
            let mut v = serde_json::to_value(s).expect("plain data serialises");
            if let Some(n) = rec.task_place(th.task) {
                let stages: Map<String, serde_json::Value> = crate::placement::Stage::ALL
                    .iter()
                    .zip(n.stages)
                    .filter(|(_, c)| *c > 0)
                    .map(|(st, c)| (rec.stage_name(*st), json!(c)))
                    .collect();
                v["migrations"] = json!(n.migrations);
                v["stages"] = serde_json::Value::Object(stages);
            }
            threads_json.push(v);
        }
        let mut json = Map::new();
        json.insert(
            "rtapp".into(),
            json!({
                "threads": threads_json,
                "calibration": g.calibration,
            }),
        );
        Report {
            text,
            json,
            time_ns: rec.end,
            files,
        }
    }
}

#[cfg(test)]
mod tests;
