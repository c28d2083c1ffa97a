//! The fair class of a kernel profile, as toggles: which discipline its
//! run queues follow (CFS from 2.6.38 to 6.5, EEVDF from 6.6: commit
//! 147f3efaa241 "sched/fair: Implement an EEVDF-like scheduling policy"
//! replaced CFS's pick and pre-emption in 6.6), and each discipline's
//! sched_features (kernel/sched/features.h) and version rules, derived
//! from the version like the other toggle families and overridable by
//! name. The rules themselves are in [`crate::cfs`] and [`crate::eevdf`];
//! [`FairFeatures::params`] turns a profile's toggles into the
//! [`EevdfParams`] a run queue is configured with. docs/fair-class.md.
//!
//! A toggle belongs to one discipline ([`toggle_class`]): asking for a CFS
//! toggle under an EEVDF profile (or the reverse) is an error that names
//! the class, unless `fair_class` is overridden first.

use crate::eevdf::{EevdfParams, FairClass};
use crate::Nanos;

crate::toggles! {
    /// The fair-class toggles of one kernel profile.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct FairFeatures {}
    /// (name, values, description) of every fair-class toggle.
    table pub FAIR_FEATURES;
    defaults(_name, _v, ge);
    fn for_version = "The toggles of kernel version `v` (`(7, 0)` is the latest tree).";
    toggles {
        /// The discipline.
        pub class: FairClass = if ge(6, 6) { FairClass::Eevdf } else { FairClass::Cfs },
            "fair_class" ("cfs|eevdf": "cfs" => FairClass::Cfs, "eevdf" => FairClass::Eevdf)
            => "the fair class's discipline: CFS (<=6.5) or EEVDF (147f3efaa241, 6.6)";
        /// WAKEUP_PREEMPTION (both disciplines).
        pub wakeup_preemption: bool = true, "wakeup_preemption"
            => "WAKEUP_PREEMPTION: a wake-up may pre-empt the running task";
        /// START_DEBIT.
        pub start_debit: bool = true, "start_debit"
            => "CFS START_DEBIT: a new task starts one virtual slice after min_vruntime";
        /// GENTLE_FAIR_SLEEPERS.
        pub gentle_fair_sleepers: bool = true, "gentle_fair_sleepers"
            => "CFS GENTLE_FAIR_SLEEPERS: a woken sleeper's credit is half the latency (off: a whole latency)";
        /// NEXT_BUDDY.
        pub next_buddy: bool = false, "next_buddy"
            => "CFS NEXT_BUDDY: a wakee that does not pre-empt is picked next";
        /// LAST_BUDDY.
        pub last_buddy: bool = true, "last_buddy"
            => "CFS LAST_BUDDY: the task a wake-up pre-empted is picked back when still close";
        /// sched_slice at least the minimum granularity (5.13).
        pub cfs_base_slice: bool = ge(5, 13), "cfs_base_slice"
            => "CFS BASE_SLICE: sched_slice is at least sched_min_granularity (0c2de3f054a5, 5.13)";
        /// SCHED_IDLE sleeper credit and slice floor (5.16).
        pub cfs_idle_granularity: bool = ge(5, 16), "cfs_idle_granularity"
            => "CFS SCHED_IDLE entities' sleeper credit and slice from the idle granularity (2cae3948edd4, 51ce83ed523b, 5.16)";
        /// pick_next_entity clears the pick's buddies (before 5.14).
        pub cfs_pick_clears_buddies: bool = !ge(5, 14), "cfs_pick_clears_buddies"
            => "CFS pick_next_entity clears the picked entity's buddies even when it keeps running (<5.14; 21f56ffe4482 moved it to set_next_entity)";
        /// check_preempt_tick's ideal runtime at most the latency (6.3).
        pub cfs_slice_cap: bool = ge(6, 3), "cfs_slice_cap"
            => "CFS check_preempt_tick's slice at most sched_latency (79ba1e607d68, 6.3)";
        /// Long sleepers placed at min_vruntime (6.3).
        pub cfs_long_sleeper: bool = ge(6, 3), "cfs_long_sleeper"
            => "CFS a sleeper of more than ~104 days is placed from min_vruntime whatever its vruntime (829c1651e9c4, 6.3)";
        /// PLACE_LAG.
        pub place_lag: bool = true, "place_lag"
            => "EEVDF PLACE_LAG: a waking task keeps the lag it left with";
        /// PLACE_DEADLINE_INITIAL.
        pub place_deadline_initial: bool = true, "place_deadline_initial"
            => "EEVDF PLACE_DEADLINE_INITIAL: a new task's first deadline is half a slice away";
        /// RUN_TO_PARITY.
        pub run_to_parity: bool = true, "run_to_parity"
            => "EEVDF RUN_TO_PARITY: a picked task runs until its deadline moves";
        /// update_curr reschedules once slice protection has ended (6.17,
        /// docs/fair-class.md).
        pub resched_unprotected: bool = ge(6, 17), "resched_unprotected"
            => "EEVDF update_curr reschedules once slice protection has ended, eligible or not (6.17)";
        /// DELAY_DEQUEUE with DELAY_ZERO and ENQUEUE_DELAYED (6.12; on
        /// from that version, docs/fair-class.md).
        pub delay_dequeue: bool = ge(6, 12), "delay_dequeue"
            => "EEVDF DELAY_DEQUEUE+DELAY_ZERO (6.12): an ineligible sleeper stays queued and wakes in place";
    }
}

