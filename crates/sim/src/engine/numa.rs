//! Automatic NUMA balancing in the engine (the memory timing of an
//! `Op::ComputeMem` segment, its first touch and the remote-memory
//! slowdown, is `engine/numa_memory.rs`): the hinting faults
//! `do_numa_page` -> `task_numa_fault`,
//! the tick's `task_tick_numa`, the scan `task_numa_work` run on return to
//! user, `init_numa_balancing` at fork, and the task moves of
//! `numa_migrate_preferred` -> `task_numa_migrate` (kernel/sched/fair.c,
//! mm/memory.c, mm/mprotect.c; Linux 4.17-6.19 as the toggles of
//! [`NumaFeatures`] say). The per-task arithmetic is in
//! `crate::numa::balancing`.

use super::{Engine, Mode, TaskState};
use crate::event::Event;
use crate::numa::balancing::{self as nb, TaskNuma};
use crate::numa::memory::{CpuPid, Memory, NO_NODE, PAGES_PER_CHUNK};
use crate::numa::{AccessId, MemPolicy, NumaCounters, NumaFeatures, NumaParams, RegionId, Span};
use crate::rq::RunQueue;
use crate::task::TaskId;
use crate::Nanos;

#[path = "numa_memory.rs"]
mod memory;

const MS: Nanos = 1_000_000;
/// PELT's `LOAD_AVG_MAX`.
const LOAD_AVG_MAX: Nanos = 47742;

/// The engine's memory and NUMA-balancing state (None until a workload
/// declares memory).
pub(super) struct NumaState {
    mem: Memory,
    params: NumaParams,
    features: NumaFeatures,
    /// Per task (None: its mm has no memory, or it is not born yet).
    tasks: Vec<Option<TaskNuma>>,
    counters: NumaCounters,
    /// Each CPU's node.
    node_of: Vec<u16>,
    /// A move pending on a CPU's stopper.
    pushes: Vec<Option<Push>>,
    /// `rq->numa_migrate_on`: a NUMA move targets this CPU.
    migrate_on: Vec<bool>,
    /// Per node: `Op::ComputeMem` segments now streaming from it.
    streams: Vec<u32>,
    /// Per CPU: what its running `Op::ComputeMem` segment streams.
    held: Vec<SegMem>,
    /// The numa groups (`TaskNuma::group` indexes them; an emptied group
    /// stays, with no members).
    groups: Vec<nb::NumaGroup>,
}

/// The memory traffic of a running `Op::ComputeMem` segment, kept to
/// re-time it when the streams sharing a node change, and its sweep.
#[derive(Clone, Debug, Default)]
struct SegMem {
    /// The segment holds a stream on each node it reads.
    active: bool,
    /// The op's CPU work, ns.
    work: Nanos,
    /// Its traffic by the node of the pages, bytes.
    bytes: Vec<u64>,
    /// The op's walk over its access (None: no `Op::ComputeMem` runs).
    sweep: Option<Sweep>,
}

/// Where a running `Op::ComputeMem`'s loop is in its access: the op's
/// progress in work units (its local-speed time), up to which the chunks
/// it reached have taken their hinting faults.
#[derive(Clone, Copy, Debug)]
struct Sweep {
    task: TaskId,
    access: AccessId,
    /// The op's whole work (`compute_mem_work`).
    total: Nanos,
    /// Progress swept so far.
    done: Nanos,
}

/// How far [`Engine::numa_sweep`] brings a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SweepTo {
    /// To now; the segment runs on.
    Now,
    /// To now; the segment stops (preempted), the op resumes later.
    NowAndStop,
    /// To the op's end (its segment completed it).
    End,
}

/// A move pending on a CPU's stopper.
#[derive(Clone, Copy, Debug)]
struct Push {
    /// The task to move.
    task: TaskId,
    /// Where to.
    dst: usize,
    /// Half of a swap: the other half's task (on `dst`) and whether this
    /// is the initiator's half.
    swap: Option<(TaskId, bool)>,
}

/// A move `task_numa_migrate` chose.
enum NumaMove {
    /// To an idle CPU of the preferred node.
    Move(usize),
    /// Swap with the task running on this CPU.
    Swap(usize, TaskId),
}

impl NumaState {
    /// (`task_scan_max`, `task_scan_start`) of `t` with `rss_bytes`
    /// resident, scaled by its group.
    fn scan_bounds(&self, t: TaskId, rss_bytes: u64) -> (u64, u64) {
        let group = self
            .tasks
            .get(t.idx())
            .and_then(|x| x.as_ref())
            .and_then(|tn| tn.group)
            .map(|g| &self.groups[g as usize]);
        (
            nb::task_scan_max_grouped(rss_bytes, &self.params, group),
            nb::task_scan_start_grouped(rss_bytes, &self.params, group),
        )
    }

    /// The balancer's view (None while balancing is off: the kernel's
    /// `sched_numa_balancing` static key).
    pub(super) fn locality(&self) -> Option<&dyn crate::balance::NumaLocality> {
        self.params
            .enabled
            .then_some(self as &dyn crate::balance::NumaLocality)
    }
}

