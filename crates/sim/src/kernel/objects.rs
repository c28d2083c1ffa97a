//! The kernel objects of the futex, wake-list and idle paths as lines of the
//! line model (docs/costs.md, "Kernel objects as lines"): each record's
//! size comes from the inventory (`costs::kernel_objects`), each access
//! from the kernel function named beside it.
//!
//! - A futex's `struct futex_hash_bucket` (kernel/futex/core.c): written by
//!   `futex_wait` (futex_q_lock, futex_queue) and by a `futex_wake` that
//!   finds a waiter (spin_lock, __futex_unqueue); only read by one that
//!   finds none (futex_hb_waiters_pending). It is kept in the record after
//!   its futex word (`alloc_futex_word`), one bucket per futex: distinct
//!   futexes of a run hash to distinct buckets.
//! - A waiter's `struct futex_q` (on its kernel stack): queued by the
//!   waiter, unlinked by the waker (futex_wake_mark), allocated at a
//!   task's first wait.
//! - A CPU's wake list (`call_single_queue` and `rq->ttwu_pending`,
//!   kernel/sched/core.c `__ttwu_queue_wakelist`, `sched_ttwu_pending`):
//!   written by a remote waker when `ttwu_queue_cond` sends the wake-up
//!   there, and by the CPU when it empties the list at its next switch.
//! - A CPU's idle task's `thread_info` flags (kernel/sched/idle.c
//!   `current_set_polling_and_test`, `current_clr_polling`; core.c
//!   `set_nr_if_polling`, `resched_curr`): written by the CPU at idle
//!   entry and exit and by the waker that kicks it.
//! - `jiffies` (kernel/time/tick-sched.c `tick_do_update_jiffies64`):
//!   written by the tick that advances it, read at every idle entry that
//!   considers stopping the tick (`tick_nohz_next_event`).

use super::Kernel;
use crate::cacheline::{LineId, LineKind};
use crate::costs::kernel_objects::futex_lines;
use crate::placement::linux::TtwuQueue;
use crate::Nanos;

/// No line allocated yet.
pub(super) const NO_LINE: LineId = LineId::MAX;

