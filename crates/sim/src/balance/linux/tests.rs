//! Unit tests of the Linux balancer on hand-made run queues: exact moves for
//! small fixed scenarios, without the event loop.

use super::*;
use crate::balance::{BalanceStats, RqTasks};
use crate::cacheline::LineTable;
use crate::costs::MachineCosts;
use crate::eevdf::Entity;
use crate::state::{CpuState, LlcShared, RqIdleStats, TaskPlacement};
use topology::{preset, DomainOptions, SchedDomains, Topology};

/// Run queues as plain lists: `lists[cpu]` in cfs_tasks order (head first),
/// `curr[cpu]` the running task.
struct FakeRqs {
    lists: Vec<Vec<u32>>,
    curr: Vec<Option<u32>>,
}

impl RqTasks for FakeRqs {
    fn curr(&self, cpu: usize) -> Option<u32> {
        self.curr[cpu]
    }
    fn cfs_tasks(&self, cpu: usize, out: &mut Vec<u32>) {
        out.extend_from_slice(&self.lists[cpu]);
    }
    fn update_blocked_averages(&mut self, cpu: usize) -> (u64, u64, u64) {
        let n = self.lists[cpu].len() as u64;
        (n * 1024, (n * 1024).min(1024), n * 1024)
    }
}

/// A machine with tasks: each task always runnable (load 1024, util
/// 1024/tasks-on-its-CPU), the first task of each list running.
struct Fixture {
    topo: Topology,
    sd: SchedDomains,
    costs: MachineCosts,
    cpus: Vec<CpuState>,
    idle: Vec<RqIdleStats>,
    llc: Vec<LlcShared>,
    tasks: Vec<TaskPlacement>,
    ents: Vec<Entity>,
    rqs: FakeRqs,
    lines: LineTable,
    root: u32,
    stats: BalanceStats,
    now: u64,
}

impl Fixture {
    fn new(machine: &str, per_cpu: &[(usize, usize)]) -> Fixture {
        let topo = preset(machine).unwrap();
        let sd = SchedDomains::build(&topo, &DomainOptions::default());
        let n = topo.nr_cpus();
        let mut lines = LineTable::new(n);
        let cpus: Vec<CpuState> = (0..n).map(|_| CpuState::boot(lines.alloc())).collect();
        let llc = (0..sd.nr_llcs())
            .map(|_| LlcShared {
                line: lines.alloc(),
                ..Default::default()
            })
            .collect();
        let root = lines.alloc();
        let mut f = Fixture {
            topo,
            sd,
            costs: MachineCosts::for_machine(machine).zeroed(),
            cpus,
            idle: vec![RqIdleStats::boot(); n],
            llc,
            tasks: Vec::new(),
            ents: Vec::new(),
            rqs: FakeRqs {
                lists: vec![Vec::new(); n],
                curr: vec![None; n],
            },
            lines,
            root,
            stats: BalanceStats::default(),
            now: 1_000_000_000,
        };
        for &(cpu, count) in per_cpu {
            for _ in 0..count {
                f.add_task(cpu);
            }
        }
        f
    }

    fn add_task(&mut self, cpu: usize) -> u32 {
        let t = self.tasks.len() as u32;
        // always runnable: full load and util until shared below
        let mut tp = TaskPlacement::new(self.topo.all_cpus().clone(), cpu);
        tp.load_avg = 1024;
        tp.util_avg = 1024;
        self.tasks.push(tp);
        let mut e = Entity::new(1024, 3_000_000);
        // ran long ago: not cache hot
        e.exec_start = 0;
        self.ents.push(e);
        self.rqs.lists[cpu].push(t);
        if self.rqs.curr[cpu].is_none() {
            self.rqs.curr[cpu] = Some(t);
        }
        let nr = self.rqs.lists[cpu].len() as u64;
        let s = &mut self.cpus[cpu];
        s.nr_running = nr as u32;
        s.curr_is_idle = false;
        s.load_avg = 1024 * nr;
        s.util_avg = 1024;
        s.runnable_avg = 1024 * nr;
        for &t in &self.rqs.lists[cpu] {
            self.tasks[t as usize].util_avg = 1024 / nr;
        }
        t
    }

