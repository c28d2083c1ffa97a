//! The synchronisation of an OpenMP team as GNU libgomp does it on Linux
//! (gcc/libgomp, config/linux/bar.c, config/linux/wait.h, team.c, env.c;
//! read at GCC 8-13, where this code has not changed in substance):
//!
//! - **Barriers** (`gomp_barrier_wait`, `gomp_team_barrier_wait`): every
//!   arriving thread decrements the barrier's `awaited` count with one
//!   atomic operation on the barrier's cache line. The last to arrive
//!   resets the count, advances the barrier's generation word and calls
//!   FUTEX_WAKE on it for every sleeper (bar.c does the wake whether or
//!   not anyone sleeps). The others wait for the generation to change in
//!   `do_wait` (wait.h): first `do_spin`, a loop of up to GOMP_SPINCOUNT
//!   iterations that loads the word and executes `cpu_relax` (the x86
//!   `pause` instruction) each time, in user mode; if the word has not
//!   changed by then, FUTEX_WAIT on it until the last arrival wakes them.
//!   The spin budget is a time here: the spin count times the cost of one
//!   iteration, which the workload gives when it creates the barrier
//!   ([`Engine::add_omp_barrier`]); a spinner preempted mid-spin keeps the
//!   rest of its budget.
//! - **The start of a parallel region** (team.c `gomp_team_start`): pool
//!   threads that finished the previous region wait on the pool's dock
//!   barrier with the same spin-then-futex wait, and the master releases
//!   them by arriving there last. A workload models fork and join as two
//!   barriers of the team: the dock and the region's closing barrier.
//! - **Point-to-point flag waits** (NPB LU's `sync_left`/`sync_right`: a
//!   `do while` over an `!$omp flush`ed flag word): a one-slot mailbox
//!   between two threads. The consumer spins until the flag is set, then
//!   clears it; the producer spins until it is clear, then sets it. These
//!   spins never sleep: a spinner burns its CPU until the flag changes or
//!   it is preempted.
//! - **Reductions**: the per-thread partials are the workload's compute;
//!   the combine is an atomic update of one shared line per thread (GCC
//!   lowers `reduction(+:x)` to an atomic or a `GOMP_atomic_start`
//!   critical section at the end of the loop, before its barrier), which
//!   moves that line between the threads' CPUs.
//!
//! A futex sleeper is blocked as a pthread waiter (`Block::Pthread`): the
//! engine needs no new reason to block.

use super::{Block, Engine, Mode};
use crate::cacheline::LineId;
use crate::event::Slot;
use crate::rq::RunQueue;
use crate::task::{Op, TaskId};
use crate::Nanos;

// The ids live with the ops that name them (crate::task).
pub use crate::task::{OmpBarrierId, OmpFlagId};

/// Work of an open-ended spin (far beyond any run; ended by the flag's
/// change or by preemption).
const SPIN_FOREVER: Nanos = super::sync::SPIN_WORK;

#[derive(Debug)]
struct Barrier {
    total: u32,
    arrived: u32,
    generation: u32,
    /// The spin budget of a waiter, ns.
    spin_ns: Nanos,
    sleepers: Vec<TaskId>,
    spinners: Vec<TaskId>,
    line: LineId,
    /// The line of the reduction variable combined before this barrier.
    red_line: LineId,
}

#[derive(Debug)]
struct Flag {
    full: bool,
    spinners: Vec<TaskId>,
    line: LineId,
}

/// Where a thread is in a barrier wait.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Wait {
    /// Not in a barrier.
    #[default]
    None,
    /// Arrived at generation `gen`; `started`: its spin has begun (its
    /// budget is the task's `op_left`).
    Spinning { gen: u32, started: bool },
    /// Spun out: FUTEX_WAIT on generation `gen`.
    Futex { gen: u32 },
}

/// The OpenMP state of a run (empty unless a workload creates some).
#[derive(Debug, Default)]
pub(super) struct Omp {
    barriers: Vec<Barrier>,
    flags: Vec<Flag>,
    wait: Vec<Wait>,
    /// Barrier waits that ended in FUTEX_WAIT.
    pub(super) futex_waits: u64,
    /// Barrier waits released while spinning.
    pub(super) spin_releases: u64,
}

