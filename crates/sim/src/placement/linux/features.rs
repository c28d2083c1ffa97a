//! Kernel profiles and feature toggles of the Linux wake-up path
//! (kernel/sched/fair.c and kernel/sched/features.h, v4.16 to the v7.0-dev
//! tree named in the `placement::linux` module doc; each toggle below names
//! the commit, and the release, whose behaviour it selects).
//!
//! A profile (`linux-5.12`, `latest`, ...) is a named set of toggles derived
//! from the kernel version; every toggle can then be overridden by name with
//! [`Features::set`]. Machines are symmetric, so the asymmetric-capacity
//! branch (`select_idle_capacity`, `asym_fits`, EAS) is not modelled and has
//! no toggle.

use crate::balance::linux::{LbFeatures, LB_FEATURES};
use crate::fair_features::{FairFeatures, WrongClass, FAIR_FEATURES};
use crate::idle_loop::{IdleLoopFeatures, IDLE_FEATURES};
use crate::ipc_features::{IpcFeatures, IPC_FEATURES};
use crate::numa::{NumaFeatures, NUMA_FEATURES};
use std::fmt;
use topology::{ConfigOption, DomainOptions};

/// A bad kernel name, feature name or feature value.
#[derive(Debug, thiserror::Error)]
pub enum FeatureError {
    /// The kernel profile does not exist.
    #[error("unknown kernel '{name}'; valid: {valid}")]
    UnknownKernel {
        /// What was asked for.
        name: String,
        /// The valid profile names.
        valid: String,
    },
    /// The feature does not exist.
    #[error("unknown feature '{name}'; valid: {valid}")]
    UnknownFeature {
        /// What was asked for.
        name: String,
        /// The valid feature names.
        valid: String,
    },
    /// A toggle of the fair-class discipline the profile does not run.
    #[error(transparent)]
    WrongClass(#[from] WrongClass),
    /// The kernel build option does not exist.
    #[error("unknown kernel config option '{name}'; valid: {valid}")]
    UnknownConfig {
        /// What was asked for.
        name: String,
        /// The valid option names.
        valid: String,
    },
    /// The value is not one the feature takes.
    #[error("bad value '{value}' for feature '{name}'; valid: {valid}")]
    BadValue {
        /// The feature.
        name: String,
        /// The rejected value.
        value: String,
        /// The values the feature takes.
        valid: String,
    },
}

/// How SIS_PROP estimates the waker's idle time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SisPropAvg {
    /// `rq->avg_idle / 512` (4.13-5.13).
    AvgIdle512,
    /// `rq->wake_avg_idle`, aged by one halving per jiffy (5.14-6.6,
    /// 94aafc3ee31d).
    WakeAvgIdle,
}

/// Where the wrapped LLC scan starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanStart {
    /// At `target` (<= 5.19).
    Target,
    /// At `target + 1` (>= 6.0, "avoid double search on same cpu").
    TargetPlus1,
}

/// How idle cores are searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleCoreScanStyle {
    /// <= 5.11: a whole-LLC `select_idle_core`, then a SIS_PROP-limited
    /// `select_idle_cpu`, then `select_idle_smt`.
    Separate,
    /// Kernels >= 5.12 (9fe1f127b913): one pass in `select_idle_cpu`, a per-core
    /// `select_idle_core` helper that remembers the first idle CPU seen.
    Merged,
}

/// Where `select_idle_smt` sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmtMode {
    /// <= 5.11: idle sibling of target, as the last resort after the scan.
    TargetLast,
    /// 5.12: removed (6cd56ef1df39).
    None,
    /// Kernels >= 5.13 (c722f35b513f): idle sibling of prev, before the scan, when
    /// there is no idle core.
    PrevBeforeScan,
}

/// How `p->recent_used_cpu` is updated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecentUpdate {
    /// 4.16-5.15 (32e839dda3ba): replaced by prev only when it was used;
    /// an affine waker records its own CPU in its recent_used_cpu.
    Swap,
    /// >= 5.16 (89aafd67f28c): set to prev on every select_idle_sibling.
    PrevAlways,
}

