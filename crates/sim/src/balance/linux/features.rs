//! Load-balancer toggles of a kernel profile, derived from the version
//! (kernel/sched/fair.c at each release; commits named where known).

/// Which `load_balance()` algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LbAlgorithm {
    /// Before 5.5: avg_load comparison with `fix_small_imbalance`, group
    /// types other / imbalanced / overloaded, imbalance always in load
    /// units, runnable_load_avg as the CPU load.
    Legacy,
    /// 5.5+ (0b0695f2b34a "sched/fair: Rework load_balance()"): group types
    /// has_spare .. overloaded, migration types load / util / task.
    Modern,
}

/// The NUMA imbalance allowance in `calculate_imbalance` (`adjust_numa_imbalance`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumaImbalance {
    /// Up to 5.5: none.
    None,
    /// 5.6-5.10 (b396f52326de): no move while the busiest group runs at most
    /// a pair of tasks (NUMA_IMBALANCE_MIN = 2).
    Pair,
    /// 5.11-5.16 (7d2b5dd0bcc4): imbalances of at most 2 are ignored while
    /// the busiest group runs fewer tasks than a quarter of its CPUs.
    QuarterBusiest,
    /// 5.17: the same test on the local group, counting the task to come.
    QuarterLocal,
    /// 5.18+ (e496132ebedd): imbalances of at most 2 are ignored while the
    /// destination (local tasks + 1) runs at most `imb_numa_nr` tasks (the
    /// domain build sets imb_numa_nr per version).
    ImbNumaNr,
}

/// The toggles of the balancer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbFeatures {
    /// Run load balancing at all (off: tasks move only at wake-up).
    pub load_balance: bool,
    /// The algorithm.
    pub algorithm: LbAlgorithm,
    /// runnable_avg in group classification (070f5e860ee2, 5.7).
    pub classify_runnable: bool,
    /// No migrate_util inside an LLC (16b0a7a1a0af, 5.6).
    pub llc_no_util_migration: bool,
    /// NUMA imbalance allowance.
    pub numa_imbalance: NumaImbalance,
    /// Before 6.0 the spreading imbalance is halved before the NUMA
    /// allowance looks at it; from 6.0 after.
    pub numa_halve_first: bool,
    /// 4.19: out_balanced always clears the parent group's imbalance flag;
    /// from 5.4 (bracketed by 4.19 and 5.4) not when every task was pinned.
    pub out_balanced_clears_always: bool,
    /// SMT-aware balancing: group_smt_balance, sibling_imbalance per core,
    /// SMT-vs-non-SMT busiest rules (6.6, Tim Chen's series).
    pub smt_aware_lb: bool,
    /// should_we_balance prefers a CPU on a wholly idle core (6.6).
    pub swb_idle_core: bool,
    /// The task's load is shifted right by nr_balance_failed in
    /// detach_tasks (5.10); off: skip when load/2 > imbalance (5.5-5.9: only
    /// while nr_balance_failed <= cache_nice_tries).
    pub failure_relax_load: bool,
    /// The same for util (~6.10).
    pub failure_relax_util: bool,
    /// Active balance only for migrate_task after cache_nice_tries+2
    /// failures, LBF_ACTIVE_LB instead of the nr_balance_failed trick, no
    /// interval doubling after a kick (~5.12-5.13); off: any type (<= 5.11).
    pub active_task_type_only: bool,
    /// Newidle is gated by the first domain's max_newidle_lb_cost (5.16);
    /// off: by sysctl_sched_migration_cost (<= 5.15).
    pub newidle_gate_lb_cost: bool,
    /// Newidle pulls at most one task (CONFIG_PREEMPTION kernels; the
    /// distributions' PREEMPT_DYNAMIC builds have it).
    pub newidle_max_one_task: bool,
    /// Busy balance intervals are one jiffy shorter (5.10).
    pub busy_interval_minus_one: bool,
    /// detach_tasks returns at once when the source has <= 1 task (5.13-ish).
    pub detach_src_single_exit: bool,
    /// The util migration picks the CPU by max(util, runnable) (7d0583cf9ec7,
    /// 6.5).
    pub util_boost_pick: bool,
    /// A local group loaded above the domain average gets no load migration
    /// ("sched/fair: fix imbalance overflow", 6.4, also in stable 5.10+);
    /// off: the unsigned subtraction wraps and the pull side decides.
    pub local_sd_avg_test: bool,
    /// <= 2.6.38 sd_idle: an idle SMT thread whose sibling is busy balances
    /// the higher levels as a busy CPU, and newidle stops at the SMT level.
    pub sd_idle_legacy: bool,
    /// The wake-up path's SIS_UTIL: produce nr_idle_scan in update_sd_lb_stats.
    pub sis_util: bool,
    /// sysctl_sched_migration_cost, ns.
    pub migration_cost_ns: u64,
    /// sysctl_sched_nr_migrate.
    pub nr_migrate: u32,
}