/// What an OpenMP op does when it starts.
pub(super) enum OmpStart {
    /// CPU work (ns), user mode or not, then apply.
    Work(Nanos, bool),
    /// Spin in user mode for this long at most.
    Spin(Nanos),
}

/// Counts of how barrier waits ended (for tests and reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OmpStats {
    /// Waits that spun out and slept in FUTEX_WAIT.
    pub futex_waits: u64,
    /// Waits released while still spinning.
    pub spin_releases: u64,
}

impl<'t, R: RunQueue> Engine<'t, R> {
    /// A barrier of `threads` arrivals whose waiters spin for `spin_ns`
    /// before FUTEX_WAIT (GOMP_SPINCOUNT times one spin iteration).
    pub fn add_omp_barrier(&mut self, threads: u32, spin_ns: Nanos) -> OmpBarrierId {
        let line = self.k.alloc_futex_word();
        let red_line = self.k.lines.alloc();
        let o = &mut self.omp;
        o.barriers.push(Barrier {
            total: threads.max(1),
            arrived: 0,
            generation: 0,
            spin_ns,
            sleepers: Vec::new(),
            spinners: Vec::new(),
            line,
            red_line,
        });
        OmpBarrierId(o.barriers.len() as u32 - 1)
    }

    /// A clear point-to-point flag.
    pub fn add_omp_flag(&mut self) -> OmpFlagId {
        let line = self.k.lines.alloc();
        let o = &mut self.omp;
        o.flags.push(Flag {
            full: false,
            spinners: Vec::new(),
            line,
        });
        OmpFlagId(o.flags.len() as u32 - 1)
    }

    /// How the run's barrier waits ended.
    pub fn omp_stats(&self) -> OmpStats {
        OmpStats {
            futex_waits: self.omp.futex_waits,
            spin_releases: self.omp.spin_releases,
        }
    }

    /// Tasks declared so far (a workload's next task id).
    pub fn nr_tasks(&self) -> usize {
        self.tasks.len()
    }

    fn omp_wait(&mut self, t: TaskId) -> &mut Wait {
        let w = &mut self.omp.wait;
        if w.len() <= t.idx() {
            w.resize(t.idx() + 1, Wait::None);
        }
        &mut w[t.idx()]
    }

    /// The work of an OpenMP op about to start for `t` on `c`.
    pub(super) fn omp_start(&mut self, t: TaskId, op: Op) -> OmpStart {
        let atomic = self.k.costs.atomic_ns;
        match op {
            Op::OmpBarrier(b) => {
                let bar = &self.omp.barriers[b.idx()];
                let (gen_now, spin_ns) = (bar.generation, bar.spin_ns);
                match *self.omp_wait(t) {
                    // the atomic decrement of `awaited`
                    Wait::None => OmpStart::Work(atomic, true),
                    Wait::Spinning { gen, started } => {
                        if gen != gen_now {
                            return OmpStart::Work(0, true);
                        }
                        let ti = t.idx();
                        if started && self.tasks[ti].op_left == 0 {
                            // the spin is over: go on to FUTEX_WAIT
                            return OmpStart::Work(0, true);
                        }
                        if !started {
                            self.tasks[ti].op_left = spin_ns;
                            *self.omp_wait(t) = Wait::Spinning { gen, started: true };
                        }
                        let left = self.tasks[ti].op_left;
                        if left == 0 {
                            // GOMP_SPINCOUNT=0: straight to the futex
                            return OmpStart::Work(0, true);
                        }
                        let sp = &mut self.omp.barriers[b.idx()].spinners;
                        if !sp.contains(&t) {
                            sp.push(t);
                        }
                        OmpStart::Spin(left)
                    }
                    Wait::Futex { gen } => {
                        if self.tasks[t.idx()].resumed || gen != gen_now {
                            OmpStart::Work(0, true)
                        } else {
                            OmpStart::Work(self.k.costs.futex_wait_ns, false)
                        }
                    }
                }
            }
            Op::OmpReduce(_) => OmpStart::Work(atomic, true),
            Op::OmpFlagWait(f) | Op::OmpFlagPost(f) => {
                let full = self.omp.flags[f.idx()].full;
                let ready = if matches!(op, Op::OmpFlagWait(_)) {
                    full
                } else {
                    !full
                };
                if ready {
                    // the load that saw it, and the store
                    OmpStart::Work(atomic, true)
                } else {
                    let sp = &mut self.omp.flags[f.idx()].spinners;
                    if !sp.contains(&t) {
                        sp.push(t);
                    }
                    OmpStart::Spin(SPIN_FOREVER)
                }
            }
            _ => unreachable!("not an OpenMP op: {op:?}"),
        }
    }

