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

crate::toggles! {
    /// The toggles of the balancer.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct LbFeatures {
        /// 4.19: out_balanced always clears the parent group's imbalance flag;
        /// from 5.4 (bracketed by 4.19 and 5.4) not when every task was pinned.
        pub out_balanced_clears_always: bool = !ge(5, 4);
        /// The wake-up path's SIS_UTIL: produce nr_idle_scan in update_sd_lb_stats.
        pub sis_util: bool = ge(6, 0);
        /// sysctl_sched_migration_cost, ns.
        pub migration_cost_ns: u64 = 500_000;
        /// sysctl_sched_nr_migrate.
        pub nr_migrate: u32 = 32;
    }
    /// (name, values, description) of every balancer toggle.
    table pub LB_FEATURES;
    defaults(_name, _v, ge);
    fn for_version = "The toggles of kernel version `v` (`(7, 0)` is the latest tree; \
        `(2, 6)` means 2.6.38). `sis_util` is set from the wake-up profile.";
    fn set = "Set toggle `name` to `value`. Ok(false): not a balancer toggle; \
        Err(valid values): a bad value.";
    toggles {
        /// Run load balancing at all (off: tasks move only at wake-up).
        pub load_balance: bool = true, "load_balance"
            => "run the load balancer (off: tasks move only when they wake)";
        /// The algorithm.
        pub algorithm: LbAlgorithm = if ge(5, 5) { LbAlgorithm::Modern } else { LbAlgorithm::Legacy },
            "lb_algorithm" ("legacy|modern": "legacy" => LbAlgorithm::Legacy, "modern" => LbAlgorithm::Modern)
            => "load_balance(): avg_load + fix_small_imbalance (<=5.4) or group/migration types (0b0695f2b34a, 5.5)";
        /// runnable_avg in group classification (070f5e860ee2, 5.7).
        pub classify_runnable: bool = ge(5, 7), "classify_runnable"
            => "runnable_avg in group classification (070f5e860ee2, 5.7)";
        /// No migrate_util inside an LLC (16b0a7a1a0af, 5.6).
        pub llc_no_util_migration: bool = ge(5, 6), "llc_no_util_migration"
            => "no migrate_util inside an LLC (16b0a7a1a0af, 5.6)";
        /// NUMA imbalance allowance.
        pub numa_imbalance: NumaImbalance = if ge(5, 18) {
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
            "numa_imbalance" ("none|pair|quarter-busiest|quarter-local|imb-numa-nr":
                "none" => NumaImbalance::None,
                "pair" => NumaImbalance::Pair,
                "quarter-busiest" => NumaImbalance::QuarterBusiest,
                "quarter-local" => NumaImbalance::QuarterLocal,
                "imb-numa-nr" => NumaImbalance::ImbNumaNr)
            => "NUMA allowance: none (<=5.5), a pair of tasks (b396f52326de, 5.6), a quarter of the busiest group (7d2b5dd0bcc4, 5.11) or of the local one (5.17), imb_numa_nr tasks (e496132ebedd, 5.18)";
        /// Before 6.0 the spreading imbalance is halved before the NUMA
        /// allowance looks at it; from 6.0 after.
        pub numa_halve_first: bool = !ge(6, 0), "numa_halve_first"
            => "halve the spreading imbalance before the NUMA allowance (<=5.19) or after (6.0)";
        /// SMT-aware balancing: group_smt_balance, sibling_imbalance per core,
        /// SMT-vs-non-SMT busiest rules (6.6, Tim Chen's series).
        pub smt_aware_lb: bool = ge(6, 6), "smt_aware_lb"
            => "group_smt_balance, sibling_imbalance per core, SMT-vs-non-SMT busiest (6.6)";
        /// should_we_balance prefers a CPU on a wholly idle core (6.6).
        pub swb_idle_core: bool = ge(6, 6), "swb_idle_core"
            => "should_we_balance prefers a CPU on a wholly idle core (6.6)";
        /// The task's load is shifted right by nr_balance_failed in
        /// detach_tasks (5.10); off: skip when load/2 > imbalance (5.5-5.9: only
        /// while nr_balance_failed <= cache_nice_tries).
        pub failure_relax_load: bool = ge(5, 10), "failure_relax_load"
            => "detach_tasks: load >> nr_balance_failed (5.10); off: skip if load/2 > imbalance";
        /// The same for util (~6.10).
        pub failure_relax_util: bool = ge(6, 10), "failure_relax_util"
            => "detach_tasks: util >> nr_balance_failed (~6.10)";
        /// Active balance only for migrate_task after cache_nice_tries+2
        /// failures, LBF_ACTIVE_LB instead of the nr_balance_failed trick, no
        /// interval doubling after a kick (~5.12-5.13); off: any type (<= 5.11).
        pub active_task_type_only: bool = ge(5, 13),
            "active_balance_rule" ("any-failure|task-type-only": "any-failure" => false, "task-type-only" => true)
            => "active balance after cache_nice_tries+2 failures of any type (<=5.12) or of migrate_task only (~5.13)";
        /// Newidle is gated by the first domain's max_newidle_lb_cost (5.16);
        /// off: by sysctl_sched_migration_cost (<= 5.15).
        pub newidle_gate_lb_cost: bool = ge(5, 16),
            "newidle_gate" ("migration-cost|max-lb-cost": "migration-cost" => false, "max-lb-cost" => true)
            => "newidle skipped when avg_idle < 0.5 ms (<=5.15) or < the first level's max_newidle_lb_cost (5.16)";
        /// Newidle pulls at most one task (CONFIG_PREEMPTION kernels; the
        /// distributions' PREEMPT_DYNAMIC builds have it: since 5.12; before,
        /// they were PREEMPT_VOLUNTARY).
        pub newidle_max_one_task: bool = ge(5, 12), "newidle_max_one_task"
            => "newidle pulls at most one task (CONFIG_PREEMPTION)";
        /// Busy balance intervals are one jiffy shorter (5.10).
        pub busy_interval_minus_one: bool = ge(5, 10), "busy_interval_minus_one"
            => "busy balance intervals one jiffy shorter (5.10)";
        /// detach_tasks returns at once when the source has <= 1 task (5.13-ish).
        pub detach_src_single_exit: bool = ge(5, 13), "detach_src_single_exit"
            => "detach_tasks gives up at once on a source with <= 1 task (~5.13)";
        /// The util migration picks the CPU by max(util, runnable) (7d0583cf9ec7,
        /// 6.5).
        pub util_boost_pick: bool = ge(6, 5), "util_boost_pick"
            => "migrate_util picks the source by max(util, runnable) (7d0583cf9ec7, 6.5)";
        /// A local group loaded above the domain average gets no load migration
        /// ("sched/fair: fix imbalance overflow", 6.4, also in stable 5.10+);
        /// off: the unsigned subtraction wraps and the pull side decides.
        pub local_sd_avg_test: bool = ge(6, 4), "local_sd_avg_test"
            => "no load migration to a local group above the domain average (imbalance overflow fix, 6.4; off: the unsigned wrap)";
        /// <= 2.6.38 sd_idle: an idle SMT thread whose sibling is busy balances
        /// the higher levels as a busy CPU, and newidle stops at the SMT level.
        pub sd_idle_legacy: bool = !ge(3, 0), "sd_idle_legacy"
            => "<=2.6.38 sd_idle: an idle SMT thread with a busy sibling balances higher levels as busy, newidle stops at SMT";
    }
}