/// When a wake-up goes through the target CPU's wake list instead of the
/// waker locking the target's run queue (`ttwu_queue_cond`,
/// kernel/sched/core.c; sched_feat TTWU_QUEUE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TtwuQueue {
    /// NO_TTWU_QUEUE: the waker always activates the task itself.
    Off,
    /// Up to 5.14 (read at 4.19.1 and 5.10.265): only a target that does
    /// not share the waker's LLC (`!cpus_share_cache`). The 5.8 rule for a
    /// wakee still descheduling (WF_ON_CPU) is not modelled: the engine
    /// has no such window.
    CrossLlc,
    /// As read at 5.15.215 and 6.1: also a target in the waker's LLC whose
    /// run queue is empty (an idle CPU), so the idle CPU activates its own
    /// wakee.
    CrossLlcOrIdle,
}

crate::toggles! {
    /// The feature set of one kernel profile plus overrides.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Features {
        profile: String = name.to_string();
        /// The kernel version the profile models (`latest` is 7.0).
        version: (u32, u32) = v;
        overrides: Vec<String> = Vec::new();
        /// select_idle_smt(prev) does not re-probe prev itself (>= 6.0; cost
        /// only; follows the profile, not a named feature).
        smt_skip_self: bool = ge(6, 0);
        /// CONFIG_SCHED_SMT: the SMT domain level and sched_smt_present.
        pub sched_smt: bool = true;
        /// CONFIG_SCHED_MC: the MC domain level.
        pub sched_mc: bool = true;
        /// CONFIG_NUMA: the NODE and NUMA domain levels.
        pub numa: bool = true;
        /// sysctl_sched_base_slice before scaling by the CPU count (see
        /// `base_slice_ns`).
        base_slice_ns: u64 = if ge(6, 15) { 700_000 } else { 750_000 };
        /// The load balancer's toggles (the `sis_util` above also decides
        /// whether the balancer produces nr_idle_scan).
        pub lb: LbFeatures = LbFeatures::for_version(v);
        /// The idle loop's toggles (when the tick stops, cpuidle's POLL).
        pub idle: IdleLoopFeatures = IdleLoopFeatures::for_version(v);
        /// Automatic NUMA balancing's toggles (the 4.19 scan stagger, ...).
        pub numa_balancing: NumaFeatures = NumaFeatures::for_version(v);
        /// The fair class: CFS or EEVDF, and each one's toggles.
        pub fair: FairFeatures = FairFeatures::for_version(v);
        /// The pipes' and sockets' toggles (when a read wakes a writer).
        pub ipc: IpcFeatures = IpcFeatures::for_version(v);
    }
    /// (name, values, description) of every wake-up path toggle.
    table FEATURES;
    defaults(name, v, ge);
    toggles {
        /// SIS_UTIL: LLC scan budget nr_idle_scan from periodic LLC balance.
        pub sis_util: bool = ge(6, 0), "sis_util"
            => "SIS_UTIL: LLC scan budget from periodic LLC balance (70fb5ccf2ebb, 6.0)";
        /// SIS_PROP: scan budget from the waker's idle time / avg scan cost.
        pub sis_prop: bool = ge(4, 13) && !ge(6, 0), "sis_prop"
            => "SIS_PROP: scan budget = span*avg_idle/avg_scan_cost, min 4 (4.13-6.6)";
        /// SIS_PROP idle-time variant.
        pub sis_prop_avg: SisPropAvg = if ge(5, 14) { SisPropAvg::WakeAvgIdle } else { SisPropAvg::AvgIdle512 },
            "sis_prop_avg" ("avg-idle-512|wake-avg-idle": "avg-idle-512" => SisPropAvg::AvgIdle512, "wake-avg-idle" => SisPropAvg::WakeAvgIdle)
            => "SIS_PROP idle estimate: avg_idle/512 (<=5.13) or aged wake_avg_idle (5.14-6.6)";
        /// SIS_AVG_CPU: skip the scan when avg_idle/512 < avg_scan_cost
        /// (separate-style select_idle_cpu only).
        pub sis_avg_cpu: bool = false, "sis_avg_cpu"
            => "SIS_AVG_CPU: skip the scan when avg_idle/512 < avg_scan_cost (<=5.11, default off)";
        /// Wrap start of the scans.
        pub scan_start: ScanStart = if ge(6, 0) { ScanStart::TargetPlus1 } else { ScanStart::Target },
            "scan_start" ("target|target+1": "target" => ScanStart::Target, "target+1" => ScanStart::TargetPlus1)
            => "wrap start of the LLC scan (target+1 from 6.0)";
        /// <= 5.2: the SIS_PROP scan walks the whole LLC span and disallowed
        /// CPUs consume budget (60588bfa223f moved to span & cpus_ptr in 5.3).
        pub scan_counts_disallowed: bool = !ge(5, 3), "scan_counts_disallowed"
            => "disallowed CPUs consume SIS_PROP budget (<=5.2)";
        /// has_idle_cores hint and whole-core search (when SMT is present).
        pub idle_core_search: bool = true, "idle_core_search"
            => "has_idle_cores hint and whole-core search when SMT is present";
        /// Separate (<= 5.11) or merged (>= 5.12) idle-core search.
        pub idle_core_scan_style: IdleCoreScanStyle = if ge(5, 12) { IdleCoreScanStyle::Merged } else { IdleCoreScanStyle::Separate },
            "idle_core_scan_style" ("separate|merged": "separate" => IdleCoreScanStyle::Separate, "merged" => IdleCoreScanStyle::Merged)
            => "separate core/cpu/smt scans (<=5.11) or one merged pass (>=5.12)";
        /// bec2860a2bd6: stop at the first busy sibling (cost only).
        pub select_idle_core_early_break: bool = ge(5, 7), "select_idle_core_early_break"
            => "stop at the first busy sibling (bec2860a2bd6, 5.7; cost only)";
        /// c8987ae5af79: no has_idle_cores read without SMT (cost only).
        pub test_idle_cores_smt_gate: bool = ge(5, 13), "test_idle_cores_smt_gate"
            => "no has_idle_cores read without SMT (c8987ae5af79, 5.13; cost only)";
        /// 5.12 only: a failed idle-core scan clears the hint of the waker's
        /// LLC instead of the target's (fixed by 02dbb7246c5b in 5.13).
        pub clear_idle_cores_on_waker: bool = v == (5, 12), "clear_idle_cores_on_waker"
            => "5.12 bug: a failed core scan clears the waker's LLC hint (fixed 02dbb7246c5b)";
        /// Placement of select_idle_smt.
        pub select_idle_smt_mode: SmtMode = if ge(5, 13) {
                SmtMode::PrevBeforeScan
            } else if ge(5, 12) {
                SmtMode::None
            } else {
                SmtMode::TargetLast
            },
            "select_idle_smt_mode" ("target-last|none|prev-before-scan":
                "target-last" => SmtMode::TargetLast,
                "none" => SmtMode::None,
                "prev-before-scan" => SmtMode::PrevBeforeScan)
            => "select_idle_smt: sibling of target last (<=5.11), none (5.12), sibling of prev first (>=5.13)";
        /// select_idle_smt(prev) skips siblings outside sd_llc(target)
        /// (5.13-5.19 and >= 6.8).
        pub smt_llc_span_check: bool = (ge(5, 13) && !ge(6, 0)) || ge(6, 8), "smt_llc_span_check"
            => "select_idle_smt(prev) skips siblings outside the LLC (5.13-5.19, >=6.8)";
        /// available_idle_cpu rejects preempted vCPUs (>= 4.18).
        pub vcpu_preempt_check: bool = ge(4, 18), "vcpu_preempt_check"
            => "available_idle_cpu rejects preempted vCPUs (4.18)";
        /// CPUs with only SCHED_IDLE tasks count as idle (>= 5.4).
        pub sched_idle_as_idle: bool = ge(5, 4), "sched_idle_as_idle"
            => "CPUs running only SCHED_IDLE tasks count as idle (5.4)";
        /// choose_idle_cpu(c, p): a sched-idle CPU counts only for a non-idle
        /// wakee (newest trees).
        pub choose_idle_cpu: bool = ge(7, 0), "choose_idle_cpu"
            => "a sched-idle CPU counts only for a non-SCHED_IDLE wakee (newest trees)";
        /// p->recent_used_cpu candidate (>= 4.16).
        pub recent_used_cpu: bool = ge(4, 16), "recent_used_cpu"
            => "p->recent_used_cpu candidate after prev (4.16)";
        /// recent_used_cpu update policy.
        pub recent_used_cpu_update: RecentUpdate = if ge(5, 16) { RecentUpdate::PrevAlways } else { RecentUpdate::Swap },
            "recent_used_cpu_update" ("swap|prev-always": "swap" => RecentUpdate::Swap, "prev-always" => RecentUpdate::PrevAlways)
            => "recent_used_cpu update: swap on use + waker records its CPU (4.16-5.15) or prev always (5.16)";
        /// A per-CPU kthread waker stacks the wakee on prev == this CPU.
        pub kthread_stack: bool = ge(5, 11), "kthread_stack"
            => "a per-CPU kthread waker stacks the wakee on prev == this CPU (~5.11)";
        /// CONFIG_SCHED_CLUSTER: build the CLS domain level (>= 5.16); the
        /// feature `sched_cluster` and `--kernel-config SCHED_CLUSTER` both set it.
        pub sched_cluster: bool = ge(5, 16), "sched_cluster"
            => "CONFIG_SCHED_CLUSTER: CLS domain level (5.16)";
        /// 8881e1639f1f (6.7): scan target's cluster first (SD_CLUSTER on CLS).
        pub cluster_scan: bool = ge(6, 7), "cluster_scan"
            => "scan the target's cluster first, sharing the budget; SD_CLUSTER on CLS (8881e1639f1f, 6.7)";
        /// 22165f61d0c4 (6.7): idle prev/recent in another cluster are
        /// fallbacks after a failed scan.
        pub cluster_prev_fallback: bool = ge(6, 7), "cluster_prev_fallback"
            => "idle prev/recent in another cluster become fallbacks (22165f61d0c4, 6.7)";
        /// 2022 v2 patch (base 5.17-rc1): uncounted cluster pre-scan, !SMT only;
        /// prev/recent must share the cluster.
        pub cluster_scan_v2: bool = false, "cluster_scan_v2"
            => "2022 v2 patch: uncounted cluster pre-scan without SMT; prev/recent must share the cluster";
        /// v2 series: after a failed cluster pre-scan return target when target
        /// and prev share a cluster ("don't ping-pong"; dropped in v3).
        pub cluster_v2_pingpong: bool = false, "cluster_v2_pingpong"
            => "v2 series: after a failed cluster pre-scan keep target if it shares prev's cluster";
        /// WA_IDLE.
        pub wa_idle: bool = true, "wa_idle" => "WA_IDLE: wake_affine_idle";
        /// WA_WEIGHT.
        pub wa_weight: bool = true, "wa_weight" => "WA_WEIGHT: wake_affine_weight";
        /// WA_BIAS.
        pub wa_bias: bool = true, "wa_bias" => "WA_BIAS: bias towards prev by (imbalance_pct-100)/2";
        /// wake_affine_idle returns an idle prev (~5.11).
        pub wake_affine_prev_idle: bool = ge(5, 11), "wake_affine_prev_idle"
            => "wake_affine_idle returns an idle prev (~5.11)";
        /// wake_wide flip heuristic (off: always want_affine).
        pub wake_wide: bool = true, "wake_wide" => "wake_wide flip heuristic (off: always want affine)";
        /// Honour WF_SYNC in wake_affine.
        pub sync_wakeups: bool = true, "sync_wakeups" => "honour WF_SYNC in wake_affine";
        /// sd_init default imbalance_pct: 117 (>= 5.10) or 125.
        pub imbalance_pct_default: u32 = if ge(5, 10) { 117 } else { 125 },
            "imbalance_pct_default" ("117|125": "117" => 117, "125" => 125)
            => "sd_init default imbalance_pct (125 before 5.10)";
        /// TTWU_QUEUE and ttwu_queue_cond: which wake-ups go through the
        /// target's wake list (the lines they move, `kernel::objects`).
        pub ttwu_queue: TtwuQueue = if ge(5, 15) { TtwuQueue::CrossLlcOrIdle } else { TtwuQueue::CrossLlc },
            "ttwu_queue" ("off|cross-llc|cross-llc-or-idle": "off" => TtwuQueue::Off, "cross-llc" => TtwuQueue::CrossLlc, "cross-llc-or-idle" => TtwuQueue::CrossLlcOrIdle)
            => "TTWU_QUEUE: a wake-up onto another LLC (and, as read at 5.15.215 and 6.1, onto an idle CPU of the same LLC) is queued on the target's wake list instead of the waker locking its run queue";
    }
}

