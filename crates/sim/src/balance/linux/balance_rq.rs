//! One balance pass at one domain level: `sched_balance_rq` (`load_balance`
//! before 6.10), `should_we_balance`, `need_active_balance` and the stopper's
//! `active_load_balance_cpu_stop` (kernel/sched/fair.c).

use super::stats::{Lb, MigrationType};
use super::{balance_mask, cache_nice_tries, LbAlgorithm, LinuxBalancer, MAX_PINNED_INTERVAL_MS};
use crate::balance::{BalanceEnv, IdleType, Kind, KindCounts};
use topology::sd_flags;

/// What a pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct PassResult {
    /// Tasks moved.
    pub moved: u32,
    /// Legacy sd_idle: nothing moved at the SMT level while a sibling was
    /// busy (the kernel's -1 return), which demotes the higher levels.
    pub sibling_busy: bool,
}

impl LinuxBalancer {
    /// should_we_balance: whether `lb.dst` is the CPU of its group that
    /// balances this level now.
    fn should_we_balance(&mut self, env: &mut BalanceEnv, lb: &Lb) -> bool {
        if !lb.cpus.test(lb.dst) {
            return false;
        }
        if lb.idle == IdleType::NewlyIdle {
            // a task arrived meanwhile: nothing to do (5.14+ form; before,
            // the walk itself checked it)
            return env.cpus[lb.dst].nr_running == 0 && !env.cpus[lb.dst].ttwu_pending;
        }
        let sd = self.sd(env, lb);
        let mask = balance_mask(sd);
        let smt_level = sd.flags & sd_flags::SHARE_CPUCAPACITY != 0;
        let mut idle_smt: Option<usize> = None;
        let mut skip = topology::CpuMask::new();
        for cpu in mask.iter() {
            if !lb.cpus.test(cpu) || skip.test(cpu) || !env.idle_cpu(cpu) {
                continue;
            }
            if self.f.swb_idle_core && !smt_level && !self.is_core_idle(env, cpu) {
                // 6.6: prefer a CPU on a wholly idle core; remember the first
                // idle CPU whose sibling is busy
                idle_smt.get_or_insert(cpu);
                skip.or_assign(env.topo.smt_mask(cpu));
                continue;
            }
            return cpu == lb.dst;
        }
        if let Some(c) = idle_smt {
            return c == lb.dst;
        }
        mask.first() == Some(lb.dst)
    }

    /// is_core_idle: every other SMT sibling of `cpu` is idle (charged).
    fn is_core_idle(&mut self, env: &mut BalanceEnv, cpu: usize) -> bool {
        let smt = env.topo.smt_mask(cpu).clone();
        smt.iter().filter(|&s| s != cpu).all(|s| env.idle_cpu(s))
    }

    /// need_active_balance on a symmetric machine: too many failed passes
    /// (for a task-count imbalance only from ~5.13).
    fn need_active_balance(&self, env: &BalanceEnv, lb: &Lb) -> bool {
        let sd = self.sd(env, lb);
        let failed = self.dom[lb.owner][lb.level].nr_balance_failed;
        let over = failed > cache_nice_tries(sd) + 2;
        if self.modern_active() {
            lb.mtype == MigrationType::Task && over
        } else {
            over
        }
    }

    /// sched_balance_rq for `owner`'s domain at `level`, pulling to `owner`.
    pub(super) fn sched_balance_rq(
        &mut self,
        env: &mut BalanceEnv,
        owner: usize,
        level: usize,
        idle: IdleType,
        continue_balancing: &mut bool,
        kind: Kind,
    ) -> PassResult {
        let sd = &env.sd.domains(owner)[level];
        let smt_level = sd.flags & sd_flags::SHARE_CPUCAPACITY != 0;
        let mut lb = Lb {
            dst: owner,
            owner,
            level,
            idle,
            cpus: sd.span.clone(),
            imbalance: 0,
            mtype: MigrationType::Load,
            all_pinned: false,
            some_pinned: false,
            dst_pinned: false,
            active_lb: false,
            new_dst_cpu: owner,
            loop_: 0,
            loop_max: 0,
            src: owner,
            // <= 2.6.38 sd_idle: an idle thread balancing its SMT core,
            // until the stats see a CPU of the core running something
            sd_idle: idle != IdleType::Busy && smt_level,
        };
        let moved = self.balance_pass(env, &mut lb, continue_balancing, kind);
        PassResult {
            moved,
            // the kernel's -1: nothing moved at the SMT level while a
            // sibling is busy (or we are), so higher levels balance as busy
            sibling_busy: self.f.sd_idle_legacy && smt_level && moved == 0 && !lb.sd_idle,
        }
    }

