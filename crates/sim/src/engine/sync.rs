//! User-space synchronisation the benchmarks use, modelled on what each does
//! in the kernel and on the cache lines it touches:
//! - futex words used as schbench's binary semaphores (`fpost` / `fwait`:
//!   a compare-and-swap on the word, then FUTEX_WAKE_PRIVATE or
//!   FUTEX_WAIT_PRIVATE, kernel/futex/waitwake.c: the wake is a plain
//!   try_to_wake_up, without WF_SYNC);
//! - lock-free lists of waiting tasks (a compare-and-swap prepend, and an
//!   atomic exchange that takes the whole list);
//! - per-CPU pthread mutexes taken by trylock and busy-spinning (schbench's
//!   per-CPU lock): a spinner burns its CPU until the holder lets go, or its
//!   slice ends and the holder can run;
//! - time stamps and latency samples (gettimeofday through the vDSO).

use super::{Block, Engine, Mode};
use crate::cacheline::LineId;
use crate::event::Slot;
use crate::rq::RunQueue;
use crate::task::{FutexId, ListId, LockSetId, TaskId, VarId};
use crate::Nanos;
use std::collections::VecDeque;

/// One interval of a summarised metric (see `Engine::summarise_metric`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bin {
    /// Samples recorded.
    pub count: u64,
    /// Their sum.
    pub sum: u64,
    /// The largest.
    pub max: u64,
}

/// Where a workload's samples go as the run records them: its own
/// bookkeeping, in memory that does not grow with the run (schbench's
/// histograms, zeroed and reported at its interval boundaries). Samples
/// arrive in the order of the simulated time they are recorded at.
pub trait MetricSink: Send + 'static {
    /// A sample of `metric`: `value` recorded at `at`.
    fn record(&mut self, metric: u8, at: Nanos, value: Nanos);
    /// An empty sink of the same bookkeeping (the combined report of
    /// several guests, fed every guest's samples).
    fn fresh(&self) -> Box<dyn MetricSink>;
    /// Bytes it holds (for the memory estimate's checks).
    fn bytes(&self) -> u64;
    /// For the workload's report to read it back as its own type.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// A sink several engines record to (see `Engine::also_record_to`).
pub type SharedSink = std::sync::Arc<std::sync::Mutex<Box<dyn MetricSink>>>;

/// A futex word used as a binary semaphore.
#[derive(Debug)]
pub(super) struct Futex {
    /// FUTEX_BLOCKED (true) or FUTEX_RUNNING.
    blocked: bool,
    /// Tasks asleep in FUTEX_WAIT.
    waiters: VecDeque<TaskId>,
    line: LineId,
}

/// A lock-free list of (task, its futex word).
#[derive(Debug)]
pub(super) struct WaitList {
    entries: Vec<(TaskId, FutexId)>,
    line: LineId,
}

/// One pthread mutex per CPU.
#[derive(Debug)]
pub(super) struct CpuLockSet {
    owner: Vec<Option<TaskId>>,
    /// Tasks that found the lock taken and spin (or were preempted while
    /// spinning) for it.
    spinners: Vec<Vec<TaskId>>,
    lines: Vec<LineId>,
}

/// Work of a spin segment: open-ended, ended by the release of the lock or
/// by preemption (far beyond any run).
pub(super) const SPIN_WORK: Nanos = Nanos::MAX / 4;

/// What a sync op does when it starts: its CPU work, and whether that work
/// is user-mode spinning.
pub(super) enum SyncStart {
    /// Kernel/user work of this many ns, then apply.
    Work(Nanos),
    /// Spin for the lock (an open-ended user segment).
    Spin,
}

impl<'t, R: RunQueue> Engine<'t, R> {
    /// A futex word, initially FUTEX_RUNNING.
    pub fn add_futex(&mut self) -> FutexId {
        let line = self.k.alloc_futex_word();
        self.futexes.push(Futex {
            blocked: false,
            waiters: VecDeque::new(),
            line,
        });
        FutexId((self.futexes.len() - 1) as u32)
    }