impl crate::balance::NumaLocality for NumaState {
    fn preferred(&self, p: u32) -> Option<u16> {
        self.tasks.get(p as usize)?.as_ref()?.preferred
    }

    fn weight(&self, p: u32, node: usize) -> Option<i64> {
        let tn = self.tasks.get(p as usize)?.as_ref()?;
        if tn.total_faults == 0 {
            return None;
        }
        Some(match tn.group {
            Some(g) => nb::group_weight(&self.groups[g as usize], node),
            None => nb::task_weight(tn, node),
        })
    }
}

impl<'t, R: RunQueue> Engine<'t, R> {
    fn numa_state(&mut self) -> &mut NumaState {
        if self.numa.is_none() {
            let node_of = (0..self.k.topo.nr_cpus())
                .map(|c| self.k.topo.place(c).node as u16)
                .collect();
            self.numa = Some(Box::new(NumaState {
                mem: Memory::default(),
                params: NumaParams::default(),
                features: NumaFeatures::default(),
                tasks: Vec::new(),
                counters: NumaCounters::default(),
                node_of,
                pushes: vec![None; self.k.topo.nr_cpus()],
                migrate_on: vec![false; self.k.topo.nr_cpus()],
                streams: vec![0; self.k.topo.nr_nodes()],
                held: vec![SegMem::default(); self.k.topo.nr_cpus()],
                groups: Vec::new(),
            }));
        }
        self.numa.as_mut().expect("just set")
    }

    /// Configure memory placement and NUMA balancing (the run's
    /// `--numa-balancing`, `--mem-policy` and the kernel's toggles).
    pub fn set_numa(&mut self, params: NumaParams, features: NumaFeatures, policy: MemPolicy) {
        let s = self.numa_state();
        s.params = params;
        s.features = features;
        s.mem.policy = policy;
    }

    /// Whether a workload declared memory (`add_region`).
    pub fn has_memory(&self) -> bool {
        self.numa.is_some()
    }

    /// Add an array of `bytes` to address space `mm` (the `TaskSpec::mm`
    /// of the process's threads). Its pages are placed when an op first
    /// touches them.
    pub fn add_region(&mut self, mm: u32, name: &str, bytes: u64) -> RegionId {
        self.numa_state().mem.add_region(mm, name, bytes)
    }

    /// Declare what one `Op::ComputeMem` touches. A span outside its
    /// region is a bug of the workload model: it panics naming the span.
    pub fn add_access(&mut self, spans: &[Span]) -> AccessId {
        match self.numa_state().mem.add_access(spans) {
            Ok(a) => a,
            Err(e) => panic!("workload model: {e}"),
        }
    }

    /// The run's NUMA counters, with the derived ones (None: no memory
    /// was declared).
    pub fn numa_counters(&self) -> Option<NumaCounters> {
        self.numa.as_ref().map(|s| s.counters.derive())
    }

    /// A task's NUMA-balancing state (None: it has no memory or was never
    /// born).
    pub fn task_numa(&self, t: TaskId) -> Option<&TaskNuma> {
        self.numa.as_ref()?.tasks.get(t.idx())?.as_ref()
    }

    /// The CPU whose run queue holds `t`, or held it last (task_cpu).
    pub fn task_cpu(&self, t: TaskId) -> usize {
        self.tasks[t.idx()].cpu
    }

    /// The numa group of `t` (None: none).
    pub fn task_numa_group_of(&self, t: TaskId) -> Option<&nb::NumaGroup> {
        let s = self.numa.as_ref()?;
        let g = s.tasks.get(t.idx())?.as_ref()?.group?;
        s.groups.get(g as usize)
    }

    /// Pages resident per node.
    pub fn pages_per_node(&self) -> Vec<u64> {
        match &self.numa {
            Some(s) => s.mem.pages_per_node(self.k.topo.nr_nodes()),
            None => vec![0; self.k.topo.nr_nodes()],
        }
    }

    /// `init_numa_balancing` (at fork, `sched_fork`): a task whose mm has
    /// memory gets its scan state; the mm's first user sets the mm's first
    /// scan time; a new thread (CLONE_VM) inherits its creator's preferred
    /// node and, with the 4.19 stagger, waits its turn.
    pub(super) fn init_numa_balancing(&mut self, t: TaskId) {
        let Some(s) = self.numa.as_deref_mut() else {
            return;
        };
        let ti = t.idx();
        let mm = self.tasks[ti].spec.mm;
        let Some(space) = s.mem.find_space(mm) else {
            return;
        };
        if s.tasks.len() < self.tasks.len() {
            s.tasks.resize(self.tasks.len(), None);
        }
        let nodes = self.k.topo.nr_nodes();
        let sp = &mut s.mem.spaces[space];
        let users = sp.users as u64;
        sp.users += 1;
        if users == 0 {
            sp.numa_next_scan = self.now + s.params.scan_delay_ms * MS;
            sp.numa_scan_seq = 0;
            s.tasks[ti] = Some(TaskNuma::new(nodes, &s.params, 0, None));
            return;
        }
        // a thread of an mm already in use: created by its parent when
        // that shares the mm, else by the mm's first task
        let (resident, scan_seq) = (sp.resident, sp.numa_scan_seq);
        let creator = self.tasks[ti]
            .spec
            .parent
            .filter(|&p| self.tasks[p.idx()].spec.mm == mm && s.tasks[p.idx()].is_some())
            .or_else(|| {
                (0..t.0)
                    .map(TaskId)
                    .find(|&o| self.tasks[o.idx()].spec.mm == mm && s.tasks[o.idx()].is_some())
            });
        let (preferred, period, max) = match creator {
            Some(c) => {
                let ctn = s.tasks[c.idx()].as_ref().expect("found with state");
                let rss = resident * crate::numa::memory::CHUNK_BYTES;
                (ctn.preferred, ctn.scan_period_ms, s.scan_bounds(c, rss).0)
            }
            None => (None, s.params.scan_delay_ms, s.params.scan_period_max_ms),
        };
        let stagger = if s.features.scan_stagger {
            nb::stagger_delay(max, period, users, self.k.tick_ns, s.features.stagger_units)
        } else {
            0
        };
        let mut tn = TaskNuma::new(nodes, &s.params, stagger, preferred);
        tn.scan_seq = scan_seq;
        s.tasks[ti] = Some(tn);
    }