    /// The body of sched_balance_rq; returns the tasks moved. Its counts
    /// are kept in a local tally and added to the level's counters once at
    /// the end (a lookup by level name for every count cost 24
    /// instructions per event in bench-scale's kunpeng920-node run); a pass
    /// that counted nothing leaves the counters as they were.
    fn balance_pass(
        &mut self,
        env: &mut BalanceEnv,
        lb: &mut Lb,
        continue_balancing: &mut bool,
        kind: Kind,
    ) -> u32 {
        let mut tally = KindCounts::default();
        let moved = self.balance_pass_tallied(env, lb, continue_balancing, &mut tally);
        if tally != KindCounts::default() {
            let level_name = env.sd.domains(lb.owner)[lb.level].name;
            env.stats.count(level_name, kind).add(&tally);
        }
        moved
    }

    /// [`Self::balance_pass`] counting into `tally`.
    fn balance_pass_tallied(
        &mut self,
        env: &mut BalanceEnv,
        lb: &mut Lb,
        continue_balancing: &mut bool,
        tally: &mut KindCounts,
    ) -> u32 {
        let (owner, level) = (lb.owner, lb.level);
        let has_parent = env.sd.domains(owner).len() > level + 1;
        let mut moved = 0;
        loop {
            if !self.should_we_balance(env, lb) {
                *continue_balancing = false;
                return self.out_balanced(env, lb, has_parent);
            }
            let group = match self.f.algorithm {
                LbAlgorithm::Modern => self.find_busiest_group_modern(env, lb),
                LbAlgorithm::Legacy => self.find_busiest_group_legacy(env, lb),
            };
            tally.calls += 1;
            let busiest = group.and_then(|g| self.find_busiest_queue(env, lb, g));
            let Some(busiest) = busiest else {
                tally.balanced += 1;
                return self.out_balanced(env, lb, has_parent);
            };
            tally.imbalanced += 1;
            lb.src = busiest;
            lb.all_pinned = true;
            if env.cpus[busiest].nr_running > 1 {
                lb.loop_max = self.f.nr_migrate.min(env.cpus[busiest].nr_running);
                loop {
                    // lock the source; the attach locks the destination
                    env.write_rq(busiest);
                    let n = self.detach_tasks(env, lb);
                    if n > 0 {
                        env.write_rq(lb.dst);
                    }
                    moved += n;
                    if lb.dst_pinned && lb.imbalance > 0 {
                        // a task refused dst but allows another CPU of our group
                        lb.cpus.clear(lb.dst);
                        lb.dst = lb.new_dst_cpu;
                        lb.dst_pinned = false;
                        lb.loop_ = 0;
                        continue;
                    }
                    break;
                }
                if has_parent && lb.some_pinned && lb.imbalance > 0 {
                    self.set_parent_group_imbalance(env, lb, true);
                }
                if lb.all_pinned {
                    lb.cpus.clear(busiest);
                    let local = balance_mask(&env.sd.domains(owner)[level]);
                    if !lb.cpus.is_subset(local) {
                        lb.loop_ = 0;
                        continue;
                    }
                    // out_all_pinned
                    self.dom[owner][level].nr_balance_failed = 0;
                    return self.out_one_pinned(env, lb);
                }
            }
            tally.moved += moved as u64;
            let mut active_kicked = false;
            if moved == 0 {
                tally.failed += 1;
                if lb.idle != IdleType::NewlyIdle {
                    self.dom[owner][level].nr_balance_failed += 1;
                }
                if self.need_active_balance(env, lb) {
                    // the running task must allow this CPU (the original
                    // destination, even after an LBF_DST_PINNED redirect)
                    let allowed = env
                        .rqs
                        .curr(busiest)
                        .is_none_or(|t| env.tasks[t as usize].cpus_allowed.test(owner));
                    if !allowed {
                        if !self.modern_active() {
                            // <= 5.12 backs off as if everything were pinned
                            lb.all_pinned = true;
                        }
                        return self.out_one_pinned(env, lb);
                    }
                    lb.all_pinned = false;
                    if !self.rq[busiest].active_balance {
                        self.rq[busiest].active_balance = true;
                        env.req.active.push((busiest, owner));
                        env.stats.active_kicks += 1;
                        active_kicked = true;
                        env.write_rq(busiest);
                    }
                    if !self.modern_active() {
                        // <= 5.12: make the stopper ignore cache hotness
                        let sd = &env.sd.domains(owner)[level];
                        self.dom[owner][level].nr_balance_failed = cache_nice_tries(sd) + 1;
                    }
                }
            } else {
                self.dom[owner][level].nr_balance_failed = 0;
            }
            let sd = &env.sd.domains(owner)[level];
            // >= 5.13: need_active_balance still holds after a kick, so the
            // interval is reset; before, a kick backs the interval off
            let reset = !active_kicked || self.modern_active();
            let d = &mut self.dom[owner][level];
            if reset {
                d.balance_interval = sd.min_interval_ms.max(1);
            } else if d.balance_interval < sd.max_interval_ms {
                d.balance_interval *= 2;
            }
            return moved;
        }
    }