impl LbFeatures {
    /// The toggles of kernel version `v` (`(7, 0)` is the latest tree;
    /// `(2, 6)` means 2.6.38). `sis_util` is set from the wake-up profile.
    pub fn for_version(v: (u32, u32)) -> LbFeatures {
        let ge = |a: u32, b: u32| v >= (a, b);
        LbFeatures {
            load_balance: true,
            algorithm: if ge(5, 5) {
                LbAlgorithm::Modern
            } else {
                LbAlgorithm::Legacy
            },
            classify_runnable: ge(5, 7),
            llc_no_util_migration: ge(5, 6),
            numa_imbalance: if ge(5, 18) {
                NumaImbalance::ImbNumaNr
            } else if ge(5, 17) {
                NumaImbalance::QuarterLocal
            } else if ge(5, 11) {
                NumaImbalance::QuarterBusiest
            } else if ge(5, 6) {
                NumaImbalance::Pair
            } else {
                NumaImbalance::None
            },
            numa_halve_first: !ge(6, 0),
            out_balanced_clears_always: !ge(5, 4),
            smt_aware_lb: ge(6, 6),
            swb_idle_core: ge(6, 6),
            failure_relax_load: ge(5, 10),
            failure_relax_util: ge(6, 10),
            active_task_type_only: ge(5, 13),
            newidle_gate_lb_cost: ge(5, 16),
            // CONFIG_PREEMPTION: distribution kernels have it since
            // PREEMPT_DYNAMIC (5.12); before, they were PREEMPT_VOLUNTARY
            newidle_max_one_task: ge(5, 12),
            busy_interval_minus_one: ge(5, 10),
            detach_src_single_exit: ge(5, 13),
            util_boost_pick: ge(6, 5),
            local_sd_avg_test: ge(6, 4),
            sd_idle_legacy: !ge(3, 0),
            sis_util: ge(6, 0),
            migration_cost_ns: 500_000,
            nr_migrate: 32,
        }
    }
}

