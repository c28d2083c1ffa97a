//! The op interpreter: a task's current op becomes a segment of CPU time,
//! and its effect (I/O, wake-ups, blocking, spawn, exit) lands when the
//! segment ends.

use super::{Block, Engine, TaskState};
use crate::cacheline::LineId;
use crate::channel::{ChanKind, IoResult, Wakes, DATA_LINES_MAX, LINE_FILE_R, LINE_FILE_W};
use crate::placement::wf;
use crate::rq::RunQueue;
use crate::task::{ChanId, Op, TaskId};
use crate::Nanos;

/// The default timer slack of a normal task (init_task's timer_slack_ns,
/// 50 us): hrtimer sleeps such as usleep may be delayed by up to this much.
pub const TIMER_SLACK_NS: Nanos = 50_000;

/// The cost of a read's data: the reader pulls each chunk's lines from the
/// CPU that wrote them (one transfer per 64 bytes, at their distance).
struct PullLines<'a> {
    topo: &'a topology::Topology,
    costs: &'a crate::costs::MachineCosts,
    lines: &'a mut crate::cacheline::LineTable,
    cpu: usize,
    cost: Nanos,
}

impl crate::channel::Pull for &mut PullLines<'_> {
    #[inline(always)]
    fn pull(&mut self, writer_cpu: u32, bytes: u32) {
        let d = self.topo.distance(writer_cpu as usize, self.cpu);
        self.cost += self.lines.stream(
            crate::cacheline::LineKind::MessageData,
            d,
            bytes.div_ceil(64) as u64,
            self.costs,
        );
    }
}