    /// The >= 5.13 active-balance rules (LBF_ACTIVE_LB, no failure trick).
    fn modern_active(&self) -> bool {
        self.f.active_task_type_only && self.f.algorithm == LbAlgorithm::Modern
    }

    /// out_balanced: the level needs nothing (or this CPU is not its
    /// balancer).
    fn out_balanced(&mut self, env: &BalanceEnv, lb: &Lb, has_parent: bool) -> u32 {
        // 4.19 always cleared the parent's flag; from 5.4 not when all pinned
        if has_parent && (self.f.out_balanced_clears_always || !lb.all_pinned) {
            self.set_parent_group_imbalance(env, lb, false);
        }
        self.dom[lb.owner][lb.level].nr_balance_failed = 0;
        self.out_one_pinned(env, lb)
    }

    /// out_one_pinned: back off the interval of a periodic pass.
    fn out_one_pinned(&mut self, env: &BalanceEnv, lb: &Lb) -> u32 {
        if lb.idle == IdleType::NewlyIdle {
            return 0;
        }
        let sd = self.sd(env, lb);
        let d = &mut self.dom[lb.owner][lb.level];
        if (lb.all_pinned && d.balance_interval < MAX_PINNED_INTERVAL_MS)
            || d.balance_interval < sd.max_interval_ms
        {
            d.balance_interval *= 2;
        }
        0
    }

    /// sd->parent->groups->sgc->imbalance for `lb.owner`.
    fn set_parent_group_imbalance(&mut self, env: &BalanceEnv, lb: &Lb, v: bool) {
        let doms = env.sd.domains(lb.owner);
        if let Some(parent) = doms.get(lb.level + 1) {
            let first = parent.groups[0].span.first().unwrap_or(0);
            let at = (lb.level + 1) * env.cpus.len() + first;
            if at >= self.group_imbalance.len() {
                if !v {
                    return;
                }
                self.group_imbalance.resize(at + 1, false);
            }
            self.group_imbalance[at] = v;
        }
    }

    /// active_load_balance_cpu_stop: the stopper on `src` (its task just
    /// preempted and queued again) pushes the least recently run task that
    /// may go to `dst`.
    pub(super) fn active_load_balance_cpu_stop(
        &mut self,
        env: &mut BalanceEnv,
        src: usize,
        dst: usize,
    ) {
        self.rq[src].active_balance = false;
        if env.cpus[src].nr_running == 0 {
            return;
        }
        // the lowest domain of dst spanning src
        let Some(level) = env.sd.domains(dst).iter().position(|d| d.span.test(src)) else {
            return;
        };
        let name = env.sd.domains(dst)[level].name;
        env.stats.count(name, Kind::Active).calls += 1;
        let mut lb = Lb {
            dst,
            owner: dst,
            level,
            idle: IdleType::Idle,
            cpus: env.sd.domains(dst)[level].span.clone(),
            imbalance: 1,
            mtype: MigrationType::Task,
            all_pinned: false,
            some_pinned: false,
            dst_pinned: false,
            active_lb: true,
            new_dst_cpu: dst,
            loop_: 0,
            loop_max: u32::MAX,
            src,
            sd_idle: false,
        };
        env.write_rq(src);
        env.load_cfs_tasks(src, u32::MAX);
        let list = std::mem::take(&mut env.scratch);
        let found = list
            .iter()
            .rev()
            .copied()
            .find(|&p| self.can_migrate_task(env, &mut lb, p));
        env.scratch = list;
        if let Some(p) = found {
            self.dom[dst][level].nr_balance_failed = 0;
            self.detach(env, p, src, dst);
            env.write_rq(dst);
            let c = env.stats.count(name, Kind::Active);
            c.moved += 1;
            c.imbalanced += 1;
        } else {
            env.stats.count(name, Kind::Active).failed += 1;
        }
    }
}