    /// An empty lock-free wait list.
    pub fn add_wait_list(&mut self) -> ListId {
        let line = self.k.lines.alloc();
        self.lists.push(WaitList {
            entries: Vec::new(),
            line,
        });
        ListId((self.lists.len() - 1) as u32)
    }

    /// An empty request queue (schbench's RPS mode): a wait list whose
    /// entries are the pending requests, each naming the worker and its
    /// futex word, so its length is schbench's pending count.
    pub fn add_req_queue(&mut self) -> crate::task::ListId {
        self.add_wait_list()
    }

    /// Requests waiting in a request queue.
    pub fn req_pending(&self, queue: crate::task::ListId) -> usize {
        self.queue_len(queue)
    }

    pub(super) fn queue_len(&self, queue: crate::task::ListId) -> usize {
        self.lists[queue.idx()].entries.len()
    }

    pub(super) fn queue_line(&self, queue: crate::task::ListId) -> LineId {
        self.lists[queue.idx()].line
    }

    /// A set of per-CPU mutexes, all free.
    pub fn add_cpu_locks(&mut self) -> LockSetId {
        let n = self.cpus.len();
        let lines = (0..n).map(|_| self.k.lines.alloc()).collect();
        self.locksets.push(CpuLockSet {
            owner: vec![None; n],
            spinners: vec![Vec::new(); n],
            lines,
        });
        LockSetId((self.locksets.len() - 1) as u32)
    }

    /// Raw samples per metric: (time recorded, value), in recording
    /// order; kept only for a metric neither summarised nor given to a
    /// sink, or after `keep_samples`.
    pub fn all_samples(&self) -> &[Vec<(Nanos, Nanos)>] {
        &self.samples
    }

    /// Give every sample of a metric not summarised to `sink` instead of
    /// keeping it (what every workload model that records samples does).
    pub fn set_metric_sink(&mut self, sink: Box<dyn MetricSink>) {
        self.sink = Some(sink);
    }

    /// The metric sink, if the workload set one.
    pub fn metric_sink(&self) -> Option<&dyn MetricSink> {
        self.sink.as_deref()
    }

    /// Also give every sample to `shared` (after the engine's own sink).
    pub fn also_record_to(&mut self, shared: SharedSink) {
        self.shared_sink = Some(shared);
    }

    /// Keep the raw samples too, with a sink (tests: they grow with the
    /// run).
    pub fn keep_samples(&mut self) {
        self.keep_samples = true;
    }

    /// Keep `metric` as per-interval summaries instead of samples: bin `j`
    /// (j >= 1) holds what was recorded in (origin + (j-1)·width,
    /// origin + j·width], bin 0 what came at or before the origin, where the
    /// origin is the time of mark `origin_mark` (0 until it is reached).
    /// Memory then grows with run length / width, not with the samples.
    pub fn summarise_metric(&mut self, metric: u8, width: Nanos, origin_mark: u32) {
        let m = metric as usize;
        if self.binned.len() <= m {
            self.binned.resize(m + 1, None);
            self.bins.resize_with(m + 1, Vec::new);
        }
        self.binned[m] = Some((width.max(1), origin_mark));
    }

    /// The summaries of a summarised metric.
    pub fn all_bins(&self) -> &[Vec<Bin>] {
        &self.bins
    }