/// Named profiles: (name, description). Any `linux-X.Y` from 4.16 to 6.14
/// is also accepted and derived the same way.
static KERNELS: &[(&str, &str)] = &[
    ("linux-2.6.38", "last kernel with the sd_idle load-balance rule; the rest of the wake-up path as the oldest profile (4.16)"),
    ("linux-4.17", "last kernel before available_idle_cpu: idle_cpu, SIS_PROP avg_idle/512, separate core scan"),
    ("linux-4.18", "available_idle_cpu with the vCPU-preempted check (943d355d7fee, 247f2f6f3c70)"),
    ("linux-5.4", "sched_idle CPUs count as idle; last kernel with the legacy load balancer"),
    ("linux-5.5", "load_balance() rework: group and migration types (0b0695f2b34a)"),
    ("linux-5.6", "last kernel before the select_idle_core early break"),
    ("linux-5.7", "select_idle_core stops at the first busy sibling (bec2860a2bd6)"),
    ("linux-5.11", "last separate-scan kernel; kthread stacking, wake_affine prev-idle, imbalance_pct 117"),
    ("linux-5.12", "merged core+cpu scan (9fe1f127b913), no select_idle_smt, has_idle_cores read without SMT gate"),
    ("linux-5.13", "test_idle_cores SMT gate (c8987ae5af79), select_idle_smt(prev) before the scan"),
    ("linux-5.14", "SIS_PROP with aged wake_avg_idle (94aafc3ee31d)"),
    ("linux-5.16", "CLS domain level; recent_used_cpu set to prev every time"),
    ("linux-5.17-rc1", "base of the 2022 cluster-scan v2 patch (set cluster_scan_v2=on for the patch)"),
    ("linux-5.19", "last SIS_PROP-only kernel"),
    ("linux-6.0", "SIS_UTIL on, SIS_PROP off, scan starts at target+1"),
    ("linux-6.6", "EEVDF; SMT-aware load balancing; last kernel without the cluster scan"),
    ("linux-6.7", "cluster scan first with prev/recent fallback; SIS_PROP removed"),
    ("linux-6.8", "select_idle_smt(prev) checks the LLC span again (8aeaffef8c6e)"),
    ("latest", "~7.0-dev tree of the spec (>= 6.15): choose_idle_cpu, base slice 2.8 ms"),
];