    /// Apply the effect of `t`'s OpenMP op on `c`; true when the op
    /// completed (the program moves on).
    pub(super) fn omp_apply(&mut self, c: usize, t: TaskId, op: Op) -> bool {
        let ti = t.idx();
        match op {
            Op::OmpBarrier(b) => {
                let bi = b.idx();
                let gen_now = self.omp.barriers[bi].generation;
                match *self.omp_wait(t) {
                    Wait::None => {
                        let line = self.omp.barriers[bi].line;
                        self.cpus[c].debt +=
                            self.k.lines.write(line, c, self.k.topo, &self.k.costs);
                        let bar = &mut self.omp.barriers[bi];
                        bar.arrived += 1;
                        if bar.arrived < bar.total {
                            *self.omp_wait(t) = Wait::Spinning {
                                gen: gen_now,
                                started: false,
                            };
                            return false;
                        }
                        // the last arrival: reset, advance the
                        // generation, FUTEX_WAKE every sleeper
                        bar.arrived = 0;
                        bar.generation = bar.generation.wrapping_add(1);
                        let sleepers = std::mem::take(&mut bar.sleepers);
                        let spinners = std::mem::take(&mut bar.spinners);
                        self.cpus[c].debt += self.k.costs.futex_wake_ns;
                        for s in sleepers {
                            // futex_wake_mark: the bucket and s's futex_q
                            self.cpus[c].debt += self.k.futex_wake_lines(line, c, Some(s.idx()));
                            self.try_to_wake_up(s, c, Some(t), 0, false);
                        }
                        self.omp_release_spinners(spinners, line, true);
                        true
                    }
                    Wait::Spinning { gen, .. } => {
                        self.tasks[ti].op_left = 0;
                        if gen != gen_now {
                            *self.omp_wait(t) = Wait::None;
                            return true;
                        }
                        // spun out
                        self.omp.barriers[bi].spinners.retain(|&x| x != t);
                        *self.omp_wait(t) = Wait::Futex { gen };
                        false
                    }
                    Wait::Futex { gen } => {
                        if gen != gen_now {
                            *self.omp_wait(t) = Wait::None;
                            return true;
                        }
                        debug_assert!(!self.tasks[ti].resumed, "woken before the release");
                        self.omp.futex_waits += 1;
                        self.omp.barriers[bi].sleepers.push(t);
                        let line = self.omp.barriers[bi].line;
                        self.cpus[c].debt += self.k.futex_wait_lines(line, ti, c);
                        self.block(c, t, Block::Pthread);
                        false
                    }
                }
            }
            Op::OmpReduce(b) => {
                let line = self.omp.barriers[b.idx()].red_line;
                self.cpus[c].debt += self.k.lines.write(line, c, self.k.topo, &self.k.costs);
                true
            }
            Op::OmpFlagWait(f) | Op::OmpFlagPost(f) => {
                let fi = f.idx();
                let wait = matches!(op, Op::OmpFlagWait(_));
                self.tasks[ti].op_left = 0;
                let fl = &mut self.omp.flags[fi];
                if fl.full != wait {
                    // changed back meanwhile (a preempted spinner's
                    // retry): spin again
                    return false;
                }
                fl.full = !wait;
                fl.spinners.retain(|&x| x != t);
                let spinners = std::mem::take(&mut fl.spinners);
                let line = fl.line;
                self.cpus[c].debt += self.k.lines.write(line, c, self.k.topo, &self.k.costs);
                self.omp_release_spinners(spinners, line, false);
                true
            }
            _ => unreachable!("not an OpenMP op: {op:?}"),
        }
    }