    /// A task of an mm with memory exits (`mm_users` drops).
    pub(super) fn numa_exit(&mut self, t: TaskId) {
        let Some(s) = self.numa.as_deref_mut() else {
            return;
        };
        if let Some(Some(tn)) = s.tasks.get(t.idx()) {
            let mm = self.tasks[t.idx()].spec.mm;
            if let Some(sp) = s.mem.find_space(mm) {
                s.mem.spaces[sp].users = s.mem.spaces[sp].users.saturating_sub(1);
            }
            // task_numa_free: its statistics leave its group
            if let Some(g) = tn.group {
                s.groups[g as usize].transfer(tn, false);
            }
        }
    }

    /// `task_numa_fault`: account one chunk's fault to `t` (its pages),
    /// and run placement when the retry time has passed.
    #[allow(clippy::too_many_arguments)]
    fn task_numa_fault(
        &mut self,
        c: usize,
        t: TaskId,
        last: Option<CpuPid>,
        mem_node: u16,
        local: bool,
        migrated: bool,
        pages: u64,
    ) {
        let now = self.now;
        let Some(s) = self.numa.as_deref_mut() else {
            return;
        };
        let ti = t.idx();
        if !s.params.enabled || s.tasks.get(ti).is_none_or(|x| x.is_none()) {
            return;
        }
        let mut private = last.is_none_or(|l| l.pid8 == (t.0 & 0xff) as u8);
        if !private {
            // every modelled access may write: no TNF_NO_GROUP
            private = !self.task_numa_group(t, last.expect("a shared fault has a last cpupid"));
        }
        let s = self.numa.as_deref_mut().expect("checked");
        let cpu_node = s.node_of[c] as usize;
        let mut local = local;
        if let Some(g) = s.tasks[ti].as_ref().and_then(|tn| tn.group) {
            // a shared fault within the nodes a spread group uses counts as
            // local, so a settled group's scanning slows down
            let g = &s.groups[g as usize];
            if !private
                && !local
                && g.active_nodes > 1
                && g.is_active(cpu_node)
                && g.is_active(mem_node as usize)
            {
                local = true;
            }
        }
        let tn = s.tasks[ti].as_ref().expect("checked");
        let (retry, before) = (tn.migrate_retry, tn.preferred);
        if s.features.placement_at_retry {
            // 4.19+ (b6a60cf36d49): placement and the move attempt once
            // the retry time has passed
            if now > retry {
                self.task_numa_placement(t);
                self.numa_migrate_preferred(c, t);
            }
        } else {
            // up to 4.18: placement at every fault; a move attempt when the
            // preferred node changed or the retry time has passed
            self.task_numa_placement(t);
            let s = self.numa.as_deref().expect("checked");
            let after = s.tasks[ti].as_ref().expect("checked").preferred;
            if after != before || now > retry {
                self.numa_migrate_preferred(c, t);
            }
        }
        let s = self.numa.as_deref_mut().expect("checked");
        let tn = s.tasks[ti].as_mut().expect("checked");
        tn.faulted = true;
        if migrated {
            tn.pages_migrated += pages;
        }
        let i = tn.idx(nb::FaultStat::MemBuf, mem_node as usize, private);
        tn.faults[i] += pages;
        let i = tn.idx(nb::FaultStat::CpuBuf, cpu_node, private);
        tn.faults[i] += pages;
        tn.locality[local as usize] += pages;
    }