/// Kernel build options that change the domains, with every profile's
/// default (`--kernel-config NAME=y|n` overrides them).
static KERNEL_CONFIG: &[(ConfigOption, &str)] = &[
    (ConfigOption::SchedSmt, "y"),
    (ConfigOption::SchedCluster, "y from 5.16"),
    (ConfigOption::SchedMc, "y"),
    (ConfigOption::Numa, "y"),
];

fn parse_version(name: &str) -> Option<(u32, u32)> {
    let v = name.strip_prefix("linux-")?;
    let v = v.strip_suffix("-rc1").unwrap_or(v);
    let (a, b) = v.split_once('.')?;
    let ver = (a.parse().ok()?, b.parse().ok()?);
    ((4, 16)..=(6, 14)).contains(&ver).then_some(ver)
}

fn bad(name: &str, value: &str, valid: &str) -> FeatureError {
    FeatureError::BadValue {
        name: name.into(),
        value: value.into(),
        valid: valid.replace('|', ", "),
    }
}

impl Features {
    /// The profile of kernel `name` (see [`Features::kernels`]; any
    /// `linux-X.Y` from 4.16 to 6.14 is accepted too).
    pub fn kernel(name: &str) -> Result<Features, FeatureError> {
        if name == "linux-2.6.38" {
            // The wake-up path is not modelled before 4.16: take the oldest
            // profile's, with 2.6.38's load balancer.
            let mut f = Self::for_version(name, (4, 16));
            f.lb = LbFeatures::for_version((2, 6));
            f.idle = IdleLoopFeatures::for_version((2, 6));
            return Ok(f);
        }
        let ver = if name == "latest" {
            Some((7, 0))
        } else {
            parse_version(name)
        };
        match ver {
            Some(v) => Ok(Self::for_version(name, v)),
            None => Err(FeatureError::UnknownKernel {
                name: name.into(),
                valid: KERNELS.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
                    + " (or any linux-X.Y from 4.16 to 6.14)",
            }),
        }
    }