    /// A word the spinners poll changed: each one spinning on its CPU now
    /// stops and retries its op once the line comes over; one that was
    /// preempted mid-spin sees the change when it next runs.
    /// `barrier`: count the releases (barrier waits).
    fn omp_release_spinners(&mut self, spinners: Vec<TaskId>, line: LineId, barrier: bool) {
        for s in spinners {
            let x = self.tasks[s.idx()].cpu;
            let spinning = self.cpus[x].mode == Mode::Busy
                && self.cpus[x].seg.task == Some(s)
                && self.cpus[x].seg.spin;
            if !spinning {
                // preempted mid-spin: it re-checks when it runs again
                continue;
            }
            if barrier {
                self.omp.spin_releases += 1;
            }
            let cost = self.k.lines.read(line, x, self.k.topo, &self.k.costs);
            self.settle_segment(x);
            self.cpus[x].gen = self.cpus[x].gen.wrapping_add(1);
            self.events.clear_slot(x, Slot::Main);
            self.cpus[x].seg.work = 0;
            self.cpus[x].seg.debt = 0;
            self.cpus[x].seg.spin = false;
            self.cpus[x].debt += cost;
            self.tasks[s.idx()].op_left = 0;
            self.continue_cpu(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{build_engine, engine_parts, SimOptions};
    use crate::task::TaskSpec;
    use crate::workload::{Record, Report, Workload};

    /// Run `setup`'s programs on `machine`; returns the marks, each
    /// task's CPU time and the barrier statistics.
    fn run_team(
        machine: &str,
        setup: impl Fn(&mut Engine<'_>) -> Vec<Vec<Op>>,
    ) -> (Vec<Option<Nanos>>, Vec<Nanos>, OmpStats) {
        let topo = topology::preset(machine).unwrap();
        let opt = SimOptions::default();
        let p = engine_parts(&topo, &opt).unwrap();
        let (mut e, _, _) =
            build_engine(&topo, &p.sd, p.costs, p.cfg, p.first, &NoTasks, &opt).unwrap();
        let progs = setup(&mut e);
        for (i, prog) in progs.into_iter().enumerate() {
            e.add_task(TaskSpec {
                name: format!("omp{i}"),
                program: prog.into(),
                mm: 1,
                parent: None,
                spawned: false,
                start_cpu: Some(i % topo.nr_cpus()),
                nice: 0,
                footprint_lines: 0,
            });
        }
        e.run().unwrap();
        (e.marks().to_vec(), e.task_exec_ns(), e.omp_stats())
    }

    struct NoTasks;
    impl Workload for NoTasks {
        fn name(&self) -> &'static str {
            "none"
        }
        fn build<Rq: RunQueue>(&self, _e: &mut Engine<'_, Rq>, _first: usize) {}
        fn report(&self, _rec: &Record) -> Report {
            Report::default()
        }
    }

    const MS: Nanos = 1_000_000;

    #[test]
    fn barrier_releases_every_thread_at_the_last_arrival() {
        let n = 6;
        let (marks, _, st) = run_team("kvm-8vcpu", |e| {
            let b = e.add_omp_barrier(n, 50 * MS);
            (0..n)
                .map(|i| {
                    vec![
                        Op::Compute((i as Nanos + 1) * MS),
                        Op::OmpBarrier(b),
                        Op::Mark(i),
                        Op::Exit,
                    ]
                })
                .collect()
        });
        // the threads start once their idle CPUs are up (a halted vCPU's
        // exit, ~20 us); the last arrives n ms after that
        let left: Vec<Nanos> = marks.iter().map(|m| m.unwrap()).collect();
        let (first, last) = (*left.iter().min().unwrap(), *left.iter().max().unwrap());
        assert!(first >= n as Nanos * MS, "{left:?}");
        // everyone leaves within a couple of microseconds of the last
        // arrival (a line transfer and the release)
        assert!(last - first < 2_000, "{left:?}");
        assert_eq!(st.futex_waits, 0);
        assert_eq!(st.spin_releases, n as u64 - 1);
    }

    #[test]
    fn a_waiter_past_its_spin_count_sleeps_in_the_futex_and_is_woken() {
        let spin = 100_000; // 100 us of spinning
        let (marks, exec, st) = run_team("kvm-8vcpu", |e| {
            let b = e.add_omp_barrier(2, spin);
            vec![
                vec![
                    Op::Compute(5 * MS),
                    Op::OmpBarrier(b),
                    Op::Mark(0),
                    Op::Exit,
                ],
                vec![Op::OmpBarrier(b), Op::Mark(1), Op::Exit],
            ]
        });
        assert_eq!(st.futex_waits, 1);
        assert_eq!(st.spin_releases, 0);
        let woke = marks[1].unwrap();
        assert!(woke >= 5 * MS, "the sleeper left at {woke}");
        // woken through the scheduler: later than the releaser, but well
        // under a millisecond
        assert!(woke < 5 * MS + MS, "{woke}");
        // it burnt its spin budget and a little more, not the 5 ms wait
        assert!(exec[1] >= spin && exec[1] < spin + 200_000, "{}", exec[1]);
    }

    #[test]
    fn zero_spin_count_goes_straight_to_the_futex() {
        let (_, exec, st) = run_team("kvm-8vcpu", |e| {
            let b = e.add_omp_barrier(2, 0);
            vec![
                vec![Op::Compute(2 * MS), Op::OmpBarrier(b), Op::Exit],
                vec![Op::OmpBarrier(b), Op::Exit],
            ]
        });
        assert_eq!(st.futex_waits, 1);
        assert!(exec[1] < 100_000, "{}", exec[1]);
    }

    #[test]
    fn flags_pipeline_a_wavefront_in_order() {
        // three threads, four planes: thread i works on plane k after
        // thread i-1 posted it (LU's sync_left / sync_right)
        let (marks, _, _) = run_team("kvm-8vcpu", |e| {
            let f01 = e.add_omp_flag();
            let f12 = e.add_omp_flag();
            let planes = 4u32;
            let mut progs = Vec::new();
            for i in 0..3u32 {
                let mut p = vec![Op::Loop(planes)];
                if i > 0 {
                    p.push(Op::OmpFlagWait(if i == 1 { f01 } else { f12 }));
                }
                p.push(Op::Compute(MS));
                if i < 2 {
                    p.push(Op::OmpFlagPost(if i == 0 { f01 } else { f12 }));
                }
                p.push(Op::EndLoop);
                p.extend([Op::Mark(i), Op::Exit]);
                progs.push(p);
            }
            progs
        });
        let end: Vec<Nanos> = marks.iter().map(|m| m.unwrap()).collect();
        // a pipeline of depth 3 over 4 planes: 6 ms, with thread i ending
        // one plane after thread i-1
        assert!(end[0] >= 4 * MS && end[0] < 4 * MS + 100_000, "{end:?}");
        assert!(end[1] >= 5 * MS && end[1] < 5 * MS + 200_000, "{end:?}");
        assert!(end[2] >= 6 * MS && end[2] < 6 * MS + 300_000, "{end:?}");
    }

    #[test]
    fn a_barrier_is_reusable_across_generations() {
        let n = 4;
        let (marks, _, st) = run_team("kvm-8vcpu", |e| {
            let b = e.add_omp_barrier(n, 10 * MS);
            (0..n)
                .map(|i| {
                    let w = if i == 0 { 2 * MS } else { MS };
                    vec![
                        Op::Loop(3),
                        Op::Compute(w),
                        Op::OmpBarrier(b),
                        Op::EndLoop,
                        Op::Mark(i),
                        Op::Exit,
                    ]
                })
                .collect()
        });
        for m in &marks {
            let m = m.unwrap();
            assert!((6 * MS..6 * MS + 100_000).contains(&m), "{marks:?}");
        }
        assert_eq!(st.spin_releases, 3 * (n as u64 - 1));
    }
}