impl Kernel<'_> {
    /// Allocate a futex word (a line of user memory) and its hash bucket
    /// after it; returns the word's line.
    pub fn alloc_futex_word(&mut self) -> LineId {
        let word = self.lines.alloc();
        let (hb, _) = futex_lines();
        self.lines.alloc_of(LineKind::FutexHashBucket, hb);
        word
    }

    /// Task `task`'s `futex_q` record, allocated at its first wait.
    fn futex_q(&mut self, task: usize) -> LineId {
        if self.futex_q[task] == NO_LINE {
            let (_, q) = futex_lines();
            self.futex_q[task] = self.lines.alloc_of(LineKind::FutexQ, q);
        }
        self.futex_q[task]
    }

    /// futex_wait's kernel objects, on `c` for task `task` going to sleep
    /// on the futex whose word is `word` (from `alloc_futex_word`): the hash
    /// bucket (waiters count, lock, chain) and the waiter's `futex_q`, last
    /// written by its previous waker. Returns the cost.
    pub fn futex_wait_lines(&mut self, word: LineId, task: usize, c: usize) -> Nanos {
        self.write_bucket_and_futex_q(word, task, c)
    }

    /// `c` writes the hash bucket of the futex whose word is `word` and
    /// task `task`'s futex_q: what both a wait and a wake with a waiter do.
    fn write_bucket_and_futex_q(&mut self, word: LineId, task: usize, c: usize) -> Nanos {
        let q = self.futex_q(task);
        self.lines.write(word + 1, c, self.topo, &self.costs)
            + self.lines.write(q, c, self.topo, &self.costs)
    }

    /// futex_wake's kernel objects on `c` for the futex whose word is
    /// `word`: with a waiter `woken`, the bucket is locked and the waiter's
    /// `futex_q` unlinked (lines its waiter wrote); with none, the bucket's
    /// waiters count is only read. Returns the cost.
    pub fn futex_wake_lines(&mut self, word: LineId, c: usize, woken: Option<usize>) -> Nanos {
        match woken {
            Some(t) => self.write_bucket_and_futex_q(word, t, c),
            None => self.lines.read(word + 1, c, self.topo, &self.costs),
        }
    }

    /// ttwu_queue_cond: does a wake-up from `waker_cpu` onto `cpu`, whose
    /// run queue holds `nr_running` tasks before it, go through `cpu`'s
    /// wake list?
    #[inline]
    pub fn ttwu_queue_cond(&self, waker_cpu: usize, cpu: usize, nr_running: u32) -> bool {
        if cpu == waker_cpu {
            return false;
        }
        match self.ttwu_queue {
            TtwuQueue::Off => false,
            TtwuQueue::CrossLlc => self.sd.llc_index(cpu) != self.sd.llc_index(waker_cpu),
            TtwuQueue::CrossLlcOrIdle => {
                nr_running == 0 || self.sd.llc_index(cpu) != self.sd.llc_index(waker_cpu)
            }
        }
    }

    /// __ttwu_queue_wakelist on `waker_cpu`: the wakee goes on `cpu`'s
    /// list and `ttwu_pending` is set; `cpu` empties the list at its next
    /// switch ([`Kernel::flush_wake_list_lines`]). Returns the cost.
    #[inline]
    pub fn queue_wake_list_lines(&mut self, cpu: usize, waker_cpu: usize) -> Nanos {
        self.wake_list_pending[cpu] = true;
        let line = self.cpu_lines + 2 * cpu as LineId;
        self.lines.write(line, waker_cpu, self.topo, &self.costs)
    }

    /// sched_ttwu_pending on `c`, if a remote waker queued to it: the list
    /// head and `ttwu_pending`, written by that waker, come back. Returns
    /// the cost.
    #[inline]
    pub fn flush_wake_list_lines(&mut self, c: usize) -> Nanos {
        if !std::mem::take(&mut self.wake_list_pending[c]) {
            return 0;
        }
        let line = self.cpu_lines + 2 * c as LineId;
        self.lines.write(line, c, self.topo, &self.costs)
    }

    /// `writer` writes `cpu`'s idle task's `thread_info` flags: `cpu`
    /// itself at idle entry and exit, a waker kicking it. Returns the cost.
    #[inline]
    pub fn idle_thread_info_lines(&mut self, cpu: usize, writer: usize) -> Nanos {
        let line = self.cpu_lines + 2 * cpu as LineId + 1;
        self.lines.write(line, writer, self.topo, &self.costs)
    }

    /// The tick on `c` at jiffy `jiffies`: the first tick of a jiffy
    /// advances `jiffies` (tick_do_update_jiffies64; the model gives the
    /// duty to whichever CPU's tick comes first). Returns the cost.
    #[inline]
    pub fn tick_jiffies_lines(&mut self, c: usize, jiffies: u64) -> Nanos {
        if jiffies <= self.jiffies_written {
            return 0;
        }
        self.jiffies_written = jiffies;
        self.lines
            .write(self.jiffies_line, c, self.topo, &self.costs)
    }

    /// tick_nohz_next_event on `c` entering idle: it reads `jiffies`.
    /// Returns the cost.
    #[inline]
    pub fn idle_jiffies_lines(&mut self, c: usize) -> Nanos {
        self.lines
            .read(self.jiffies_line, c, self.topo, &self.costs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::costs::MachineCosts;
    use crate::placement::linux::{Features, LinuxPlacement};
    use topology::{SchedDomains, Topology};

    fn machine() -> (Topology, SchedDomains) {
        // two LLCs of 24 CPUs (Kunpeng 920 node: four clusters per die)
        let topo = topology::preset("kunpeng920").unwrap();
        let f = Features::kernel("latest").unwrap();
        let sd = SchedDomains::build(&topo, &f.domain_options());
        (topo, sd)
    }

    fn kernel<'t>(topo: &'t Topology, sd: &'t SchedDomains) -> Kernel<'t> {
        let f = Features::kernel("latest").unwrap();
        let mut k = Kernel::boot(
            topo,
            sd,
            MachineCosts::for_machine(topo.name()),
            Box::new(LinuxPlacement::new(f)),
        );
        k.add_task(CpuMask::from_range(0, topo.nr_cpus() - 1), 0);
        k.add_task(CpuMask::from_range(0, topo.nr_cpus() - 1), 0);
        k
    }
    use topology::CpuMask;

    #[test]
    fn a_futex_moves_its_bucket_and_the_waiters_futex_q_between_waiter_and_waker() {
        let (topo, sd) = machine();
        let mut k = kernel(&topo, &sd);
        let word = k.alloc_futex_word();
        let (waiter, waker) = (0, 4); // another cluster of the same die
                                      // first wait: nothing was written before, so nothing moves
        assert_eq!(k.futex_wait_lines(word, 1, waiter), 0);
        // the wake takes the bucket and the waiter's futex_q from the waiter
        let before = k.lines.by_kind();
        assert!(k.futex_wake_lines(word, waker, Some(1)) > 0);
        let moved = |k: &Kernel, kind: LineKind| -> u64 {
            k.lines.by_kind()[kind as usize].iter().sum::<u64>()
                - before[kind as usize].iter().sum::<u64>()
        };
        let (hb, q) = futex_lines();
        assert_eq!(moved(&k, LineKind::FutexHashBucket), hb as u64);
        assert_eq!(moved(&k, LineKind::FutexQ), q as u64);
        // the next wait takes both back
        assert!(k.futex_wait_lines(word, 1, waiter) > 0);
        assert_eq!(moved(&k, LineKind::FutexQ), 2 * q as u64);
        // a wake that finds no waiter only reads the bucket, from the waiter
        let t0 = k.lines.transfers();
        assert!(k.futex_wake_lines(word, waker, None) > 0);
        assert_eq!(k.lines.transfers(), t0 + 1);
        // and reading it again costs no transfer
        let _ = k.futex_wake_lines(word, waker, None);
        assert_eq!(k.lines.transfers(), t0 + 1);
    }

    #[test]
    fn resched_curr_from_another_cpu_moves_one_thread_info_line_there_and_back() {
        let (topo, sd) = machine();
        let mut k = kernel(&topo, &sd);
        let (target, waker) = (0, 4); // another cluster of the same die
        let moved = |k: &Kernel| -> u64 {
            k.lines.by_kind()[LineKind::TaskStruct as usize]
                .iter()
                .sum()
        };
        // task 0 switched in on the target: its lines are the target's
        let _ = k.switch_in_task_lines(0, target);
        let before = moved(&k);
        // the tick's resched of its own task moves nothing
        assert_eq!(k.resched_curr_lines(0, target), 0);
        assert_eq!(moved(&k), before);
        // a pre-empting waker elsewhere takes the flags' line, not the
        // whole task_struct
        assert!(k.resched_curr_lines(0, waker) > 0);
        assert_eq!(moved(&k), before + 1);
        // the target's schedule clears the flag: the line comes back once
        assert!(k.clear_need_resched_lines(0, target) > 0);
        assert_eq!(moved(&k), before + 2);
        assert_eq!(k.clear_need_resched_lines(0, target), 0);
        // a wake-up still moves all the task_struct lines the inventory has
        let (task_struct, _) = crate::costs::kernel_objects::task_lines();
        assert!(k.ttwu_task_lines(0, waker) > 0);
        assert_eq!(moved(&k), before + 2 + task_struct as u64);
    }

    #[test]
    fn the_wake_list_is_used_across_llcs_and_for_idle_targets_by_version() {
        let (topo, sd) = machine();
        let mut k = kernel(&topo, &sd);
        let other_llc = topo.nr_cpus() / 2;
        assert_ne!(sd.llc_index(0), sd.llc_index(other_llc));
        k.ttwu_queue = TtwuQueue::CrossLlc;
        assert!(k.ttwu_queue_cond(0, other_llc, 1));
        assert!(!k.ttwu_queue_cond(0, 1, 0));
        assert!(!k.ttwu_queue_cond(0, 0, 0));
        k.ttwu_queue = TtwuQueue::CrossLlcOrIdle;
        assert!(k.ttwu_queue_cond(0, 1, 0));
        assert!(!k.ttwu_queue_cond(0, 1, 1));
        assert!(!k.ttwu_queue_cond(0, 0, 0));
        k.ttwu_queue = TtwuQueue::Off;
        assert!(!k.ttwu_queue_cond(0, other_llc, 0));
        assert_eq!(
            Features::kernel("linux-5.10").unwrap().ttwu_queue,
            TtwuQueue::CrossLlc
        );
        assert_eq!(
            Features::kernel("linux-6.1").unwrap().ttwu_queue,
            TtwuQueue::CrossLlcOrIdle
        );
    }

    #[test]
    fn a_queued_wake_up_moves_the_list_to_the_waker_and_back_once() {
        let (topo, sd) = machine();
        let mut k = kernel(&topo, &sd);
        let other_llc = topo.nr_cpus() / 2;
        // nothing queued: the flush is free
        assert_eq!(k.flush_wake_list_lines(other_llc), 0);
        let _ = k.queue_wake_list_lines(other_llc, 0);
        k.lines.now = 1_000_000;
        assert!(k.flush_wake_list_lines(other_llc) > 0);
        let lines = crate::costs::kernel_objects::wake_list_lines() as u64;
        assert_eq!(lines, 2, "the llist head and the ttwu_pending line");
        let moved: u64 = k.lines.by_kind()[LineKind::WakeList as usize].iter().sum();
        assert_eq!(moved, lines);
        // emptied: a second flush moves nothing
        assert_eq!(k.flush_wake_list_lines(other_llc), 0);
    }

    #[test]
    fn jiffies_are_written_once_per_jiffy_and_read_at_idle_entry() {
        let (topo, sd) = machine();
        let mut k = kernel(&topo, &sd);
        let _ = k.tick_jiffies_lines(0, 5);
        // the same jiffy's other ticks do not write
        let t0 = k.lines.transfers();
        assert_eq!(k.tick_jiffies_lines(4, 5), 0);
        assert_eq!(k.lines.transfers(), t0);
        // another CPU entering idle reads it from CPU 0
        assert!(k.idle_jiffies_lines(4) > 0);
        let moved: u64 = k.lines.by_kind()[LineKind::Jiffies as usize].iter().sum();
        assert_eq!(moved, 1);
    }
}