/// (name, values, description) of every balancer toggle.
pub static LB_FEATURES: &[(&str, &str, &str)] = &[
    ("load_balance", "on|off", "run the load balancer (off: tasks move only when they wake)"),
    ("lb_algorithm", "legacy|modern", "load_balance(): avg_load + fix_small_imbalance (<=5.4) or group/migration types (0b0695f2b34a, 5.5)"),
    ("classify_runnable", "on|off", "runnable_avg in group classification (070f5e860ee2, 5.7)"),
    ("llc_no_util_migration", "on|off", "no migrate_util inside an LLC (16b0a7a1a0af, 5.6)"),
    ("numa_imbalance", "none|pair|quarter-busiest|quarter-local|imb-numa-nr", "NUMA allowance: none (<=5.5), a pair of tasks (b396f52326de, 5.6), a quarter of the busiest group (7d2b5dd0bcc4, 5.11) or of the local one (5.17), imb_numa_nr tasks (e496132ebedd, 5.18)"),
    ("numa_halve_first", "on|off", "halve the spreading imbalance before the NUMA allowance (<=5.19) or after (6.0)"),
    ("smt_aware_lb", "on|off", "group_smt_balance, sibling_imbalance per core, SMT-vs-non-SMT busiest (6.6)"),
    ("swb_idle_core", "on|off", "should_we_balance prefers a CPU on a wholly idle core (6.6)"),
    ("failure_relax_load", "on|off", "detach_tasks: load >> nr_balance_failed (5.10); off: skip if load/2 > imbalance"),
    ("failure_relax_util", "on|off", "detach_tasks: util >> nr_balance_failed (~6.10)"),
    ("active_balance_rule", "any-failure|task-type-only", "active balance after cache_nice_tries+2 failures of any type (<=5.12) or of migrate_task only (~5.13)"),
    ("newidle_gate", "migration-cost|max-lb-cost", "newidle skipped when avg_idle < 0.5 ms (<=5.15) or < the first level's max_newidle_lb_cost (5.16)"),
    ("newidle_max_one_task", "on|off", "newidle pulls at most one task (CONFIG_PREEMPTION)"),
    ("busy_interval_minus_one", "on|off", "busy balance intervals one jiffy shorter (5.10)"),
    ("detach_src_single_exit", "on|off", "detach_tasks gives up at once on a source with <= 1 task (~5.13)"),
    ("util_boost_pick", "on|off", "migrate_util picks the source by max(util, runnable) (7d0583cf9ec7, 6.5)"),
    ("local_sd_avg_test", "on|off", "no load migration to a local group above the domain average (imbalance overflow fix, 6.4; off: the unsigned wrap)"),
    ("sd_idle_legacy", "on|off", "<=2.6.38 sd_idle: an idle SMT thread with a busy sibling balances higher levels as busy, newidle stops at SMT"),
];

fn on_off(value: &str) -> Result<bool, &'static str> {
    match value {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err("on|off"),
    }
}

impl LbFeatures {
    /// Set toggle `name` to `value`. Ok(false): not a balancer toggle;
    /// Err(valid values): a bad value.
    pub fn set(&mut self, name: &str, value: &str) -> Result<bool, &'static str> {
        let b = || on_off(value);
        match name {
            "load_balance" => self.load_balance = b()?,
            "lb_algorithm" => {
                self.algorithm = match value {
                    "legacy" => LbAlgorithm::Legacy,
                    "modern" => LbAlgorithm::Modern,
                    _ => return Err("legacy|modern"),
                }
            }
            "classify_runnable" => self.classify_runnable = b()?,
            "llc_no_util_migration" => self.llc_no_util_migration = b()?,
            "numa_imbalance" => {
                self.numa_imbalance = match value {
                    "none" => NumaImbalance::None,
                    "pair" => NumaImbalance::Pair,
                    "quarter-busiest" => NumaImbalance::QuarterBusiest,
                    "quarter-local" => NumaImbalance::QuarterLocal,
                    "imb-numa-nr" => NumaImbalance::ImbNumaNr,
                    _ => return Err("none|pair|quarter-busiest|quarter-local|imb-numa-nr"),
                }
            }
            "numa_halve_first" => self.numa_halve_first = b()?,
            "smt_aware_lb" => self.smt_aware_lb = b()?,
            "swb_idle_core" => self.swb_idle_core = b()?,
            "failure_relax_load" => self.failure_relax_load = b()?,
            "failure_relax_util" => self.failure_relax_util = b()?,
            "active_balance_rule" => {
                self.active_task_type_only = match value {
                    "any-failure" => false,
                    "task-type-only" => true,
                    _ => return Err("any-failure|task-type-only"),
                }
            }
            "newidle_gate" => {
                self.newidle_gate_lb_cost = match value {
                    "migration-cost" => false,
                    "max-lb-cost" => true,
                    _ => return Err("migration-cost|max-lb-cost"),
                }
            }
            "newidle_max_one_task" => self.newidle_max_one_task = b()?,
            "busy_interval_minus_one" => self.busy_interval_minus_one = b()?,
            "detach_src_single_exit" => self.detach_src_single_exit = b()?,
            "util_boost_pick" => self.util_boost_pick = b()?,
            "local_sd_avg_test" => self.local_sd_avg_test = b()?,
            "sd_idle_legacy" => self.sd_idle_legacy = b()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}