    /// `task_numa_group`: a shared fault on a page `last` left. `t` gets a
    /// group of its own first; it joins the group of the task now running
    /// on `last`'s CPU when that task's pid bits match, it has a group, the
    /// groups differ, that group is not smaller (ties: the older group) and
    /// the two share the mm (threads; separate processes would need a
    /// VM_SHARED mapping, not modelled). Returns whether the fault stays
    /// shared: false only when a candidate was found and not joined (the
    /// kernel's `*priv = !join`).
    fn task_numa_group(&mut self, t: TaskId, last: CpuPid) -> bool {
        let ti = t.idx();
        let s = self.numa.as_deref_mut().expect("caller checked");
        if s.tasks[ti]
            .as_ref()
            .expect("caller checked")
            .group
            .is_none()
        {
            let tn = s.tasks[ti].as_ref().expect("caller checked");
            s.groups.push(nb::NumaGroup::of_task(tn, t.0));
            s.tasks[ti].as_mut().expect("caller checked").group = Some(s.groups.len() as u32 - 1);
        }
        let cpu = last.cpu as usize;
        let running = self.cpus[cpu]
            .rq
            .curr()
            .map(TaskId)
            .filter(|_| self.cpus[cpu].mode == Mode::Busy);
        // no candidate: the fault stays shared
        let Some(other) = running.filter(|&o| (o.0 & 0xff) as u8 == last.pid8) else {
            return true;
        };
        let Some(their) = s
            .tasks
            .get(other.idx())
            .and_then(|x| x.as_ref())
            .and_then(|x| x.group)
        else {
            return true;
        };
        let mine = s.tasks[ti]
            .as_ref()
            .expect("caller checked")
            .group
            .expect("just set");
        if their == mine {
            return true;
        }
        let (gm, gt) = (&s.groups[mine as usize], &s.groups[their as usize]);
        if gm.nr_tasks > gt.nr_tasks || (gm.nr_tasks == gt.nr_tasks && mine > their) {
            return true;
        }
        if self.tasks[other.idx()].spec.mm != self.tasks[ti].spec.mm {
            // different processes join only over a VM_SHARED mapping
            // (TNF_SHARED), which the model does not have: taken as private
            return false;
        }
        let tn = s.tasks[ti].as_mut().expect("caller checked");
        s.groups[mine as usize].transfer(tn, false);
        s.groups[their as usize].transfer(tn, true);
        tn.group = Some(their);
        true
    }

    /// `task_numa_placement`: once per completed scan pass of the mm,
    /// decay and fold the fault statistics, choose the preferred node and
    /// adapt the scan period.
    fn task_numa_placement(&mut self, t: TaskId) {
        let ti = t.idx();
        let now = self.now;
        let exec = self.task_exec_now(t);
        let s = self.numa.as_deref_mut().expect("caller checked");
        let space = s
            .mem
            .find_space(self.tasks[ti].spec.mm)
            .expect("a task with state has memory");
        let mm_seq = s.mem.spaces[space].numa_scan_seq;
        let rss = s.mem.spaces[space].resident * crate::numa::memory::CHUNK_BYTES;
        if s.tasks[ti].as_ref().expect("caller checked").scan_seq == mm_seq {
            return;
        }
        let (scan_max, _) = s.scan_bounds(t, rss);
        let sp = &mut s.mem.spaces[space];
        let tn = s.tasks[ti].as_mut().expect("caller checked");
        tn.scan_seq = mm_seq;
        tn.scan_period_max_ms = scan_max;
        let (runtime, period) = if tn.last_time == 0 {
            // the first time the kernel takes load_sum / LOAD_AVG_MAX
            // (numa_get_avg_runtime): a task runnable throughout has
            // about all of it
            (LOAD_AVG_MAX, LOAD_AVG_MAX)
        } else {
            (exec - tn.last_exec, now - tn.last_time)
        };
        tn.last_exec = exec;
        tn.last_time = now;
        let group = tn.group.map(|g| &mut s.groups[g as usize]);
        let pl = nb::task_numa_placement(tn, group, runtime, period);
        if let Some(n) = pl.max_node {
            // sched_setnuma
            tn.preferred = Some(n);
        }
        let min = nb::task_scan_min(rss, &s.params);
        if nb::update_task_scan_period(tn, pl.shared, pl.private, min, tn.scan_period_max_ms) {
            sp.numa_next_scan = now + tn.scan_period_ms * MS;
        }
    }

    /// `numa_migrate_preferred`: set the retry time and, off the preferred
    /// node, look for a CPU there.
    fn numa_migrate_preferred(&mut self, c: usize, t: TaskId) {
        let now = self.now;
        let s = self.numa.as_deref_mut().expect("caller checked");
        let tn = s.tasks[t.idx()].as_mut().expect("caller checked");
        let Some(pref) = tn.preferred else {
            return;
        };
        if tn.total_faults == 0 {
            return;
        }
        tn.migrate_retry = now + (tn.scan_period_ms * MS / 16).min(1000 * MS);
        if s.node_of[c] == pref {
            return;
        }
        let (m, preferred) = self.task_numa_migrate(c, t, pref);
        if let Some(p) = preferred {
            let s = self.numa.as_deref_mut().expect("caller checked");
            s.tasks[t.idx()].as_mut().expect("caller checked").preferred = Some(p);
        }
        if let Some(m) = m {
            self.numa_push(c, t, m);
        }
    }