    fn env(&mut self, this_cpu: usize) -> BalanceEnv<'_> {
        let hz = self.costs.hz;
        BalanceEnv {
            topo: &self.topo,
            sd: &self.sd,
            costs: &self.costs,
            cpus: &mut self.cpus,
            idle_stats: &mut self.idle,
            llc: &mut self.llc,
            tasks: &self.tasks,
            ents: &self.ents,
            rqs: &mut self.rqs,
            lines: &mut self.lines,
            root_line: self.root,
            stats: &mut self.stats,
            now: self.now,
            jiffies: self.now * hz / 1_000_000_000,
            hz,
            this_cpu,
            cost_ns: 0,
            rq_reads: 0,
            req: Default::default(),
            scratch: Vec::new(),
            numa: None,
        }
    }
}

fn modern() -> LinuxBalancer {
    LinuxBalancer::new(LbFeatures::for_version((6, 8)))
}

#[test]
fn idle_cpu_pulls_the_least_recently_run_task_at_the_mc_level() {
    // kunpeng920-node: clusters of 4 in a 24-CPU LLC. CPU 0 runs task 0
    // with tasks 1 and 2 queued behind it (list order 0, 1, 2: task 2 is
    // the tail). Idle CPU 4, first of its cluster, balances MC on its tick.
    let mut f = Fixture::new("kunpeng920-node", &[(0, 3)]);
    let mut b = modern();
    let mut env = f.env(4);
    b.tick(&mut env, 4, true);
    let moves = env.req.moves.clone();
    assert_eq!(
        moves,
        vec![crate::balance::Migration {
            task: 2,
            src: 0,
            dst: 4
        }]
    );
    assert_eq!(env.cpus[0].nr_running, 2);
    assert_eq!(env.cpus[4].nr_running, 1);
    assert_eq!(f.stats.levels["MC"].periodic.moved, 1);
}

#[test]
fn a_busy_cpu_does_not_spread_a_group_that_is_not_overloaded() {
    // CPU 4 is busy with one task; CPU 0 has two: the MC group of CPU 0 has
    // spare capacity (4 CPUs, 2 tasks), so a busy balancer leaves it.
    let mut f = Fixture::new("kunpeng920-node", &[(0, 2), (4, 1)]);
    let mut b = modern();
    let mut env = f.env(4);
    b.tick(&mut env, 4, false);
    assert!(env.req.moves.is_empty());
}

#[test]
fn affinity_is_respected() {
    let mut f = Fixture::new("kunpeng920-node", &[(0, 3)]);
    for t in 0..3 {
        f.tasks[t].cpus_allowed = topology::CpuMask::from_cpus([0]);
    }
    let mut b = modern();
    let mut env = f.env(4);
    b.tick(&mut env, 4, true);
    assert!(env.req.moves.is_empty());
}

#[test]
fn cache_hot_tasks_stay_until_balancing_has_failed() {
    let mut f = Fixture::new("kunpeng920-node", &[(0, 3)]);
    // tasks 1 and 2 ran 100 us ago: hot (migration_cost 500 us)
    for t in 1..3 {
        f.ents[t].exec_start = f.now - 100_000;
    }
    let mut b = modern();
    let mut env = f.env(4);
    b.tick(&mut env, 4, true);
    assert!(
        env.req.moves.is_empty(),
        "hot tasks moved: {:?}",
        env.req.moves
    );
    // nr_balance_failed grew; once it exceeds cache_nice_tries (1 at MC),
    // hotness no longer protects them
    let mc =
        f.sd.domains(4)
            .iter()
            .position(|d| d.level.name() == "MC")
            .unwrap();
    assert_eq!(b.dom[4][mc].nr_balance_failed, 1);
    for _ in 0..3 {
        f.now += 1_000_000_000;
        let mut env = f.env(4);
        b.tick(&mut env, 4, true);
        if !env.req.moves.is_empty() {
            assert_eq!(env.req.moves[0].dst, 4);
            return;
        }
    }
    panic!("hot tasks never moved");
}