    pub(super) fn record_sample(&mut self, metric: u8, value: Nanos) {
        let m = metric as usize;
        if let Some(&Some((width, mark))) = self.binned.get(m) {
            let origin = self
                .marks
                .get(mark as usize)
                .copied()
                .flatten()
                .unwrap_or(0);
            let t = self.now.saturating_sub(origin);
            let j = if t == 0 {
                0
            } else {
                ((t - 1) / width + 1) as usize
            };
            let bins = &mut self.bins[m];
            if bins.len() <= j {
                self.record_bytes += ((j + 1 - bins.len()) * std::mem::size_of::<Bin>()) as u64;
                bins.resize(j + 1, Bin::default());
            }
            let b = &mut bins[j];
            b.count += 1;
            b.sum += value;
            b.max = b.max.max(value);
            return;
        }
        if let Some(s) = self.sink.as_mut() {
            s.record(metric, self.now, value);
        }
        if let Some(s) = &self.shared_sink {
            s.lock()
                .expect("a sink does not panic")
                .record(metric, self.now, value);
        }
        if self.sink.is_some() && !self.keep_samples {
            return;
        }
        if self.samples.len() <= m {
            self.samples.resize_with(m + 1, Vec::new);
        }
        self.record_bytes += std::mem::size_of::<(Nanos, Nanos)>() as u64;
        self.samples[m].push((self.now, value));
    }

    /// The work of a futex or lock op about to start on `c` for `t`.
    pub(super) fn sync_start(&mut self, c: usize, t: TaskId, op: crate::task::Op) -> SyncStart {
        use crate::task::Op;
        let costs = &self.k.costs;
        match op {
            Op::FutexPost(f) => {
                // the wake syscall only when the word was BLOCKED
                let wake = self.futexes[f.idx()].blocked;
                SyncStart::Work(costs.atomic_ns + if wake { costs.futex_wake_ns } else { 0 })
            }
            Op::FutexWait(f) => {
                let posted = !self.futexes[f.idx()].blocked;
                SyncStart::Work(costs.atomic_ns + if posted { 0 } else { costs.futex_wait_ns })
            }
            Op::LockCpu(set) => {
                let owner = self.locksets[set.idx()].owner[c];
                if owner.is_none() || owner == Some(t) {
                    SyncStart::Work(costs.atomic_ns)
                } else {
                    let sp = &mut self.locksets[set.idx()].spinners[c];
                    if !sp.contains(&t) {
                        sp.push(t);
                    }
                    SyncStart::Spin
                }
            }
            Op::UnlockCpu(_) | Op::ListPush { .. } | Op::FutexSet { .. } => {
                SyncStart::Work(costs.atomic_ns)
            }
            Op::ListTakeStampPost { .. } => {
                SyncStart::Work(costs.atomic_ns + costs.gettimeofday_ns)
            }
            Op::ReqPush { futex, .. } => {
                // the list CAS and the pending increment, one clock
                // reading, then fpost (the wake syscall only when BLOCKED)
                let wake = self.futexes[futex.idx()].blocked;
                SyncStart::Work(
                    3 * costs.atomic_ns
                        + costs.gettimeofday_ns
                        + if wake { costs.futex_wake_ns } else { 0 },
                )
            }
            Op::ReqTakeOrWait { queue, .. } => {
                if self.queue_len(queue) > 0 {
                    // the decrement, and after a wait the clock reading of
                    // the wakeup sample
                    let woke = self.tasks[t.idx()].resumed;
                    SyncStart::Work(costs.atomic_ns + if woke { costs.gettimeofday_ns } else { 0 })
                } else {
                    // store BLOCKED, then FUTEX_WAIT_PRIVATE
                    SyncStart::Work(costs.atomic_ns + costs.futex_wait_ns)
                }
            }
            _ => SyncStart::Work(0),
        }
    }

    /// Charge `c` a write of `line`.
    fn touch(&mut self, c: usize, line: LineId) {
        self.cpus[c].debt += self.k.lines.write(line, c, self.k.topo, &self.k.costs);
    }