    /// Derive every toggle from the version (the release that merged the
    /// commit named on each toggle; `(7, 0)` is `latest`).
    fn for_version(name: &str, v: (u32, u32)) -> Features {
        Features::declared(name, v)
    }

    /// Override one feature: `on`/`off` for booleans, the named values for
    /// the others (see [`Features::features`]).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), FeatureError> {
        let fair = match self.fair.set(name, value) {
            Ok(done) => Ok(done),
            Err(Ok(valid)) => Err(valid),
            Err(Err(e)) => return Err(FeatureError::WrongClass(e)),
        };
        match fair.and_then(|done| {
            if done {
                Ok(true)
            } else {
                self.set_declared(name, value)
            }
        }) {
            Ok(true) => {}
            Err(valid) => return Err(bad(name, value, valid)),
            Ok(false) => match self.lb.set(name, value).and_then(|done| {
                if done {
                    Ok(true)
                } else {
                    match self.idle.set(name, value) {
                        Ok(false) => match self.numa_balancing.set(name, value) {
                            Ok(false) => self.ipc.set(name, value),
                            r => r,
                        },
                        r => r,
                    }
                }
            }) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(FeatureError::UnknownFeature {
                        name: name.into(),
                        valid: Self::features()
                            .iter()
                            .map(|f| f.0)
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
                }
                Err(valid) => return Err(bad(name, value, valid)),
            },
        }
        let entry = format!("{name}={value}");
        self.overrides.retain(|o| o.split('=').next() != Some(name));
        if name == "fair_class" {
            // first: the toggles after it may be its own
            self.overrides.insert(0, entry);
            self.switch_fair_class();
        } else {
            self.overrides.push(entry);
        }
        Ok(())
    }

    /// After `fair_class` changed: the other discipline's overrides no
    /// longer apply; its toggles go back to the version's defaults.
    fn switch_fair_class(&mut self) {
        let class = self.fair.class;
        self.overrides.retain(|o| {
            let n = o.split('=').next().unwrap_or("");
            crate::fair_features::toggle_class(n).is_none_or(|c| c == class)
        });
        let mut fair = FairFeatures::for_version(self.version);
        fair.class = class;
        for o in &self.overrides {
            if let Some((n, v)) = o.split_once('=') {
                if n != "fair_class" {
                    // the profile's own toggles (Ok(false)) are skipped
                    let _ = fair.set(n, v);
                }
            }
        }
        self.fair = fair;
    }

    /// Override a kernel build option: `NAME=y|n` with NAME one of
    /// SCHED_SMT, SCHED_CLUSTER, SCHED_MC, NUMA (`CONFIG_` prefix
    /// optional), e.g. Debian's arm64 kernels are `SCHED_CLUSTER=n`.
    pub fn set_config(&mut self, name: &str, value: &str) -> Result<(), FeatureError> {
        let o = ConfigOption::from_name(name).ok_or_else(|| FeatureError::UnknownConfig {
            name: name.into(),
            valid: ConfigOption::valid_names(),
        })?;
        let on = ConfigOption::parse_value(value).ok_or_else(|| bad(name, value, "y|n"))?;
        match o {
            ConfigOption::SchedSmt => self.sched_smt = on,
            ConfigOption::SchedCluster => self.sched_cluster = on,
            ConfigOption::SchedMc => self.sched_mc = on,
            ConfigOption::Numa => self.numa = on,
        }
        self.overrides
            .retain(|x| x.split('=').next() != Some(o.name()));
        self.overrides.push(format!("{}={value}", o.name()));
        Ok(())
    }

    /// The kernel build options: (name, every profile's default,
    /// description).
    pub fn kernel_config() -> Vec<(&'static str, &'static str, &'static str)> {
        KERNEL_CONFIG
            .iter()
            .map(|&(o, default)| (o.name(), default, o.description()))
            .collect()
    }

    /// The named profiles: (name, one-line description).
    pub fn kernels() -> &'static [(&'static str, &'static str)] {
        KERNELS
    }

    /// Every feature: (name, values separated by `|`, description).
    pub fn features() -> Vec<(&'static str, &'static str, &'static str)> {
        FEATURES
            .iter()
            .chain(FAIR_FEATURES)
            .chain(LB_FEATURES)
            .chain(IDLE_FEATURES)
            .chain(NUMA_FEATURES)
            .chain(IPC_FEATURES)
            .copied()
            .collect()
    }

    /// The sched-domain build of this kernel: the version's rules and names
    /// (`DomainOptions::linux`), its build options (SCHED_SMT, SCHED_CLUSTER,
    /// SCHED_MC, NUMA); SD_CLUSTER on CLS (>= 6.7) when a cluster-aware
    /// wakeup feature is on, since b95303e0aeaf came with that series;
    /// imbalance_pct 125 before 5.10.
    pub fn domain_options(&self) -> DomainOptions {
        let mut o = DomainOptions::linux(self.version.0, self.version.1);
        o.sched_smt = self.sched_smt;
        o.cluster_level = self.sched_cluster;
        o.sched_mc = self.sched_mc;
        o.numa = self.numa;
        o.cluster_flag = self.sched_cluster && (self.cluster_scan || self.cluster_prev_fallback);
        o.imbalance_pct = self.imbalance_pct_default;
        o
    }

    /// EEVDF base slice on a machine of `online_cpus` CPUs: 0.75 ms, 0.70 ms
    /// from 6.15 (commit 2ae891b82695; only `latest`, which models a >= 6.15
    /// tree), times 1 + log2 of the online CPUs counted up to 8
    /// (kernel/sched/fair.c `get_update_sysctl_factor`, the default
    /// SCHED_TUNABLESCALING_LOG): 3 ms and 2.8 ms on 8 CPUs or more.
    pub fn base_slice_ns(&self, online_cpus: usize) -> u64 {
        let factor = 1 + online_cpus.clamp(1, 8).ilog2() as u64;
        self.base_slice_ns * factor
    }

    /// Whether available_idle_cpu checks vcpu_is_preempted (for WakeEnv).
    pub fn vcpu_preempt_check(&self) -> bool {
        self.vcpu_preempt_check
    }

    /// Whether sched-idle CPUs count as idle (for WakeEnv).
    pub fn sched_idle_as_idle(&self) -> bool {
        self.sched_idle_as_idle
    }

    /// select_idle_smt(prev) skips prev itself (>= 6.0).
    pub(super) fn smt_skip_self(&self) -> bool {
        self.smt_skip_self
    }

    /// The kernel version the profile models (`latest` is 7.0).
    pub fn version(&self) -> (u32, u32) {
        self.version
    }

    /// Profile name plus overrides in the order given, e.g.
    /// `linux-5.12+test_idle_cores_smt_gate=on`.
    pub fn name(&self) -> String {
        let mut s = self.profile.clone();
        for o in &self.overrides {
            s.push('+');
            s.push_str(o);
        }
        s
    }
}