#[test]
fn newidle_is_gated_while_no_cpu_is_overloaded() {
    let mut f = Fixture::new("kunpeng920-node", &[(0, 3)]);
    let mut b = modern();
    let mut env = f.env(5);
    assert!(!b.newidle(&mut env, 5));
    assert_eq!(env.stats.newidle_gated, 1);
    b.set_overloaded();
    let mut env = f.env(5);
    assert!(b.newidle(&mut env, 5));
    // newidle pulls one task (CONFIG_PREEMPTION), from the tail
    assert_eq!(
        env.req.moves,
        vec![crate::balance::Migration {
            task: 2,
            src: 0,
            dst: 5
        }]
    );
}

#[test]
fn sis_util_scan_budget_falls_with_load_and_is_zero_at_saturation() {
    // 24 CPUs, pct 117: util 0 everywhere scans the whole LLC, full util none
    let mut f = Fixture::new("kunpeng920-node", &[]);
    let mut b = modern();
    let mut env = f.env(0);
    b.tick(&mut env, 0, true);
    assert_eq!(f.llc[0].nr_idle_scan, 24);
    // half the CPUs busy: average util 512 -> 15 of 24 (the patch's formula)
    let per_cpu: Vec<(usize, usize)> = (0..12).map(|c| (c, 1)).collect();
    let mut f = Fixture::new("kunpeng920-node", &per_cpu);
    let mut b = modern();
    let mut env = f.env(0);
    b.tick(&mut env, 0, false);
    assert_eq!(f.llc[0].nr_idle_scan, 15);
    // three quarters: x = 768, t = 768^2 * 117^2 / 10240000 = 788, nr = 236 * 24 / 1024 = 5
    let per_cpu: Vec<(usize, usize)> = (0..18).map(|c| (c, 1)).collect();
    let mut f = Fixture::new("kunpeng920-node", &per_cpu);
    let mut b = modern();
    let mut env = f.env(0);
    b.tick(&mut env, 0, false);
    assert_eq!(f.llc[0].nr_idle_scan, 5);
    let per_cpu: Vec<(usize, usize)> = (0..24).map(|c| (c, 1)).collect();
    let mut f = Fixture::new("kunpeng920-node", &per_cpu);
    let mut b = modern();
    let mut env = f.env(0);
    b.tick(&mut env, 0, false);
    assert_eq!(f.llc[0].nr_idle_scan, 0);
}

#[test]
fn legacy_balancer_moves_load_to_an_idle_cpu() {
    let mut f = Fixture::new("kunpeng920-node", &[(0, 4)]);
    let mut b = LinuxBalancer::new(LbFeatures::for_version((5, 4)));
    assert_eq!(b.name(), "linux-legacy");
    let mut env = f.env(4);
    b.tick(&mut env, 4, true);
    // load units: imbalance is at least one task's load; tasks move from
    // the tail while the imbalance lasts
    assert!(!env.req.moves.is_empty());
    assert!(env
        .req
        .moves
        .iter()
        .all(|m| m.src == 0 && m.dst == 4 && m.task != 0));
}