/// Toggles that only one discipline has.
const CFS_ONLY: &[&str] = &[
    "start_debit",
    "gentle_fair_sleepers",
    "next_buddy",
    "last_buddy",
    "cfs_base_slice",
    "cfs_idle_granularity",
    "cfs_pick_clears_buddies",
    "cfs_slice_cap",
    "cfs_long_sleeper",
];
const EEVDF_ONLY: &[&str] = &[
    "place_lag",
    "place_deadline_initial",
    "run_to_parity",
    "resched_unprotected",
    "delay_dequeue",
];

/// The discipline toggle `name` belongs to (None: both, or not a
/// fair-class toggle).
pub fn toggle_class(name: &str) -> Option<FairClass> {
    if CFS_ONLY.contains(&name) {
        Some(FairClass::Cfs)
    } else if EEVDF_ONLY.contains(&name) {
        Some(FairClass::Eevdf)
    } else {
        None
    }
}

/// The name of a discipline, as the toggles and `--list-kernels` print it.
pub fn class_name(c: FairClass) -> &'static str {
    match c {
        FairClass::Cfs => "CFS",
        FairClass::Eevdf => "EEVDF",
    }
}

/// A fair-class toggle set for the other discipline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--feature {name}: a toggle of {toggle}, but this profile's fair class is {profile} (set fair_class={lower} first to run {toggle})")]
pub struct WrongClass {
    /// The toggle.
    pub name: String,
    /// Its discipline.
    pub toggle: &'static str,
    /// The profile's.
    pub profile: &'static str,
    /// The toggle's discipline as `fair_class` takes it.
    pub lower: &'static str,
}

