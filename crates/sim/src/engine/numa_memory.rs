//! Memory timing of `Op::ComputeMem` segments: first touch (the pages'
//! placement), the hinting faults of marked chunks
//! (`do_numa_page` -> `task_numa_fault`, in the parent module), and the
//! segment's speed from the distance of the pages it streams and the
//! bandwidth its node shares with the other streams. NUMA balancing itself
//! (scans, faults, placement, moves) is the parent module.

use super::*;

impl<'t, R: RunQueue> Engine<'t, R> {
    /// Local-speed time of an `Op::ComputeMem`: its CPU work plus its
    /// traffic at the local streaming cost.
    pub(in crate::engine) fn compute_mem_work(&self, work: Nanos, access: AccessId) -> Nanos {
        let s = self.numa.as_ref().expect("an access implies memory");
        let bytes: u64 = s.mem.accesses[access.0 as usize]
            .iter()
            .map(|cs| cs.bytes_per_chunk * cs.count as u64)
            .sum();
        work + bytes * self.k.costs.mem_ps_per_byte / 1000
    }

    /// An `Op::ComputeMem` segment of `t` starts (or resumes) on `c`: place
    /// the chunks it will touch for the first time, start the sweep that
    /// takes the hinting faults of marked chunks as the op's loop reaches
    /// them ([`Self::numa_sweep`]), and return the segment's memory speed
    /// in 1/1024 of local: `(work + local traffic time) / (work + traffic
    /// time at the pages' distances)`.
    pub(in crate::engine) fn numa_touch(
        &mut self,
        c: usize,
        t: TaskId,
        work: Nanos,
        access: AccessId,
    ) -> u64 {
        if self.numa.as_deref().is_some_and(|s| s.held[c].active) {
            self.numa_release(c);
        }
        let total = self.compute_mem_work(work, access);
        let left = self.tasks[t.idx()].op_left;
        let Some(s) = self.numa.as_deref_mut() else {
            return 1024;
        };
        let cpu_node = s.node_of[c];
        let topo = self.k.topo;
        let dist = |a: u16, b: u16| topo.node_distance(a as usize, b as usize);
        let mut bytes = std::mem::take(&mut s.held[c].bytes);
        bytes.clear();
        bytes.resize(s.streams.len(), 0);
        let nspans = s.mem.accesses[access.0 as usize].len();
        for k in 0..nspans {
            let cs = s.mem.accesses[access.0 as usize][k];
            let space = cs.space as usize;
            for i in cs.first..cs.first + cs.count {
                let ch = s.mem.spaces[space].chunks[i as usize];
                let mut node = ch.node;
                if node == NO_NODE {
                    // first touch: placed now for the whole segment (the
                    // loop would place it on reaching it, on this CPU)
                    node = s.mem.place(space, cpu_node, dist);
                    let sp = &mut s.mem.spaces[space];
                    sp.chunks[i as usize].node = node;
                    sp.resident += 1;
                    if node == cpu_node {
                        s.counters.numa_local += ch.pages as u64;
                    } else {
                        s.counters.numa_other += ch.pages as u64;
                    }
                }
                bytes[node as usize] += cs.bytes_per_chunk;
            }
        }
        s.held[c].sweep = Some(Sweep {
            task: t,
            access,
            total,
            done: total.saturating_sub(left),
        });
        self.numa_hold(c, work, bytes)
    }

    /// The op progress (work units done of its total) of `c`'s running
    /// `Op::ComputeMem` segment now, without settling it.
    fn numa_op_done_now(&self, c: usize, sw: &Sweep) -> Nanos {
        let cpu = &self.cpus[c];
        let elapsed = self.now.saturating_sub(cpu.seg.start);
        let done = if cpu.seg.speed == 1024 {
            elapsed
        } else {
            elapsed * cpu.seg.speed / 1024
        }
        .min(cpu.seg.work);
        let user = done.saturating_sub(cpu.seg.debt);
        let left = self.tasks[sw.task.idx()].op_left.saturating_sub(user);
        sw.total.saturating_sub(left)
    }