impl std::str::FromStr for Features {
    type Err = FeatureError;

    /// Parse what [`Features::name`] prints: a profile, then `+NAME=VALUE`
    /// overrides in order (feature toggles, or kernel build options such as
    /// `SCHED_CLUSTER=n`), e.g. `linux-5.12+test_idle_cores_smt_gate=on`.
    fn from_str(s: &str) -> Result<Features, FeatureError> {
        let mut parts = s.split('+');
        let mut f = Features::kernel(parts.next().unwrap_or(""))?;
        // a value may contain '+' (scan_start=target+1): a piece without
        // '=' continues the previous override
        let mut overrides: Vec<String> = Vec::new();
        for p in parts {
            match overrides.last_mut() {
                Some(last) if !p.contains('=') => {
                    last.push('+');
                    last.push_str(p);
                }
                _ => overrides.push(p.to_string()),
            }
        }
        for o in &overrides {
            let (name, value) = o.split_once('=').ok_or_else(|| bad(o, "", "NAME=VALUE"))?;
            if ConfigOption::from_name(name).is_some() {
                f.set_config(name, value)?;
            } else {
                f.set(name, value)?;
            }
        }
        Ok(f)
    }
}

impl fmt::Display for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod kernel_config_tests {
    use super::*;

    #[test]
    fn kernel_config_overrides_reach_the_domains() {
        let mut f = Features::kernel("linux-6.1").unwrap();
        let o = f.domain_options();
        assert!(o.sched_smt && o.cluster_level && o.sched_mc && o.numa);
        assert_eq!(
            (o.pkg_name, o.llc_flag_name),
            ("DIE", "SHARE_PKG_RESOURCES")
        );
        f.set_config("SCHED_CLUSTER", "n").unwrap();
        f.set_config("CONFIG_NUMA", "n").unwrap();
        assert!(!f.sched_cluster);
        let o = f.domain_options();
        assert!(!o.cluster_level && !o.numa && o.sched_smt);
        assert_eq!(f.name(), "linux-6.1+SCHED_CLUSTER=n+NUMA=n");
        assert!(
            !Features::kernel("linux-5.15")
                .unwrap()
                .domain_options()
                .cluster_level
        );
        assert_eq!(
            Features::kernel("latest").unwrap().domain_options(),
            DomainOptions::default()
        );
        let e = f.set_config("SCHED_FOO", "y").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown kernel config option 'SCHED_FOO'; valid: SCHED_SMT, SCHED_CLUSTER, SCHED_MC, NUMA"
        );
        let e = f.set_config("SCHED_MC", "m").unwrap_err().to_string();
        assert_eq!(e, "bad value 'm' for feature 'SCHED_MC'; valid: y, n");
        assert_eq!(Features::kernel_config().len(), 4);
    }
}