impl FairFeatures {
    /// Set toggle `name`: Ok(false) when it is not a fair-class toggle,
    /// Err(Ok(valid values)) for a bad value, Err(Err(..)) for a toggle of
    /// the discipline this profile does not run.
    pub fn set(
        &mut self,
        name: &str,
        value: &str,
    ) -> Result<bool, Result<&'static str, WrongClass>> {
        if let Some(c) = toggle_class(name) {
            if c != self.class {
                return Err(Err(WrongClass {
                    name: name.to_string(),
                    toggle: class_name(c),
                    profile: class_name(self.class),
                    lower: match c {
                        FairClass::Cfs => "cfs",
                        FairClass::Eevdf => "eevdf",
                    },
                }));
            }
        }
        self.set_declared(name, value).map_err(Ok)
    }

    /// The run-queue parameters of these toggles on a machine of
    /// `online_cpus` CPUs with tick `tick_ns`: CFS's tunables scaled by
    /// 1 + log2 of the CPUs counted up to 8 (kernel/sched/fair.c
    /// `get_update_sysctl_factor`, SCHED_TUNABLESCALING_LOG), as EEVDF's
    /// base slice (`base_slice_ns`, already scaled) is.
    pub fn params(&self, online_cpus: usize, tick_ns: Nanos, base_slice_ns: Nanos) -> EevdfParams {
        let factor = 1 + online_cpus.clamp(1, 8).ilog2() as u64;
        EevdfParams {
            base_slice: base_slice_ns,
            tick_ns,
            place_lag: self.place_lag,
            place_deadline_initial: self.place_deadline_initial,
            run_to_parity: self.run_to_parity,
            wakeup_preemption: self.wakeup_preemption,
            delay_dequeue: self.delay_dequeue,
            resched_unprotected: self.resched_unprotected,
            class: self.class,
            // sysctl_sched_latency 6 ms, min_granularity 0.75 ms,
            // wakeup_granularity 1 ms, each times the factor
            sched_latency: 6_000_000 * factor,
            sched_min_granularity: 750_000 * factor,
            sched_wakeup_granularity: 1_000_000 * factor,
            // sysctl_sched_idle_min_granularity: not scaled
            sched_idle_min_granularity: 750_000,
            sched_nr_latency: 8,
            start_debit: self.start_debit,
            gentle_fair_sleepers: self.gentle_fair_sleepers,
            next_buddy: self.next_buddy,
            last_buddy: self.last_buddy,
            cfs_base_slice: self.cfs_base_slice,
            cfs_idle_granularity: self.cfs_idle_granularity,
            cfs_pick_clears_buddies: self.cfs_pick_clears_buddies,
            cfs_slice_cap: self.cfs_slice_cap,
            cfs_long_sleeper: self.cfs_long_sleeper,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cfs_before_6_6_and_eevdf_after() {
        for v in [(2, 6), (4, 18), (5, 12), (6, 1), (6, 5)] {
            assert_eq!(FairFeatures::for_version(v).class, FairClass::Cfs, "{v:?}");
        }
        for v in [(6, 6), (6, 12), (7, 0)] {
            assert_eq!(
                FairFeatures::for_version(v).class,
                FairClass::Eevdf,
                "{v:?}"
            );
        }
    }

    #[test]
    fn a_toggle_of_the_other_class_is_an_error_naming_it() {
        let mut f = FairFeatures::for_version((6, 12));
        let e = f
            .set("gentle_fair_sleepers", "off")
            .unwrap_err()
            .unwrap_err();
        assert!(e.to_string().contains("a toggle of CFS"), "{e}");
        assert!(e.to_string().contains("fair class is EEVDF"), "{e}");
        assert_eq!(f.set("fair_class", "cfs"), Ok(true));
        assert_eq!(f.set("gentle_fair_sleepers", "off"), Ok(true));
        assert!(!f.gentle_fair_sleepers);
        let mut g = FairFeatures::for_version((5, 12));
        assert!(g.set("run_to_parity", "off").unwrap_err().is_err());
        assert_eq!(g.set("wakeup_preemption", "off"), Ok(true));
        assert_eq!(g.set("sis_util", "on"), Ok(false));
    }

    #[test]
    fn cfs_tunables_scale_with_the_cpus_up_to_eight() {
        let f = FairFeatures::for_version((5, 12));
        let one = f.params(1, 4_000_000, 750_000);
        assert_eq!(
            (
                one.sched_latency,
                one.sched_min_granularity,
                one.sched_wakeup_granularity
            ),
            (6_000_000, 750_000, 1_000_000)
        );
        let four = f.params(4, 4_000_000, 750_000);
        assert_eq!(four.sched_latency, 18_000_000);
        for n in [8, 96] {
            let p = f.params(n, 4_000_000, 3_000_000);
            assert_eq!(
                (
                    p.sched_latency,
                    p.sched_min_granularity,
                    p.sched_wakeup_granularity
                ),
                (24_000_000, 3_000_000, 4_000_000)
            );
            assert_eq!(p.class, FairClass::Cfs);
        }
    }

    #[test]
    fn version_rules_follow_their_commits() {
        let at = FairFeatures::for_version;
        assert!(!at((5, 12)).cfs_base_slice && at((5, 13)).cfs_base_slice);
        assert!(at((5, 13)).cfs_pick_clears_buddies && !at((5, 14)).cfs_pick_clears_buddies);
        assert!(!at((5, 15)).cfs_idle_granularity && at((5, 16)).cfs_idle_granularity);
        assert!(!at((6, 2)).cfs_slice_cap && at((6, 3)).cfs_slice_cap);
        assert!(!at((6, 11)).delay_dequeue && at((6, 12)).delay_dequeue);
    }
}