#[test]
fn active_balance_is_requested_after_repeated_failures() {
    // CPU 0 runs task 0; task 1, queued, is pinned to CPU 0. Nothing can be
    // detached (task 0 runs), so failures pile up until the stopper is
    // asked to push the running task.
    let mut f = Fixture::new("kunpeng920-node", &[(0, 2)]);
    f.tasks[1].cpus_allowed = topology::CpuMask::from_cpus([0]);
    let mut b = modern();
    let mut active = None;
    for _ in 0..8 {
        f.now += 1_000_000_000;
        let mut env = f.env(4);
        b.tick(&mut env, 4, true);
        assert!(env.req.moves.is_empty());
        if let Some(&a) = env.req.active.first() {
            active = Some(a);
            break;
        }
    }
    assert_eq!(active, Some((0, 4)));
    // the stopper: task 0 no longer runs; it is the one allowed on CPU 4
    f.rqs.curr[0] = None;
    let mut env = f.env(0);
    b.active_stop(&mut env, 0, 4);
    assert_eq!(
        env.req.moves,
        vec![crate::balance::Migration {
            task: 0,
            src: 0,
            dst: 4
        }]
    );
}

#[test]
fn nohz_kick_goes_to_a_tickless_idle_cpu() {
    let mut f = Fixture::new("kunpeng920-node", &[(0, 3)]);
    let mut b = modern();
    for c in 1..24 {
        let mut env = f.env(c);
        b.nohz_enter_idle(&mut env, c);
    }
    f.now += 1_000_000_000;
    let mut env = f.env(0);
    b.tick(&mut env, 0, false);
    let ilb = env.req.kick_ilb.expect("a kick");
    assert_eq!(ilb, 1, "first idle CPU of the nohz mask");
    let mut env = f.env(ilb);
    b.nohz_idle_balance(&mut env, ilb);
    assert!(!env.req.moves.is_empty(), "the ILB moved nothing");
    assert!(env.req.moves.iter().all(|m| m.src == 0));
}

#[test]
fn sd_idle_legacy_demotes_higher_levels_when_a_sibling_is_busy() {
    // xeon-12c24t: SMT pairs. CPU 1's sibling CPU 0 is busy with one task,
    // CPU 2 (another core) has three. With sd_idle, idle CPU 1's SMT pass
    // returns "sibling busy" and its MC pass runs as a busy CPU, which
    // does not spread a group that is not overloaded.
    let machine = "xeon-12c24t";
    let topo = preset(machine).unwrap();
    let sib = topo.smt_mask(0).iter().find(|&c| c != 0).unwrap();
    let other = (0..topo.nr_cpus())
        .find(|&c| !topo.smt_mask(0).test(c))
        .unwrap();
    let run = |legacy: bool| {
        let mut f = Fixture::new(machine, &[(0, 1), (other, 3)]);
        let mut lf = LbFeatures::for_version((5, 4));
        lf.sd_idle_legacy = legacy;
        let mut b = LinuxBalancer::new(lf);
        let mut env = f.env(sib);
        b.tick(&mut env, sib, true);
        env.req.moves.len()
    };
    assert!(run(false) > 0);
    assert_eq!(run(true), 0);
}

#[test]
fn every_active_balance_request_of_a_call_is_kept() {
    // CPUs 0 and 4 each run a task with a second one queued behind it that
    // is pinned there: only active balance can help. Every kick the
    // balancer counts must reach the engine (one stopper per busy CPU),
    // even when one nohz pass kicks both.
    let mut f = Fixture::new("kunpeng920-node", &[(0, 2), (4, 2)]);
    f.tasks[1].cpus_allowed = topology::CpuMask::from_cpus([0]);
    f.tasks[3].cpus_allowed = topology::CpuMask::from_cpus([4]);
    let mut b = modern();
    for c in (1..24).filter(|&c| c != 4) {
        let mut env = f.env(c);
        b.nohz_enter_idle(&mut env, c);
    }
    let mut requested = Vec::new();
    for _ in 0..12 {
        f.now += 1_000_000_000;
        let mut env = f.env(1);
        b.nohz_idle_balance(&mut env, 1);
        requested.extend(env.req.active.iter().copied());
        // the stoppers run and clear their flags, as the engine would
        for &(src, dst) in &requested {
            let mut env = f.env(src);
            b.active_stop(&mut env, src, dst);
        }
        requested.clear();
    }
    assert!(f.stats.active_kicks >= 2, "{:?}", f.stats.active_kicks);
    assert!(b.rq.iter().all(|r| !r.active_balance), "a kick was lost");
}