    /// `task_numa_migrate` / `task_numa_find_cpu` / `task_numa_compare`
    /// (5.7+ shape, 6.1+ allowed imbalance approximated), for direct
    /// topologies: on the preferred node `dst`, then (when nothing was
    /// found, or the task's group is spread over more than one active node)
    /// on every other node that the task or its group would gain from, a
    /// move to an idle CPU (an idle core first) when the node has spare
    /// capacity and the move keeps the nodes within the allowed imbalance;
    /// else a swap with the running task whose exchange improves locality
    /// by at least SMALLIMP (30) per mille. A grouped task then prefers the
    /// node it goes to (or stays on), so a spread group settles. Moves to a
    /// busy CPU without a swap are not modelled.
    fn task_numa_migrate(&self, c: usize, t: TaskId, dst: u16) -> (Option<NumaMove>, Option<u16>) {
        let Some(s) = self.numa.as_deref() else {
            return (None, None);
        };
        let Some(tn) = s.tasks[t.idx()].as_ref() else {
            return (None, None);
        };
        let src_node = s.node_of[c] as usize;
        let group = tn.group.map(|g| &s.groups[g as usize]);
        let gw = |n: usize| group.map_or(0, |g| nb::group_weight(g, n));
        let (task_src, group_src) = (nb::task_weight(tn, src_node), gw(src_node));
        let mut best: Option<(i64, NumaMove)> = None;
        let try_node = |node: usize, best: &mut Option<(i64, NumaMove)>| {
            let taskimp = nb::task_weight(tn, node) - task_src;
            let groupimp = gw(node) - group_src;
            self.task_numa_find_cpu(c, t, tn, group, src_node, node, taskimp, groupimp, best);
        };
        try_node(dst as usize, &mut best);
        if best.is_none() || group.is_some_and(|g| g.active_nodes > 1) {
            for node in 0..self.k.topo.nr_nodes() {
                if node == src_node || node == dst as usize {
                    continue;
                }
                // only nodes where the task or its group gains
                if nb::task_weight(tn, node) < task_src && gw(node) < group_src {
                    continue;
                }
                try_node(node, &mut best);
            }
        }
        let target = best.as_ref().map(|(_, m)| match *m {
            NumaMove::Move(x) | NumaMove::Swap(x, _) => s.node_of[x],
        });
        let preferred = group.map(|_| target.unwrap_or(src_node as u16));
        (best.map(|b| b.1), preferred)
    }

    /// `task_numa_find_cpu` on `node` for `t` (on CPU `c` of `src_node`):
    /// an idle CPU when a move is allowed, else the best swap partner;
    /// `best` keeps the best candidate across nodes.
    #[allow(clippy::too_many_arguments)]
    fn task_numa_find_cpu(
        &self,
        c: usize,
        t: TaskId,
        tn: &TaskNuma,
        group: Option<&nb::NumaGroup>,
        src_node: usize,
        node: usize,
        taskimp: i64,
        groupimp: i64,
        best: &mut Option<(i64, NumaMove)>,
    ) {
        let s = self.numa.as_deref().expect("caller checked");
        let allowed = &self.k.tplace[t.idx()].cpus_allowed;
        let running = |n: usize| -> usize {
            self.k
                .topo
                .node_cpus(n)
                .iter()
                .map(|x| self.cpus[x].rq.nr_running() as usize)
                .sum()
        };
        let dst_cpus = self.k.topo.node_cpus(node);
        let (src_running, dst_running) = (running(src_node), running(node));
        // numa_classify: spare capacity while fewer tasks than CPUs
        let has_spare = dst_running < dst_cpus.weight();
        let moveimp = if group.is_some() { groupimp } else { taskimp };
        if has_spare {
            // the allowed imbalance (adjust_numa_imbalance): up to
            // NUMA_IMBALANCE_MIN (2) tasks while the destination would run
            // at most the lowest NUMA domain's imb_numa_nr (5.18+ builds),
            // or fewer than a quarter of its CPUs (5.11-5.17, no
            // imb_numa_nr)
            let imbalance = (dst_running + 1).saturating_sub(src_running.saturating_sub(1));
            let imb_numa_nr = self
                .k
                .sd
                .domains(c)
                .iter()
                .find(|d| d.flags & topology::sd_flags::NUMA != 0)
                .map_or(0, |d| d.imb_numa_nr as usize);
            let allowed_running = if imb_numa_nr > 0 {
                dst_running < imb_numa_nr
            } else {
                dst_running + 1 < dst_cpus.weight() / 4
            };
            let forgiven = imbalance <= 2 && allowed_running;
            if (imbalance == 0 || forgiven) && best.as_ref().is_none_or(|(b, _)| moveimp > *b) {
                let idle = |x: usize| {
                    self.cpus[x].rq.nr_running() == 0 && allowed.test(x) && !s.migrate_on[x]
                };
                let core_idle = |x: usize| {
                    self.k
                        .topo
                        .smt_siblings(x)
                        .iter()
                        .all(|&y| idle(y as usize))
                };
                let pick = dst_cpus
                    .iter()
                    .find(|&x| idle(x) && core_idle(x))
                    .or_else(|| dst_cpus.iter().find(|&x| idle(x)));
                if let Some(x) = pick {
                    *best = Some((moveimp, NumaMove::Move(x)));
                    return;
                }
            }
        }
        for x in dst_cpus.iter() {
            if !allowed.test(x) || self.cpus[x].mode != Mode::Busy || s.migrate_on[x] {
                continue;
            }
            let Some(cur) = self.cpus[x].rq.curr().map(TaskId) else {
                continue;
            };
            if cur == t || !self.k.tplace[cur.idx()].cpus_allowed.test(c) {
                continue;
            }
            let Some(ctn) = s.tasks.get(cur.idx()).and_then(|o| o.as_ref()) else {
                continue;
            };
            let cur_group = ctn.group.map(|g| &s.groups[g as usize]);
            // cur_ng == p_ng, also when neither has a group
            let same_group = ctn.group == tn.group;
            let mut imp = if same_group {
                // 5.19+: no swaps inside a group (or between two ungrouped
                // tasks) while dst has room
                if has_spare {
                    continue;
                }
                let i = taskimp + nb::task_weight(ctn, src_node) - nb::task_weight(ctn, node);
                if ctn.group.is_some() {
                    i - i / 16
                } else {
                    i
                }
            } else {
                let base = if group.is_some() { groupimp } else { taskimp };
                base + match (cur_group, group) {
                    (Some(cg), Some(_)) => {
                        nb::group_weight(cg, src_node) - nb::group_weight(cg, node)
                    }
                    _ => nb::task_weight(ctn, src_node) - nb::task_weight(ctn, node),
                }
            };
            // 5.7+: bias by the partner's preference
            match ctn.preferred {
                Some(p) if p as usize == node => imp -= imp / 16,
                Some(p) if p as usize == src_node => imp += imp / 8,
                _ => {}
            }
            // SMALLIMP, and the hysteresis over the best so far
            if imp < 30 || best.as_ref().is_some_and(|(b, _)| imp <= b + 15) {
                continue;
            }
            *best = Some((imp, NumaMove::Swap(x, cur)));
        }
    }

