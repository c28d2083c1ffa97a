//! Choosing the source CPU and the tasks to take from it:
//! `find_busiest_queue` (`sched_balance_find_src_rq`), `detach_tasks`,
//! `can_migrate_task` and `task_hot` (kernel/sched/fair.c).

use super::stats::{Lb, MigrationType};
use super::{cache_nice_tries, LbAlgorithm, LinuxBalancer};
use crate::balance::{BalanceEnv, IdleType, Migration};
use topology::sd_flags;

impl LinuxBalancer {
    /// find_busiest_queue: the CPU of group `g` to pull from, by the
    /// migration type (symmetric capacities: no capacity or asym filters).
    pub(super) fn find_busiest_queue(
        &mut self,
        env: &mut BalanceEnv,
        lb: &Lb,
        g: usize,
    ) -> Option<usize> {
        let sd = self.sd(env, lb);
        let mut best: Option<usize> = None;
        let mut best_val = 0u64;
        for &i in sd.groups[g].cpus.iter() {
            let i = i as usize;
            if !lb.cpus.test(i) {
                continue;
            }
            let nr = env.cpus[i].nr_running;
            if nr == 0 {
                continue;
            }
            let pick: u64 = match lb.mtype {
                MigrationType::Load => {
                    let load = self.cpu_load(env, i);
                    // a lone task heavier than the imbalance stays put
                    if nr == 1 && load as i64 > lb.imbalance {
                        continue;
                    }
                    load
                }
                MigrationType::Util => {
                    if nr <= 1 {
                        continue;
                    }
                    let s = &env.cpus[i];
                    if self.f.util_boost_pick {
                        s.util_avg.max(s.runnable_avg)
                    } else {
                        s.util_avg
                    }
                }
                MigrationType::Task => nr as u64,
            };
            // the first CPU wins ties, as the kernel's strict comparisons do
            if pick > best_val {
                best = Some(i);
                best_val = pick;
            }
        }
        best
    }

    /// task_hot: `p` ran on its CPU less than sysctl_sched_migration_cost
    /// ago (never at the SMT level, 5.5+; never for SCHED_IDLE).
    fn task_hot(&self, env: &BalanceEnv, lb: &Lb, p: u32) -> bool {
        let sd = self.sd(env, lb);
        if sd.flags & sd_flags::SHARE_CPUCAPACITY != 0 && self.f.algorithm == LbAlgorithm::Modern {
            return false;
        }
        if env.tasks[p as usize].idle_policy {
            return false;
        }
        let exec_start = env.ents[p as usize].exec_start;
        env.now.saturating_sub(exec_start) < self.f.migration_cost_ns
    }

    /// can_migrate_task.
    pub(super) fn can_migrate_task(&mut self, env: &BalanceEnv, lb: &mut Lb, p: u32) -> bool {
        let tp = &env.tasks[p as usize];
        if tp.per_cpu_kthread {
            return false;
        }
        if !tp.cpus_allowed.test(lb.dst) {
            lb.some_pinned = true;
            if lb.idle != IdleType::NewlyIdle && !(lb.dst_pinned || lb.active_lb) {
                // another CPU of our group that the task allows
                let sd = self.sd(env, lb);
                let mask = super::balance_mask(sd);
                if let Some(c) = mask
                    .iter()
                    .find(|&c| lb.cpus.test(c) && tp.cpus_allowed.test(c))
                {
                    lb.new_dst_cpu = c;
                    lb.dst_pinned = true;
                }
            }
            return false;
        }
        lb.all_pinned = false;
        if env.rqs.curr(lb.src) == Some(p) {
            return false;
        }
        if lb.active_lb {
            return true;
        }
        let sd = self.sd(env, lb);
        let failed = self.dom[lb.owner][lb.level].nr_balance_failed;
        // 4.x-6.x: NUMA locality decides before cache hotness
        let hot = self
            .migrate_degrades_locality(env, lb, p)
            .unwrap_or_else(|| self.task_hot(env, lb, p));
        !hot || failed > cache_nice_tries(sd)
    }