#[cfg(test)]
mod name_tests {
    use super::Features;
    use proptest::prelude::*;

    /// (feature, a value it takes) pairs, from the listing.
    fn settings() -> Vec<(&'static str, &'static str)> {
        Features::features()
            .into_iter()
            .flat_map(|(name, values, _)| values.split('|').map(move |v| (name, v)))
            .collect()
    }

    proptest! {
        /// The printed name of any profile with any overrides parses back to
        /// the same features.
        #[test]
        fn name_parses_back(
            k in 0..Features::kernels().len(),
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..5),
            config in proptest::option::of((0usize..4, any::<bool>())),
        ) {
            let mut f = Features::kernel(Features::kernels()[k].0).unwrap();
            let all = settings();
            for p in picks {
                let (name, value) = all[p.index(all.len())];
                match f.set(name, value) {
                    // a toggle of the discipline the profile does not run
                    Err(super::FeatureError::WrongClass(_)) => {}
                    r => r.unwrap(),
                }
            }
            if let Some((i, on)) = config {
                let name = Features::kernel_config()[i].0;
                f.set_config(name, if on { "y" } else { "n" }).unwrap();
            }
            let back: Features = f.name().parse().unwrap();
            prop_assert_eq!(back, f);
        }
    }

    #[test]
    fn bad_names_are_errors() {
        assert!("linux-9.9".parse::<Features>().is_err());
        assert!("latest+no_such_feature=on".parse::<Features>().is_err());
        assert!("latest+sis_util".parse::<Features>().is_err());
        assert!("latest+sis_util=maybe".parse::<Features>().is_err());
        let f: Features = "linux-5.12+test_idle_cores_smt_gate=on".parse().unwrap();
        assert!(f.test_idle_cores_smt_gate);
        assert_eq!(f.name(), "linux-5.12+test_idle_cores_smt_gate=on");
    }
}