    /// migrate_task_to / migrate_swap: the stopper of each source CPU
    /// moves its task.
    /// One move at a time per CPU: a CPU with a push pending, or claimed
    /// as a target (`numa_migrate_on`), takes no other; the target is
    /// claimed until the stopper has run. Counted when performed.
    fn numa_push(&mut self, c: usize, t: TaskId, m: NumaMove) {
        let lead = self.cpus[c].debt;
        let s = self.numa.as_deref_mut().expect("caller checked");
        let x = match m {
            NumaMove::Move(x) | NumaMove::Swap(x, _) => x,
        };
        if s.pushes[c].is_some() || s.pushes[x].is_some() || s.migrate_on[x] || s.migrate_on[c] {
            return;
        }
        s.migrate_on[x] = true;
        match m {
            NumaMove::Move(dst) => {
                s.pushes[c] = Some(Push {
                    task: t,
                    dst,
                    swap: None,
                });
                self.events
                    .push(self.now + lead, Event::NumaStopper { cpu: c as u32 });
            }
            NumaMove::Swap(x, cur) => {
                s.pushes[c] = Some(Push {
                    task: t,
                    dst: x,
                    swap: Some((cur, true)),
                });
                s.pushes[x] = Some(Push {
                    task: cur,
                    dst: c,
                    swap: Some((t, false)),
                });
                s.migrate_on[c] = true;
                // stop_two_cpus: both stoppers, the second after an IPI
                self.events
                    .push(self.now + lead, Event::NumaStopper { cpu: c as u32 });
                self.events.push(
                    self.now + lead + self.k.costs.ipi_ns,
                    Event::NumaStopper { cpu: x as u32 },
                );
            }
        }
    }

    /// The NUMA stopper of `c` is woken: it preempts what runs there and
    /// moves the pending task (`run_pending_balance`).
    pub(super) fn numa_stopper_wakes(&mut self, c: usize) {
        self.cpus[c].bal.request_numa_stop();
        match self.cpus[c].mode {
            Mode::Idle { .. } => self.kick_idle_cpu(c, c, 0),
            Mode::LeavingIdle => {}
            Mode::Busy => {
                self.cpus[c].need_resched = true;
                if self.cpus[c].seg.user {
                    self.preempt_segment(c);
                }
            }
        }
    }

    /// The stopper's work (`migration_cpu_stop`, engine/affinity.rs): move
    /// the pending task if it is still here and runnable, and may run on
    /// the destination.
    pub(super) fn run_numa_stopper(&mut self, c: usize) {
        let Some(push) = self.numa.as_deref_mut().and_then(|s| s.pushes[c].take()) else {
            return;
        };
        let (t, dst) = (push.task, push.dst);
        let s = self.numa.as_deref_mut().expect("a push implies memory");
        s.migrate_on[dst] = false;
        let here = |e: &Self, task: TaskId, cpu: usize, to: usize| {
            let i = task.idx();
            e.tasks[i].state == TaskState::Runnable
                && e.tasks[i].cpu == cpu
                && e.k.tplace[i].cpus_allowed.test(to)
        };
        let valid = here(self, t, c, dst)
            && match push.swap {
                // migrate_swap_stop: both tasks still where they were, or
                // neither moves (the partner's half is cancelled)
                Some((other, true)) => here(self, other, dst, c),
                // the initiator's half has run: the partner follows
                _ => true,
            };
        let s = self.numa.as_deref_mut().expect("a push implies memory");
        if !valid {
            if let Some((_, true)) = push.swap {
                s.pushes[dst] = None;
                s.migrate_on[c] = false;
            }
            return;
        }
        match push.swap {
            None => s.counters.numa_task_migrations += 1,
            Some((_, true)) => s.counters.numa_task_swaps += 1,
            Some((_, false)) => {}
        }
        self.migration_cpu_stop(c, t, dst);
    }