    /// fpost's effect: CAS BLOCKED -> RUNNING and wake one waiter if it was
    /// BLOCKED (from `c`, after `lead` ns of the waker's work). Returns
    /// whether a FUTEX_WAKE was done.
    fn futex_post(&mut self, c: usize, waker: TaskId, f: FutexId, lead: Nanos) -> bool {
        let line = self.futexes[f.idx()].line;
        self.touch(c, line);
        let fx = &mut self.futexes[f.idx()];
        if !fx.blocked {
            return false;
        }
        fx.blocked = false;
        let woken = fx.waiters.pop_front();
        // FUTEX_WAKE: the hash bucket, and the waiter's futex_q when there
        // is one, before the wake-up goes out
        let lines = self.k.futex_wake_lines(line, c, woken.map(|w| w.idx()));
        self.cpus[c].debt += lines;
        if let Some(w) = woken {
            let before = self.batch_lead;
            self.batch_lead = lead + lines;
            // FUTEX_WAKE -> wake_up_q: a plain wake-up, no WF_SYNC
            self.try_to_wake_up(w, c, Some(waker), 0, false);
            self.batch_lead = before;
        }
        true
    }

    /// Apply the effect of a sync or record op of `t` on `c`; true when the
    /// op completed (the program moves on).
    pub(super) fn sync_apply(&mut self, c: usize, t: TaskId, op: crate::task::Op) -> bool {
        use crate::task::Op;
        let ti = t.idx();
        match op {
            Op::Stamp(var) => {
                self.tasks[ti].vars[var as usize] = self.now;
                true
            }
            Op::RecordSince { metric, var } => {
                let since = self.tasks[ti].vars[var as usize];
                self.record_sample(metric, self.now.saturating_sub(since));
                true
            }
            Op::Note { metric, value } => {
                self.record_sample(metric, value as Nanos);
                true
            }
            Op::FutexSet { futex, blocked } => {
                let line = self.futexes[futex.idx()].line;
                self.touch(c, line);
                self.futexes[futex.idx()].blocked = blocked;
                true
            }
            Op::FutexPost(f) => {
                self.futex_post(c, t, f, 0);
                true
            }
            Op::FutexLoad(f) => {
                let line = self.futexes[f.idx()].line;
                self.cpus[c].debt += self.k.lines.read(line, c, self.k.topo, &self.k.costs);
                true
            }
            Op::FutexWait(f) => {
                let line = self.futexes[f.idx()].line;
                self.touch(c, line);
                let fx = &mut self.futexes[f.idx()];
                if !fx.blocked {
                    // CAS RUNNING -> BLOCKED: the post is consumed
                    fx.blocked = true;
                    true
                } else {
                    fx.waiters.push_back(t);
                    self.cpus[c].debt += self.k.futex_wait_lines(line, ti, c);
                    self.block(c, t, Block::Futex(f));
                    false
                }
            }
            Op::ListPush { list, futex } => {
                let line = self.lists[list.idx()].line;
                self.touch(c, line);
                self.lists[list.idx()].entries.push((t, futex));
                true
            }
            Op::ListTakeStampPost { list, var } => self.list_take_stamp_post(c, t, list, var),
            Op::ReqPush {
                queue,
                worker,
                futex,
                var,
                metric,
            } => {
                let line = self.lists[queue.idx()].line;
                self.touch(c, line);
                self.lists[queue.idx()].entries.push((worker, futex));
                self.record_sample(metric, 1);
                self.tasks[worker.idx()].vars[var as usize] = self.now;
                self.futex_post(c, t, futex, 0);
                true
            }
            Op::ReqTakeOrWait {
                queue,
                futex,
                metric,
                var,
            } => {
                let line = self.lists[queue.idx()].line;
                self.touch(c, line);
                if self.lists[queue.idx()].entries.pop().is_some() {
                    // only a request the task slept for has a wakeup
                    // latency: one it found queued was not waited on
                    if self.tasks[ti].resumed {
                        let since = self.tasks[ti].vars[var as usize];
                        self.record_sample(metric, self.now.saturating_sub(since));
                    }
                    true
                } else {
                    // nothing queued (a push cannot slip in between: the
                    // store of BLOCKED and the wait are one step here, as
                    // the futex syscall rechecks the word)
                    let fline = self.futexes[futex.idx()].line;
                    self.touch(c, fline);
                    let fx = &mut self.futexes[futex.idx()];
                    fx.blocked = true;
                    fx.waiters.push_back(t);
                    self.cpus[c].debt += self.k.futex_wait_lines(fline, ti, c);
                    self.block(c, t, Block::Futex(futex));
                    false
                }
            }
            Op::LockCpu(set) => {
                let s = &mut self.locksets[set.idx()];
                debug_assert!(s.owner[c].is_none() || s.owner[c] == Some(t));
                s.owner[c] = Some(t);
                s.spinners[c].retain(|&x| x != t);
                self.tasks[ti].held_lock = Some((set, c));
                let line = self.locksets[set.idx()].lines[c];
                self.touch(c, line);
                true
            }
            Op::UnlockCpu(set) => {
                if let Some((s, cpu)) = self.tasks[ti].held_lock.take() {
                    debug_assert_eq!(s, set);
                    self.locksets[s.idx()].owner[cpu] = None;
                    let line = self.locksets[s.idx()].lines[cpu];
                    self.touch(c, line);
                    self.release_spinners(s, cpu);
                }
                true
            }
            _ => unreachable!("not a sync op: {op:?}"),
        }
    }