/// NUMA balancing's view for the fixture: preferred nodes by task, weight
/// 1000 on the preferred node.
struct Prefers(Vec<Option<u16>>);

impl crate::balance::NumaLocality for Prefers {
    fn preferred(&self, p: u32) -> Option<u16> {
        self.0[p as usize]
    }
    fn weight(&self, p: u32, node: usize) -> Option<i64> {
        let pref = self.0[p as usize]?;
        Some(if pref as usize == node { 1000 } else { 0 })
    }
}

/// Node 0 of xeon-12c24t is overloaded: every CPU runs a task and CPU 0
/// queues three more. Idle CPU 6 (node 1) balances the NUMA domain. All
/// tasks prefer node 0 except task 1, queued on CPU 0, which prefers node
/// 1: migrate_degrades_locality makes the others hot (the source runs a
/// task away from its preferred node) and task 1 the one to move; without
/// NUMA balancing's view the list tail (task 3) goes.
#[test]
fn numa_locality_picks_the_task_that_prefers_the_destination() {
    let node0: Vec<usize> = (0..6).chain(12..18).collect();
    let mut per_cpu: Vec<(usize, usize)> = vec![(0, 4)];
    per_cpu.extend(node0.iter().skip(1).map(|&c| (c, 1)));
    let moved = |view: bool| {
        let mut f = Fixture::new("xeon-12c24t", &per_cpu);
        let mut prefs = vec![Some(0u16); f.tasks.len()];
        prefs[1] = Some(1);
        let prefs = Prefers(prefs);
        let mut b = modern();
        let mut env = f.env(6);
        if view {
            env.numa = Some(&prefs);
        }
        b.tick(&mut env, 6, true);
        env.req.moves.iter().map(|m| m.task).collect::<Vec<_>>()
    };
    assert_eq!(moved(false).first(), Some(&3), "{:?}", moved(false));
    assert_eq!(moved(true), vec![1]);
}

#[test]
fn a_child_level_stopped_by_affinity_marks_its_parent_group_imbalanced() {
    // kunpeng920-node: CPU 0 runs task 0 with tasks 1-3 queued; tasks 1
    // and 2 may run only on CPU 0. Idle CPU 1 balances its cluster (CLS):
    // it pulls task 3, finds the rest pinned with imbalance left, and so
    // marks its MC group (the cluster, CPUs 0-3) imbalanced
    // (sd->parent->groups->sgc->imbalance). A later pass that finds the
    // cluster balanced clears it (out_balanced).
    let mut f = Fixture::new("kunpeng920-node", &[(0, 4)]);
    for t in 1..3 {
        f.tasks[t].cpus_allowed = topology::CpuMask::from_cpus([0]);
    }
    let levels: Vec<&str> = f.sd.domains(1).iter().map(|d| d.name).collect();
    let mc = levels.iter().position(|&n| n == "MC").unwrap();
    let at = mc * f.topo.nr_cpus();
    let mut b = modern();
    assert!(b.group_imbalance.is_empty(), "nothing marked at boot");
    let mut env = f.env(1);
    b.tick(&mut env, 1, true);
    assert_eq!(env.req.moves.len(), 1, "{:?}", env.req.moves);
    assert_eq!(env.req.moves[0].task, 3);
    assert_eq!(b.group_imbalance.get(at).copied(), Some(true), "{levels:?}");
    // the cluster balanced (a task on each of CPUs 0 and 1): CPU 1's next
    // pass finds nothing to do (out_balanced) and clears the mark
    let mut g = Fixture::new("kunpeng920-node", &[(0, 1), (1, 1)]);
    g.now = f.now + 1_000_000_000;
    let mut env = g.env(1);
    b.tick(&mut env, 1, true);
    assert!(env.req.moves.is_empty());
    assert_eq!(b.group_imbalance.get(at).copied(), Some(false));
}