    /// `update_scan_period` (4.19+, from migrate_task_rq_fair): a move
    /// across nodes resets the scan period to its start value unless it is
    /// to the preferred node, or away from another node while a preferred
    /// one exists.
    pub(super) fn numa_update_scan_period(&mut self, t: TaskId, from: usize, to: usize) {
        let Some(s) = self.numa.as_deref_mut() else {
            return;
        };
        let (a, b) = (s.node_of[from], s.node_of[to]);
        if a == b || !s.params.enabled {
            return;
        }
        let Some(Some(tn)) = s.tasks.get(t.idx()) else {
            return;
        };
        // a task that never faulted (no numa_faults yet) keeps its period
        if !tn.faulted {
            return;
        }
        if tn.scan_seq > 0 {
            match tn.preferred {
                Some(p) if p == b => return,
                Some(p) if p != a => return,
                _ => {}
            }
        }
        let mm = self.tasks[t.idx()].spec.mm;
        let rss = s.mem.find_space(mm).map_or(0, |sp| {
            s.mem.spaces[sp].resident * crate::numa::memory::CHUNK_BYTES
        });
        let start = s.scan_bounds(t, rss).1;
        s.tasks[t.idx()].as_mut().expect("checked").scan_period_ms = start;
    }

    /// `task_tick_numa`: every tick of a running task; when its runtime
    /// passes the node stamp plus its period, the stamp moves on and, if the
    /// mm's next scan is due, `task_numa_work` is queued for the return to
    /// user (run at once: a compute segment is interrupted by the tick).
    pub(super) fn task_tick_numa(&mut self, c: usize, t: TaskId) {
        let exec = self.task_exec_now(t);
        let now = self.now;
        let Some(s) = self.numa.as_deref_mut() else {
            return;
        };
        if !s.params.enabled {
            return;
        }
        let Some(Some(tn)) = s.tasks.get(t.idx()) else {
            return;
        };
        if tn.work_pending || exec <= tn.node_stamp + tn.scan_period_ms * MS {
            return;
        }
        let mm = self.tasks[t.idx()].spec.mm;
        let Some(space) = s.mem.find_space(mm) else {
            return;
        };
        let start = s
            .scan_bounds(
                t,
                s.mem.spaces[space].resident * crate::numa::memory::CHUNK_BYTES,
            )
            .1;
        let sp = &s.mem.spaces[space];
        let tn = s.tasks[t.idx()].as_mut().expect("checked");
        // the stamp moves on by the period that was due, before a first
        // call sets the start period
        let period = tn.scan_period_ms * MS;
        if tn.node_stamp == 0 {
            tn.scan_period_ms = start;
        }
        tn.node_stamp += period;
        if tn.first_scan.is_none() {
            tn.first_scan = Some((now, exec));
        }
        if now >= sp.numa_next_scan {
            tn.work_pending = true;
            if self.cpus[c].seg.user && !self.cpus[c].seg.spin {
                self.preempt_segment(c);
            }
        }
    }

    /// Run `t`'s queued `task_numa_work` on `c` if it has one (called as
    /// the task returns to user space, before its next op).
    #[inline]
    pub(super) fn numa_return_to_user(&mut self, c: usize, t: TaskId) {
        let pending = self
            .numa
            .as_deref()
            .and_then(|s| s.tasks.get(t.idx()))
            .and_then(|x| x.as_ref())
            .is_some_and(|tn| tn.work_pending);
        if pending {
            self.task_numa_work(c, t);
        }
    }