    /// Bring the sweep of `c`'s `Op::ComputeMem` to now (to the op's end
    /// when `end`, and then stop it): each marked chunk its loop reached
    /// since the last call takes its hinting fault (`do_numa_page`, or
    /// `do_huge_pmd_numa_page` for a huge page). A chunk is reached as the
    /// op's progress passes its place in the walk (`Span::sweeps`), so a
    /// chunk the scanner marks after the walk passed it faults only when a
    /// later walk, of this op or another, reaches it. Marks change only in
    /// `task_numa_work`, which first brings every running sweep of the mm
    /// to its time, so a chunk faults here exactly when it was marked as
    /// the loop reached it. The faults' kernel time is owed by the CPU.
    pub(in crate::engine) fn numa_sweep(&mut self, c: usize, to: SweepTo) {
        let Some(s) = self.numa.as_deref() else {
            return;
        };
        let Some(sw) = s.held[c].sweep else {
            return;
        };
        let done = match to {
            SweepTo::End => sw.total,
            SweepTo::Now | SweepTo::NowAndStop => self.numa_op_done_now(c, &sw),
        };
        let s = self.numa.as_deref_mut().expect("checked");
        if to == SweepTo::Now {
            if let Some(x) = s.held[c].sweep.as_mut() {
                x.done = x.done.max(done);
            }
        } else {
            s.held[c].sweep = None;
        }
        if done <= sw.done {
            return;
        }
        let kernel = self.numa_faults_reached(c, sw.task, sw.access, sw.done, done, sw.total);
        if kernel > 0 {
            self.cpus[c].debt += kernel;
        }
    }

    /// The hinting faults of the marked chunks `access` reaches between op
    /// progress `from` and `to` on `c` by `t`: counted as /proc/vmstat
    /// counts them, the page moved when `should_numa_migrate_memory` says
    /// so, and `task_numa_fault` told. Returns the kernel time, ns.
    fn numa_faults_reached(
        &mut self,
        c: usize,
        t: TaskId,
        access: AccessId,
        from: Nanos,
        to: Nanos,
        total: Nanos,
    ) -> Nanos {
        let s = self.numa.as_deref_mut().expect("caller checked");
        let mut marked: Vec<(u32, u32)> = Vec::new();
        for cs in &s.mem.accesses[access.0 as usize] {
            let chunks = &s.mem.spaces[cs.space as usize].chunks;
            cs.reached(from, to, total, |i| {
                if chunks[i as usize].prot_none {
                    marked.push((cs.space, i));
                }
            });
        }
        if marked.is_empty() {
            return 0;
        }
        let cpu_node = s.node_of[c];
        let balancing = s.params.enabled && s.tasks.get(t.idx()).is_some_and(|x| x.is_some());
        let me = CpuPid::of(c, t.0);
        let mut kernel: Nanos = 0;
        let mut faults: Vec<(Option<CpuPid>, u16, bool, bool, u64)> = Vec::new();
        for (space, i) in marked {
            let space = space as usize;
            let ch = s.mem.spaces[space].chunks[i as usize];
            if !ch.prot_none {
                // reached twice (two spans over one chunk): faulted once
                continue;
            }
            let pages = ch.pages as u64;
            let huge = s.params.thp && pages == PAGES_PER_CHUNK;
            let mut node = ch.node;
            // do_numa_page counts each base page's fault,
            // do_huge_pmd_numa_page one per huge page
            let faults_n = if huge { 1 } else { pages };
            let is_local = node == cpu_node;
            s.counters.numa_hint_faults += faults_n;
            if is_local {
                s.counters.numa_hint_faults_local += faults_n;
            }
            kernel += faults_n * self.k.costs.numa_hint_fault_ns;
            let last = ch.last_cpupid;
            let chm = &mut s.mem.spaces[space].chunks[i as usize];
            chm.prot_none = false;
            if s.mem.policy == MemPolicy::Local {
                // should_numa_migrate_memory's exchange; numactl's
                // interleave and bind policies never reach it
                chm.last_cpupid = Some(me);
            }
            // mpol_misplaced: the default policy's target is the faulting
            // CPU's node (MPOL_F_MORON); interleave and bind place by their
            // own rule and are left alone
            let mut migrated = false;
            if !is_local && s.mem.policy == MemPolicy::Local && balancing {
                let tn = s.tasks[t.idx()].as_ref().expect("checked");
                let group = tn.group.map(|g| &s.groups[g as usize]);
                let node_of = |cpu: usize| s.node_of[cpu];
                if nb::should_numa_migrate_memory(
                    tn,
                    group,
                    &s.features,
                    last,
                    me,
                    node,
                    cpu_node,
                    node_of,
                ) {
                    s.mem.spaces[space].chunks[i as usize].node = cpu_node;
                    node = cpu_node;
                    migrated = true;
                    // numa_pages_migrated counts base pages (a huge page's
                    // 512, migrate_misplaced_transhuge_page)
                    s.counters.numa_pages_migrated += pages;
                    kernel += pages * self.k.costs.numa_migrate_page_ns;
                }
            }
            faults.push((last, node, is_local, migrated, pages));
        }
        s.counters.numa_kernel_ns += kernel;
        for (last, node, is_local, migrated, pages) in faults {
            self.task_numa_fault(c, t, last, node, is_local, migrated, pages);
        }
        kernel
    }