    /// The message thread's batch: take the list, one time stamp for all,
    /// each listed task's variable set, each one posted in list order (the
    /// list is a LIFO stack; the kernel sees the wakes one after another,
    /// so later ones leave after the earlier ones' syscall work).
    fn list_take_stamp_post(&mut self, c: usize, t: TaskId, list: ListId, var: VarId) -> bool {
        let line = self.lists[list.idx()].line;
        self.touch(c, line);
        let mut entries = std::mem::take(&mut self.lists[list.idx()].entries);
        let now = self.now;
        for &(w, _) in entries.iter().rev() {
            self.tasks[w.idx()].vars[var as usize] = now;
        }
        let mut lead = 0;
        for &(w, f) in entries.iter().rev() {
            let _ = w;
            let debt0 = self.cpus[c].debt;
            if self.futex_post(c, t, f, lead) {
                self.cpus[c].debt += self.k.costs.futex_wake_ns;
            }
            lead += self.cpus[c].debt - debt0;
        }
        entries.clear();
        // keep the allocation
        self.lists[list.idx()].entries = entries;
        true
    }

    /// The lock (set, cpu) was released: every spinner running its spin
    /// segment stops spinning and retries now; a spinner that was preempted
    /// retries (and registers again if need be) when it next runs.
    fn release_spinners(&mut self, set: LockSetId, cpu: usize) {
        let spinners = std::mem::take(&mut self.locksets[set.idx()].spinners[cpu]);
        for s in spinners {
            let x = self.tasks[s.idx()].cpu;
            let spinning = self.cpus[x].mode == Mode::Busy
                && self.cpus[x].seg.task == Some(s)
                && self.cpus[x].seg.spin;
            if !spinning {
                continue;
            }
            // it sees the release once the line comes over
            let line = self.locksets[set.idx()].lines[cpu];
            let cost = self.k.lines.read(line, x, self.k.topo, &self.k.costs);
            self.cpus[x].debt += cost;
            // a guest CPU whose vCPU is off: its segment was settled and
            // disarmed by the pause; it retries when the vCPU runs again
            let off = self.vm.is_some() && self.vm_run_state(x) != super::vcpu::VcpuRun::Running;
            if !off {
                self.settle_segment(x);
            }
            self.cpus[x].gen = self.cpus[x].gen.wrapping_add(1);
            self.events.clear_slot(x, Slot::Main);
            self.cpus[x].seg.work = 0;
            self.cpus[x].seg.debt = 0;
            self.cpus[x].seg.spin = false;
            if off {
                self.vm_retry_spin(x);
            } else {
                self.continue_cpu(x);
            }
        }
    }
}