    /// `migrate_degrades_locality` (kernel/sched/fair.c, 4.x-6.19): on a
    /// NUMA domain with balancing on, moving a task off its preferred node
    /// counts as hot while the source also runs tasks away from theirs;
    /// moving it to its preferred node is never hot; between other nodes
    /// (unless the destination is idle) a move that lowers its (group)
    /// fault weight is hot. None: no opinion (cache hotness decides).
    fn migrate_degrades_locality(&self, env: &BalanceEnv, lb: &Lb, p: u32) -> Option<bool> {
        let numa = env.numa?;
        if self.sd(env, lb).flags & sd_flags::NUMA == 0 {
            return None;
        }
        let src_w = numa.weight(p, env.topo.place(lb.src).node)?;
        let (src_nid, dst_nid) = (env.topo.place(lb.src).node, env.topo.place(lb.dst).node);
        if src_nid == dst_nid {
            return None;
        }
        let pref = numa.preferred(p).map(|n| n as usize);
        if pref == Some(src_nid) {
            // nr_running > nr_preferred_running on the source
            let mut list = Vec::new();
            env.rqs.cfs_tasks(lb.src, &mut list);
            let on_pref = list
                .iter()
                .filter(|&&q| numa.preferred(q).map(|n| n as usize) == Some(src_nid))
                .count();
            return (list.len() > on_pref).then_some(true);
        }
        if pref == Some(dst_nid) {
            return Some(false);
        }
        if lb.idle == IdleType::Idle {
            return None;
        }
        Some(numa.weight(p, dst_nid)? < src_w)
    }

    /// detach_tasks: take tasks from `lb.src`'s list tail first until the
    /// imbalance is covered. Moves are appended to `env.req.moves` and the
    /// view of both run queues is updated.
    pub(super) fn detach_tasks(&mut self, env: &mut BalanceEnv, lb: &mut Lb) -> u32 {
        let legacy = self.f.algorithm == LbAlgorithm::Legacy;
        if !legacy && self.f.detach_src_single_exit && env.cpus[lb.src].nr_running <= 1 {
            lb.all_pinned = false;
            return 0;
        }
        if lb.imbalance <= 0 {
            return 0;
        }
        env.load_cfs_tasks(lb.src, lb.loop_max.saturating_add(1));
        let list = std::mem::take(&mut env.scratch);
        let failed = self.dom[lb.owner][lb.level].nr_balance_failed;
        let mut detached = 0;
        for &p in list.iter().rev() {
            // never empty the source when we are idle
            if lb.idle.is_idle() && env.cpus[lb.src].nr_running <= 1 {
                break;
            }
            lb.loop_ += 1;
            if lb.loop_ > lb.loop_max {
                break;
            }
            // each task looked at is a read under the source's lock
            env.read_rq(lb.src);
            if !self.can_migrate_task(env, lb, p) {
                env.req.rotated.push((lb.src, p));
                continue;
            }
            let tp = &env.tasks[p as usize];
            match lb.mtype {
                MigrationType::Load => {
                    let load = tp.load_avg.max(1);
                    let too_big = if self.f.failure_relax_load && !legacy {
                        (load >> failed.min(63)) as i64 > lb.imbalance
                    } else if legacy {
                        (load / 2) as i64 > lb.imbalance
                    } else {
                        // 5.5-5.9: the size filter gives way after
                        // cache_nice_tries failures
                        let sd = self.sd(env, lb);
                        (load / 2) as i64 > lb.imbalance && failed <= cache_nice_tries(sd)
                    };
                    if too_big {
                        env.req.rotated.push((lb.src, p));
                        continue;
                    }
                    lb.imbalance -= load as i64;
                }
                MigrationType::Util => {
                    let util = tp.util_avg;
                    let shifted = if self.f.failure_relax_util {
                        util >> failed.min(63)
                    } else {
                        util
                    };
                    if shifted as i64 > lb.imbalance {
                        env.req.rotated.push((lb.src, p));
                        continue;
                    }
                    lb.imbalance -= util as i64;
                }
                MigrationType::Task => lb.imbalance -= 1,
            }
            self.detach(env, p, lb.src, lb.dst);
            detached += 1;
            if self.f.newidle_max_one_task && lb.idle == IdleType::NewlyIdle {
                break;
            }
            if lb.imbalance <= 0 {
                break;
            }
        }
        env.scratch = list;
        detached
    }

    /// Record a move of `p` and update the view of both run queues so later
    /// levels of the same pass see it.
    pub(super) fn detach(&mut self, env: &mut BalanceEnv, p: u32, src: usize, dst: usize) {
        let (load, util) = {
            let t = &env.tasks[p as usize];
            (t.load_avg, t.util_avg)
        };
        env.req.moves.push(Migration { task: p, src, dst });
        env.stats.moved += 1;
        let s = &mut env.cpus[src];
        s.nr_running -= 1;
        s.load_avg = s.load_avg.saturating_sub(load);
        s.util_avg = s.util_avg.saturating_sub(util);
        s.runnable_avg = s.runnable_avg.saturating_sub(util);
        let d = &mut env.cpus[dst];
        d.nr_running += 1;
        d.load_avg += load;
        d.util_avg += util;
        d.runnable_avg += util;
    }
}