    /// Every running `Op::ComputeMem` sweep over address space `space`
    /// brought to now (before the scanner changes marks there): a running
    /// segment is settled first, and the faults' kernel time is added to
    /// it as debt.
    pub(super) fn numa_sweep_space(&mut self, space: usize) {
        for x in 0..self.cpus.len() {
            let s = self.numa.as_deref().expect("caller checked");
            let Some(sw) = s.held[x].sweep else {
                continue;
            };
            if self.cpus[x].mode != Mode::Busy
                || s.mem.accesses[sw.access.0 as usize]
                    .first()
                    .is_none_or(|cs| cs.space as usize != space)
            {
                continue;
            }
            // settle as numa_retime does: the work done leaves op_left
            let done = self.settle_segment(x);
            let op_left = &mut self.tasks[sw.task.idx()].op_left;
            *op_left = op_left.saturating_sub(done);
            let debt0 = self.cpus[x].debt;
            self.numa_sweep(x, SweepTo::Now);
            let kernel = self.cpus[x].debt - debt0;
            if kernel > 0 {
                // owed within the running segment, before its user work
                self.cpus[x].debt = debt0;
                let seg = &mut self.cpus[x].seg;
                let d = if seg.mem_speed == 1024 {
                    kernel
                } else {
                    kernel * seg.mem_speed / 1024
                };
                seg.debt += d;
                seg.work += d;
                self.arm_segment(x);
            }
        }
    }

    /// `c` starts streaming `bytes` (by node) alongside `work`: it takes a
    /// stream on each of those nodes, the other segments streaming from
    /// them are re-timed, and its own memory speed is returned.
    pub(super) fn numa_hold(&mut self, c: usize, work: Nanos, bytes: Vec<u64>) -> u64 {
        let limited = self.k.costs.node_mem_mb_s > 0;
        let s = self.numa.as_deref_mut().expect("caller checked");
        let held = &mut s.held[c];
        held.work = work;
        held.bytes = bytes;
        held.active = limited;
        if limited {
            let mut changed = 0u64;
            for (n, &b) in s.held[c].bytes.iter().enumerate() {
                if b > 0 {
                    s.streams[n] += 1;
                    changed |= 1 << n.min(63);
                }
            }
            self.numa_retime(c, changed);
        }
        self.numa_mem_speed(c)
    }