    /// `task_numa_work`: pass the mm-wide rate limit, then mark the next
    /// `scan_size` of the address space for hinting faults (change_prot_numa)
    /// and charge the PTE updates to the task as kernel time.
    fn task_numa_work(&mut self, c: usize, t: TaskId) {
        let now = self.now;
        let tick = self.k.tick_ns;
        let pte_ns = self.k.costs.numa_pte_update_ns;
        let s = self.numa.as_deref_mut().expect("caller checked");
        let cpu_node = s.node_of[c];
        s.tasks[t.idx()]
            .as_mut()
            .expect("caller checked")
            .work_pending = false;
        let mm = self.tasks[t.idx()].spec.mm;
        let Some(space) = s.mem.find_space(mm) else {
            return;
        };
        let bounds = s.scan_bounds(
            t,
            s.mem.spaces[space].resident * crate::numa::memory::CHUNK_BYTES,
        );
        let tn = s.tasks[t.idx()].as_mut().expect("caller checked");
        let sp = &mut s.mem.spaces[space];
        if sp.numa_next_scan == 0 {
            sp.numa_next_scan = now + s.params.scan_delay_ms * MS;
        }
        if now < sp.numa_next_scan {
            return;
        }
        if tn.scan_period_ms == 0 {
            (tn.scan_period_max_ms, tn.scan_period_ms) = bounds;
        }
        sp.numa_next_scan = now + tn.scan_period_ms * MS;
        tn.node_stamp += 2 * tick;
        // the ops running over this mm reach their chunks up to now with
        // the marks as they were
        self.numa_sweep_space(space);
        let s = self.numa.as_deref_mut().expect("caller checked");
        let thp = s.params.thp;
        let chunk_pages = PAGES_PER_CHUNK as i64;
        let mut pages = (s.params.scan_size_mb as i64) << 8; // MB in 4 KiB pages
        let mut virt = 8 * pages;
        let single = s.mem.spaces[space].users <= 1;
        // PTEs changed (a huge PMD counts its 512), huge PMDs changed, and
        // the page-table entries written (one per PMD or base PTE)
        let (mut updated, mut huge, mut entries) = (0u64, 0u64, 0u64);
        // the VMAs (regions) as chunk ranges, in address order
        let vmas = s.mem.region_chunks(space);
        let sp = &mut s.mem.spaces[space];
        let mut start = sp.numa_scan_offset;
        let first = match vmas.iter().position(|&(_, e)| e > start) {
            Some(v) => v,
            None => {
                // past the last VMA: the pass is complete
                sp.numa_scan_seq += 1;
                start = 0;
                0
            }
        };
        let mut stopped_at = None;
        'vmas: for &(vs, ve) in vmas.iter().skip(first) {
            loop {
                // change_prot_numa over [start, end): the rest of the
                // budget, aligned up to a huge page, within the VMA
                start = start.max(vs);
                let end = (start as i64 + (pages.max(1) + chunk_pages - 1) / chunk_pages)
                    .min(ve as i64) as u32;
                let mut changed = 0;
                for ch in &mut sp.chunks[start as usize..end as usize] {
                    // nothing mapped, already marked, or a single-threaded
                    // task's page already on its node: no PTE changes
                    // (change_pte_range / change_huge_pmd skip them)
                    if ch.node != NO_NODE && !ch.prot_none && !(single && ch.node == cpu_node) {
                        ch.prot_none = true;
                        let n = ch.pages as u64;
                        changed += n;
                        if thp && n == PAGES_PER_CHUNK {
                            // change_pmd_range: a huge PMD adds 512 pages
                            // and one huge update
                            huge += 1;
                            entries += 1;
                        } else {
                            entries += n;
                        }
                    }
                }
                let len = (end - start) as i64 * chunk_pages;
                if changed > 0 {
                    pages -= len;
                }
                virt -= len;
                updated += changed;
                start = end;
                if pages <= 0 || virt <= 0 {
                    stopped_at = Some(start);
                    break 'vmas;
                }
                if end == ve {
                    break;
                }
            }
        }
        match stopped_at {
            Some(o) => sp.numa_scan_offset = o,
            None => {
                // every VMA walked: reset_ptenuma_scan
                sp.numa_scan_seq += 1;
                sp.numa_scan_offset = 0;
            }
        }
        s.counters.numa_scans += 1;
        s.counters.numa_pte_updates += updated;
        s.counters.numa_huge_pte_updates += huge;
        let cost = entries * pte_ns;
        s.counters.numa_kernel_ns += cost;
        // the scan's own runtime pushes the next one out (32x: scanning
        // takes at most ~1/33 of the task's time)
        let tn = s.tasks[t.idx()].as_mut().expect("caller checked");
        tn.node_stamp += 32 * cost;
        self.cpus[c].debt += cost;
    }

    /// `--check`: each node's stream count is the number of running
    /// segments that hold a stream on it, and a segment holds streams only
    /// while its CPU is busy; the counters are consistent. Some(what) when
    /// broken.
    pub(super) fn numa_invariant(&self) -> Option<String> {
        let s = self.numa.as_deref()?;
        for (n, &count) in s.streams.iter().enumerate() {
            let held = s
                .held
                .iter()
                .filter(|h| h.active && h.bytes.get(n).is_some_and(|&b| b > 0))
                .count() as u32;
            if held != count {
                return Some(format!("node {n}: {count} streams counted, {held} held"));
            }
        }
        if let Some(c) =
            (0..self.cpus.len()).find(|&c| s.held[c].active && self.cpus[c].mode != Mode::Busy)
        {
            return Some(format!("cpu {c} holds memory streams while not busy"));
        }
        let k = &s.counters;
        // a huge page's fault is one hint fault for its 512 PTE updates
        // and migrated pages
        let base = k.numa_pte_updates - k.numa_huge_pte_updates * PAGES_PER_CHUNK;
        if k.numa_hint_faults_local > k.numa_hint_faults
            || k.numa_hint_faults > base + k.numa_huge_pte_updates
            || k.numa_pages_migrated > k.numa_pte_updates
        {
            return Some(format!("NUMA counters inconsistent: {k:?}"));
        }
        None
    }

    /// sum_exec_runtime of `t` now (a running task's current stretch
    /// included).
    fn task_exec_now(&self, t: TaskId) -> Nanos {
        let ti = t.idx();
        let e = &self.ents[ti];
        let cpu = self.tasks[ti].cpu;
        let running = self.cpus[cpu].mode == Mode::Busy && self.cpus[cpu].rq.curr() == Some(t.0);
        e.sum_exec
            + if running {
                self.now.saturating_sub(e.exec_start)
            } else {
                0
            }
    }
}