impl<'t, R: RunQueue> Engine<'t, R> {
    /// Start the current op of `t` on `c`. Returns true when a segment was
    /// started (the CPU is now busy until it ends); false when the op
    /// completed instantly and the caller should continue.
    #[inline(always)]
    pub(super) fn start_op(&mut self, c: usize, t: TaskId) -> bool {
        let ti = t.idx();
        if self.numa.is_some() {
            // queued task work (task_numa_work) runs on the way back to user
            self.numa_return_to_user(c, t);
        }
        let mut mem_speed = 1024;
        let prog_len = self.tasks[ti].spec.program.len();
        let task = &mut self.tasks[ti];
        let op = match task.pc.current(&task.spec.program) {
            Some(&op) => op,
            None => {
                debug_assert!(prog_len > 0);
                Op::Exit
            }
        };
        // the op stays current until its effect is applied (apply_op)
        task.op = op;
        let costs = &self.k.costs;
        let resumed = task.resumed;
        let mut reader_hint = None;
        let (work, user) = match op {
            Op::Compute(n) => {
                if task.op_left == 0 {
                    task.op_left = n;
                }
                (task.op_left, true)
            }
            Op::ComputeMem { work, access } => {
                if task.op_left == 0 {
                    let w = self.compute_mem_work(work, access);
                    self.tasks[ti].op_left = w;
                }
                mem_speed = self.numa_touch(c, t, work, access);
                (self.tasks[ti].op_left, true)
            }
            Op::Runtime(d) => {
                if task.op_left == 0 && self.run_elapsed(t) >= d {
                    // the last clock read found the time up
                    (0, false)
                } else {
                    // a new burst, or the rest of a preempted one
                    let task = &mut self.tasks[ti];
                    if task.op_left == 0 {
                        task.op_left = crate::task::RUNTIME_BURST_NS + self.k.costs.gettimeofday_ns;
                    }
                    (task.op_left, true)
                }
            }
            Op::Write { chan, bytes } | Op::Read { chan, bytes } => {
                if task.bytes_left == 0 {
                    task.bytes_left = bytes;
                }
                let write = matches!(op, Op::Write { .. });
                let n = task.bytes_left as u64;
                let kind = self.chans[chan.idx()].kind;
                if write && self.many_tasks {
                    // the write will likely wake the channel's first
                    // sleeping reader when it completes, an event from
                    // now: ask for its state now (a hint only)
                    reader_hint = self.chans[chan.idx()].readers.front().copied();
                }
                let (sys, copy) = match kind {
                    ChanKind::Pipe => (costs.pipe_syscall_ns, costs.copy_ns(n)),
                    ChanKind::UnixStream => (costs.unix_syscall_ns, costs.copy_ns(n)),
                    // a loopback send runs the receive path too
                    ChanKind::TcpStream => (
                        if write {
                            costs.tcp_send_ns
                        } else {
                            costs.tcp_recv_ns
                        },
                        n * costs.tcp_ps_per_byte / 1000,
                    ),
                };
                if resumed {
                    // the rest of a call that blocked: no entry again
                    (copy, false)
                } else {
                    // a colder call: a shared file table (threads), data
                    // queued beyond the caches, other channels used on
                    // this CPU since (costs::channel_call_extra)
                    let shared_fd = self.mm_tasks[task.spec.mm as usize] > 1;
                    let queued = self.chan_buffered[kind as usize];
                    // divide only past the depth table's free base (queued /
                    // run_cpus <= DEPTH_BASE_BYTES exactly when queued is below
                    // depth_free_bytes) and for a table that is not all zero
                    let per_cpu =
                        if queued < self.depth_free_bytes || self.depth_flat[kind as usize] {
                            0
                        } else {
                            queued / self.run_cpus
                        };
                    let reuse = if kind == ChanKind::TcpStream {
                        0 // no rotation table: its costs are measured apart
                    } else {
                        self.channel_reuse(c, chan)
                    };
                    let extra = self
                        .k
                        .costs
                        .channel_call_extra(kind, shared_fd, per_cpu, reuse);
                    (sys + extra + copy, false)
                }
            }
            Op::Poll { .. } | Op::WaitChild | Op::Join { .. } | Op::Sleep(_) | Op::USleep(_) => {
                (if resumed { 0 } else { costs.syscall_ns }, false)
            }
            Op::Yield => (costs.syscall_ns, false),
            Op::USleepRest { period, var } => {
                // schbench reads the clock, then usleeps only if the cycle
                // has time left
                let end = task.vars[var as usize].saturating_add(period);
                (
                    if resumed || self.now >= end {
                        0
                    } else {
                        costs.syscall_ns
                    },
                    false,
                )
            }
            Op::ReqBackoff { queue, limit, .. } => {
                let full = self.queue_len(queue) > limit as usize;
                (
                    if resumed || !full {
                        0
                    } else {
                        costs.syscall_ns
                    },
                    false,
                )
            }
            Op::Stamp(_) | Op::RecordSince { .. } => (costs.gettimeofday_ns, false),
            Op::Note { .. } => (0, false),
            Op::FutexSet { .. }
            | Op::FutexLoad(_)
            | Op::FutexPost(_)
            | Op::FutexWait(_)
            | Op::ListPush { .. }
            | Op::ListTakeStampPost { .. }
            | Op::LockCpu(_)
            | Op::UnlockCpu(_)
            | Op::ReqPush { .. }
            | Op::ReqTakeOrWait { .. } => match self.sync_start(c, t, op) {
                super::sync::SyncStart::Work(w) => (w, false),
                super::sync::SyncStart::Spin => {
                    // busy-spin (user mode) until the lock is released or
                    // the slice ends; the op is retried afterwards
                    self.start_segment(c, Some(t), super::sync::SPIN_WORK, true);
                    self.cpus[c].seg.spin = true;
                    return true;
                }
            },
            Op::MutexLock(_)
            | Op::MutexUnlock(_)
            | Op::CondWait { .. }
            | Op::CondSignal(_)
            | Op::CondBroadcast(_)
            | Op::BarrierWait(_)
            | Op::TimerWait { .. }
            | Op::DelayUntil(_)
            | Op::PhaseStart
            | Op::RunStart
            | Op::RunEnd
            | Op::PhaseEnd(_) => (self.pthread_work(t, op), false),
            Op::Spawn { child } => {
                let proc_ = self.tasks[child.idx()].spec.mm != self.tasks[ti].spec.mm;
                (
                    if proc_ {
                        self.k.costs.fork_ns
                    } else {
                        self.k.costs.thread_create_ns
                    },
                    false,
                )
            }
            // pthread_create (engine/fork.rs)
            Op::Fork(_) => (self.k.costs.thread_create_ns, false),
            Op::Exit => {
                // a thread shares its parent's mm; a process (or the
                // initial task) tears its own down
                let parent_mm = self.tasks[ti]
                    .spec
                    .parent
                    .map(|p| self.tasks[p.idx()].spec.mm);
                let thread = parent_mm == Some(self.tasks[ti].spec.mm);
                let cost = if thread {
                    self.k.costs.thread_exit_ns
                } else {
                    self.k.costs.process_exit_ns
                };
                (cost, false)
            }
            Op::OmpBarrier(_) | Op::OmpReduce(_) | Op::OmpFlagWait(_) | Op::OmpFlagPost(_) => {
                match self.omp_start(t, op) {
                    super::omp::OmpStart::Work(w, user) => (w, user),
                    super::omp::OmpStart::Spin(budget) => {
                        // user-mode spin on the word (a pause loop)
                        self.start_segment(c, Some(t), budget, true);
                        self.cpus[c].seg.spin = true;
                        return true;
                    }
                }
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
            Op::SetAffinity(set) => (self.set_affinity_work(t, set), false),
        };
        if let Some(r) = reader_hint {
            self.prefetch_wakee_lines(r.idx());
        }
        if work == 0 && self.cpus[c].debt == 0 {
            if self.numa.is_some() {
                // an instant ComputeMem streams nothing and reaches no page
                self.numa_sweep(c, super::numa::SweepTo::End);
                self.numa_release(c);
            }
            // effect-only op: apply at once
            self.apply_op(c, t);
            return false;
        }
        self.start_segment_at(c, Some(t), work, user, mem_speed);
        true
    }

    /// A call on pipe or unix socket `chan` by CPU `c`: the calls `c` made
    /// to other pipes and unix sockets since this one's last call there (0
    /// when it was last used on another CPU, or never), and the call
    /// recorded. Only calls that enter the kernel count, on both sides; TCP
    /// calls do not count. Each kind's table is measured with calls of that
    /// kind alone; a CPU that mixes pipes and sockets counts them together.
    #[inline(always)]
    fn channel_reuse(&mut self, c: usize, chan: ChanId) -> u64 {
        let calls = self.cpus[c].chan_calls;
        self.cpus[c].chan_calls = calls + 1;
        let ch = &mut self.chans[chan.idx()];
        let reuse = if ch.last_cpu == c as u32 {
            calls - ch.last_call - 1
        } else {
            0
        };
        ch.last_cpu = c as u32;
        ch.last_call = calls;
        reuse
    }

    /// The lines a channel call on `c` writes (`channel::alloc_channel_lines`):
    /// the channel's own kernel state (with a pipe's buffer slot) and, for a
    /// write, the `data` lines of bytes it writes into the buffer, and the
    /// calling end's `struct file` when the caller's file table is shared.
    #[inline(always)]
    fn channel_lines(
        &mut self,
        c: usize,
        line: LineId,
        data: u32,
        file: LineId,
        shared_fd: bool,
    ) -> Nanos {
        let (topo, costs, lines) = (self.k.topo, &self.k.costs, &mut self.k.lines);
        let mut cost = lines.write_with_data(line, c, data, topo, costs);
        if shared_fd {
            cost += lines.write(line + file, c, topo, costs);
        }
        cost
    }

    /// Apply the effect of `t`'s current op at the end of its segment.
    #[inline(always)]
    pub(super) fn apply_op(&mut self, c: usize, t: TaskId) {
        let ti = t.idx();
        let task = &mut self.tasks[ti];
        match task.op {
            Op::Compute(_) | Op::ComputeMem { .. } => {
                task.op_left = 0;
                task.pc.advance();
            }
            Op::Runtime(d) => {
                // a burst done (or none needed): its clock read decides
                task.op_left = 0;
                if self.run_elapsed(t) >= d {
                    self.tasks[ti].pc.advance();
                }
            }
            Op::Write { chan, .. } => {
                let (left, resumed) = (task.bytes_left, task.resumed);
                let shared_fd = self.mm_tasks[task.spec.mm as usize] > 1;
                // one borrow of the channel (see `segment_done`)
                let ch = &mut self.chans[chan.idx()];
                let (res, wakes) = ch.write(left, c as u32, resumed);
                let (kind, payload, line) = (ch.kind as usize, ch.payload, ch.line);
                // the state and the buffer the bytes go into, as the last
                // reader left them
                let data = match res {
                    IoResult::Done(n) => n.div_ceil(64).min(DATA_LINES_MAX),
                    IoResult::WouldBlock => 0,
                };
                self.cpus[c].debt += self.channel_lines(c, line, data, LINE_FILE_W, shared_fd);
                match res {
                    IoResult::Done(n) => {
                        self.chan_buffered[kind] += n as u64;
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
                        self.chans[chan.idx()].writers.push_back(t);
                        self.block(c, t, Block::Write(chan));
                    }
                }
            }
            Op::Read { chan, .. } => {
                let (left, resumed) = (task.bytes_left, task.resumed);
                let shared_fd = self.mm_tasks[task.spec.mm as usize] > 1;
                let ch = &self.chans[chan.idx()];
                let line = ch.line;
                let line_cost = self.channel_lines(c, line, 0, LINE_FILE_R, shared_fd);
                let mut pull = PullLines {
                    topo: self.k.topo,
                    costs: &self.k.costs,
                    lines: &mut self.k.lines,
                    cpu: c,
                    cost: 0,
                };
                let ch = &mut self.chans[chan.idx()];
                let (res, wakes) = ch.read(left, resumed, &mut pull);
                let (kind, payload) = (ch.kind as usize, ch.payload);
                self.cpus[c].debt += line_cost + pull.cost;
                match res {
                    IoResult::Done(n) => {
                        // the bytes were charged chunk by chunk from their
                        // writers; the next write invalidates this copy

                        self.chan_buffered[kind] -= n as u64;
                        if payload {
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
                        self.chans[chan.idx()].readers.push_back(t);
                        self.block(c, t, Block::Read(chan));
                    }
                }
            }
            Op::Poll { chan } => {
                let ch = &mut self.chans[chan.idx()];
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
            Op::Sleep(d) | Op::USleep(d) => {
                if task.resumed {
                    task.resumed = false;
                    task.pc.advance();
                } else {
                    // usleep is hrtimer_nanosleep with the task's timer
                    // slack: the timer may fire up to the slack later and,
                    // on an otherwise quiet CPU, fires at its end
                    let slack = if matches!(task.op, Op::USleep(_)) {
                        TIMER_SLACK_NS
                    } else {
                        0
                    };
                    self.arm_timer(c, t, self.now + d + slack);
                    self.block(c, t, Block::Sleep);
                }
            }
            Op::USleepRest { period, var } => {
                let end = task.vars[var as usize].saturating_add(period);
                if task.resumed || self.now >= end {
                    task.resumed = false;
                    task.pc.advance();
                } else {
                    // usleep(rest): an hrtimer sleep with the timer slack,
                    // as Op::USleep
                    self.arm_timer(c, t, end + TIMER_SLACK_NS);
                    self.block(c, t, Block::Sleep);
                }
            }
            Op::ReqBackoff {
                queue,
                limit,
                sleep_ns,
            } => {
                if task.resumed {
                    // slept: skip the push
                    task.resumed = false;
                    task.pc.advance();
                    task.pc.advance();
                    return;
                }
                // the pending count is read from the queue's line
                let line = self.queue_line(queue);
                self.cpus[c].debt += self.k.lines.read(line, c, self.k.topo, &self.k.costs);
                if self.queue_len(queue) > limit as usize {
                    self.arm_timer(c, t, self.now + sleep_ns as Nanos + TIMER_SLACK_NS);
                    self.block(c, t, Block::Sleep);
                } else {
                    self.tasks[ti].pc.advance();
                }
            }
            Op::Stamp(_)
            | Op::RecordSince { .. }
            | Op::Note { .. }
            | Op::FutexSet { .. }
            | Op::FutexLoad(_)
            | Op::FutexPost(_)
            | Op::FutexWait(_)
            | Op::ListPush { .. }
            | Op::ListTakeStampPost { .. }
            | Op::LockCpu(_)
            | Op::UnlockCpu(_)
            | Op::ReqPush { .. }
            | Op::ReqTakeOrWait { .. } => {
                let op = task.op;
                if self.sync_apply(c, t, op) {
                    let task = &mut self.tasks[ti];
                    task.resumed = false;
                    task.pc.advance();
                }
            }
            Op::MutexLock(_)
            | Op::MutexUnlock(_)
            | Op::CondWait { .. }
            | Op::CondSignal(_)
            | Op::CondBroadcast(_)
            | Op::BarrierWait(_)
            | Op::TimerWait { .. }
            | Op::DelayUntil(_)
            | Op::PhaseStart
            | Op::RunStart
            | Op::RunEnd
            | Op::PhaseEnd(_) => {
                let op = task.op;
                if self.pthread_apply(c, t, op) {
                    let task = &mut self.tasks[ti];
                    task.resumed = false;
                    task.pc.advance();
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
                if self.tasks[j.idx()].state == TaskState::Exited {
                    let task = &mut self.tasks[ti];
                    task.resumed = false;
                    task.pc.advance();
                } else {
                    self.tasks[j.idx()].joiner = Some(t);
                    self.block(c, t, Block::Join(j));
                }
            }
            Op::Yield => {
                // do_sched_yield: yield_task_fair, then schedule()
                task.pc.advance();
                let now = self.now;
                self.cpus[c].rq.yield_task(&mut self.ents, now);
                self.cpus[c].need_resched = true;
            }
            Op::OmpBarrier(_) | Op::OmpReduce(_) | Op::OmpFlagWait(_) | Op::OmpFlagPost(_) => {
                let op = task.op;
                if self.omp_apply(c, t, op) {
                    let task = &mut self.tasks[ti];
                    task.resumed = false;
                    task.pc.advance();
                }
            }
            Op::Exit => self.do_exit(c, t),
            Op::Mark(_) | Op::Loop(_) | Op::EndLoop => unreachable!(),
            Op::SetAffinity(set) => self.set_affinity_apply(c, t, set),
            Op::Fork(pool) => self.fork_apply(c, t, pool),
        }
    }

    /// Wake whom `w` names on `chan`. Most calls find nobody waiting (a
    /// pipe write to a non-empty pipe, a read that left room): that test is
    /// inline at the caller (`inline(always)`: left to the compiler, it was
    /// a call at every channel op), the wake-ups out of line.
    #[inline(always)]
    pub(super) fn do_wakes(&mut self, c: usize, waker: TaskId, chan: ChanId, w: Wakes) {
        let ch = &self.chans[chan.idx()];
        let waiting = (w.any(Wakes::ONE_READER.with(Wakes::ALL_READERS, true))
            && !ch.readers.is_empty())
            || (w.pollers() && !ch.pollers.is_empty())
            || (w.any(Wakes::ONE_WRITER.with(Wakes::ALL_WRITERS, true)) && !ch.writers.is_empty());
        if waiting {
            self.wake_waiters(c, waker, chan, w);
        }
    }

    #[inline(never)]
    fn wake_waiters(&mut self, c: usize, waker: TaskId, chan: ChanId, w: Wakes) {
        let ch = chan.idx();
        // Pipe and socket wake-ups are sync (wake_up_interruptible_sync_poll).
        let flags = wf::SYNC;
        if w.one_reader() {
            if let Some(r) = self.chans[ch].readers.pop_front() {
                self.try_to_wake_up(r, c, Some(waker), flags, false);
            }
        }
        if w.all_readers() {
            while let Some(r) = self.chans[ch].readers.pop_front() {
                // a herd of thousands (a start barrier): the next sleeper's
                // state is asked for while this one wakes
                if let Some(&n) = self.chans[ch].readers.front() {
                    self.prefetch_wakee(n.idx());
                }
                self.try_to_wake_up(r, c, Some(waker), flags, false);
            }
        }
        if w.pollers() && !self.chans[ch].pollers.is_empty() {
            let pollers = std::mem::take(&mut self.chans[ch].pollers);
            for p in pollers {
                self.try_to_wake_up(p, c, Some(waker), flags, false);
            }
        }
        if w.one_writer() {
            if let Some(r) = self.chans[ch].writers.pop_front() {
                self.try_to_wake_up(r, c, Some(waker), flags, false);
            }
        }
        if w.all_writers() {
            while let Some(r) = self.chans[ch].writers.pop_front() {
                if let Some(&n) = self.chans[ch].writers.front() {
                    self.prefetch_wakee(n.idx());
                }
                self.try_to_wake_up(r, c, Some(waker), flags, false);
            }
        }
    }

    pub(super) fn block(&mut self, c: usize, t: TaskId, why: Block) {
        let ti = t.idx();
        // it ran until now, then sleeps
        self.update_task_pelt(ti, true, true);
        self.tasks[ti].state = TaskState::Blocked(why);
        self.tasks[ti].resumed = false;
        self.update_rq_pelt(c);
        // a delayed sleeper (DELAY_DEQUEUE) stays queued, but leaves
        // cfs_tasks here: the balancer never moves one (the kernel keeps it
        // listed and moves it only for migrate_load; not modelled)
        self.cpus[c]
            .rq
            .dequeue_sleep(&mut self.ents, t.0, self.now, &self.cfg.eevdf);
        self.k.cfs_lists.unlink(t.0);
        self.sync_rq_state(c);
    }

    pub(super) fn do_exit(&mut self, c: usize, t: TaskId) {
        let ti = t.idx();
        self.deactivate_task(t, c);
        self.tasks[ti].state = TaskState::Exited;
        self.live_tasks -= 1;
        if self.numa.is_some() {
            self.numa_exit(t);
        }
        if let Some(j) = self.tasks[ti].joiner.take() {
            // pthread_join: futex wake, not sync
            self.try_to_wake_up(j, c, Some(t), 0, false);
        }
        if let Some(p) = self.tasks[ti].spec.parent {
            let pi = p.idx();
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
}