    /// `c`'s segment stops streaming (it ended or was preempted): release
    /// its streams and re-time the segments that share their nodes.
    pub(in crate::engine) fn numa_release(&mut self, c: usize) {
        let Some(s) = self.numa.as_deref_mut() else {
            return;
        };
        if !s.held[c].active {
            return;
        }
        s.held[c].active = false;
        let mut changed = 0u64;
        for (n, &b) in s.held[c].bytes.iter().enumerate() {
            if b > 0 {
                s.streams[n] -= 1;
                changed |= 1 << n.min(63);
            }
        }
        self.numa_retime(c, changed);
    }

    /// Re-time every other running segment that streams from a node in
    /// `changed` (a bit per node; nodes past 63 share the last bit).
    pub(super) fn numa_retime(&mut self, except: usize, changed: u64) {
        if changed == 0 {
            return;
        }
        for x in 0..self.cpus.len() {
            let s = self.numa.as_deref().expect("caller checked");
            let h = &s.held[x];
            if x == except
                || !h.active
                || self.cpus[x].mode != Mode::Busy
                || !h
                    .bytes
                    .iter()
                    .enumerate()
                    .any(|(n, &b)| b > 0 && changed & (1 << n.min(63)) != 0)
            {
                continue;
            }
            let speed = self.numa_mem_speed(x);
            if speed == self.cpus[x].seg.mem_speed {
                continue;
            }
            let done = self.settle_segment(x);
            if let Some(t) = self.cpus[x].seg.task {
                let op_left = &mut self.tasks[t.idx()].op_left;
                *op_left = op_left.saturating_sub(done);
            }
            let smt = if self.k.topo.threads_per_core() > 1 {
                self.k.costs.smt_speed_1024(self.busy_threads(x))
            } else {
                1024
            };
            // the kernel work still owed keeps its time: it is held in
            // units of the memory speed
            let seg = &mut self.cpus[x].seg;
            let old = seg.mem_speed.max(1);
            let debt = seg.debt * speed / old;
            seg.work = seg.work - seg.debt + debt;
            seg.debt = debt;
            self.cpus[x].seg.mem_speed = speed;
            self.cpus[x].seg.speed = (smt * speed / 1024).max(1);
            self.arm_segment(x);
        }
    }

    /// The memory speed of `c`'s streaming segment, 1/1024 of its speed
    /// with every page local and the node to itself: `(work + local
    /// traffic time) / (work + traffic time now)`, where a byte from node
    /// n costs the local streaming cost times the SLIT distance over 10,
    /// or its share of n's bandwidth among the segments streaming from n,
    /// whichever is slower.
    pub(super) fn numa_mem_speed(&self, c: usize) -> u64 {
        let s = self.numa.as_deref().expect("caller checked");
        let h = &s.held[c];
        let ps = self.k.costs.mem_ps_per_byte as u128;
        let node_bw = self.k.costs.node_mem_mb_s as u128;
        let cpu_node = s.node_of[c] as usize;
        // times in ps x 10
        let w = h.work as u128 * 10_000;
        let mut local = w;
        let mut actual = w;
        for (n, &b) in h.bytes.iter().enumerate() {
            if b == 0 {
                continue;
            }
            let b = b as u128;
            let d = self.k.topo.node_distance(cpu_node, n) as u128;
            local += b * ps * 10;
            let mut per_byte = ps * d;
            // a share of the node's bandwidth: streams x 1e6 / MB/s ps
            if let Some(share) = (s.streams[n].max(1) as u128 * 10_000_000).checked_div(node_bw) {
                per_byte = per_byte.max(share);
            }
            actual += b * per_byte;
        }
        (local * 1024)
            .checked_div(actual)
            .map_or(1024, |v| v.clamp(1, 1024) as u64)
    }
}
