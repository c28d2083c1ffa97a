//! Which cpuidle driver and governor a machine runs, and so what its idle
//! loop does with the tick (kernel/sched/idle.c `cpuidle_idle_call()`,
//! kernel/time/tick-sched.c, drivers/cpuidle/governors/).
//!
//! - **No driver** (`none`: KVM x86 guests without haltpoll, arm64 servers
//!   whose firmware gives no usable low-power-idle states): `do_idle()`
//!   calls `tick_nohz_idle_stop_tick()` on every idle entry and then
//!   `default_idle_call()` (HLT / WFI). The tick stops whenever the next
//!   timer-wheel timer is more than a tick away (sleeps are hrtimers and do
//!   not count, see the engine's `timers`), so every idle period enters and
//!   leaves the nohz set, writing the global nohz counters and the LLC's
//!   `nr_busy_cpus`.
//! - **A driver with the menu or teo governor**: the governor predicts the
//!   idle time and votes to keep the tick when the prediction is under one
//!   tick period (or the chosen state polls); only a stop vote stops it
//!   (since 4.17, commit 554c8aa8ecad "sched: idle: Select idle state before
//!   stopping the tick").
//! - **haltpoll** (KVM guests with the haltpoll driver and governor, 5.4+):
//!   each idle entry first polls with the tick kept, up to an adaptive poll
//!   limit (grown by 2x from 50 us up to 200 us while halts end inside the
//!   window, shrunk by 2x otherwise; drivers/cpuidle/governors/haltpoll.c
//!   defaults), then halts with the tick stopped.
//! - **intel_idle, and acpi_idle on x86**: the driver registers cpuidle's
//!   POLL state as state 0 before its C-states ([`Cpuidle::registers_poll`]);
//!   the governor picks it for very short predicted idle, keeps the tick
//!   while polling, and a CPU polling is woken without an IPI. The poll is
//!   bounded by a time limit, after which the idle loop goes round and the
//!   governor chooses again ([`poll_limit_ns`]).
//!
//! Before 4.17 the idle loop stopped the tick at idle entry, before any
//! governor ran, and decremented the LLC's `nr_busy_cpus` on every idle
//! entry (`set_cpu_sd_state_idle()` from `tick_nohz_idle_enter()`, kernel
//! 4.16): the profile's `idle_tick_stop` toggle ([`crate::idle_loop`]).
//!
//! The governors' choice is [`select`]: menu and teo in our own words,
//! simplified to one prediction ([`predict`]): menu's typical interval of
//! the last 8 idle periods (with its outlier trimming), bounded by the
//! average of those 8 (which stands for menu's next-timer estimate scaled
//! by its correction factor: that factor is a running average of measured
//! idle over the time to the next timer, and the simulator does not know
//! the kernel's own timers) and by the time to the CPU's next modelled
//! timer. teo's hit/intercept bins are not modelled; teo takes the same
//! prediction.

use crate::costs::IdleState;
use crate::idle_loop::{MenuPoll, PollLimit};
use crate::Nanos;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// The cpuidle driver (`/sys/devices/system/cpu/cpuidle/current_driver`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Driver {
    /// No driver: HLT / WFI from `default_idle_call()`, the tick always offered
    /// for stopping.
    None,
    /// intel_idle (Intel bare metal): POLL plus the model's C-state table.
    IntelIdle,
    /// acpi_idle from _CST (AMD and others) or _LPI (arm64 ACPI).
    AcpiIdle,
    /// cpuidle-haltpoll (KVM guests): POLL plus HLT.
    Haltpoll,
    /// pseries_idle (PowerVM LPARs): snooze plus CEDE.
    Pseries,
    /// powernv_idle (POWER bare metal): snooze plus stop states.
    Powernv,
}

/// The cpuidle governor (`current_governor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Governor {
    /// menu (drivers/cpuidle/governors/menu.c).
    Menu,
    /// teo, timer-events oriented (5.1+).
    Teo,
    /// haltpoll (with the haltpoll driver).
    Haltpoll,
}

/// A machine's idle configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Cpuidle {
    /// The driver.
    pub driver: Driver,
    /// The governor (meaningless without a driver).
    pub governor: Governor,
}

impl Cpuidle {
    /// No driver: HLT/WFI only.
    pub const NONE: Cpuidle = Cpuidle {
        driver: Driver::None,
        governor: Governor::Menu,
    };

    /// The idle configuration of a machine preset, with where it comes from.
    pub fn for_machine(machine: &str) -> (Cpuidle, &'static str) {
        let with = |driver, governor| Cpuidle { driver, governor };
        match machine {
            // No public cpuidle dump of a TaiShan v110 server was found; an
            // arm64 ACPI server registers acpi_idle only when its _LPI table
            // has a state beyond WFI with a valid PSCI power state
            // (drivers/acpi/processor_idle.c, acpi_processor_ffh_lpi_probe;
            // eb087f305919, 5.18), otherwise no driver: WFI only, the
            // conservative choice.
            "kunpeng920" | "kunpeng920-1s" | "kunpeng920-node" => (
                Cpuidle::NONE,
                "no public cpuidle dump for Kunpeng 920; arm64 ACPI without LPI states has no driver (WFI)",
            ),
            "power9-smt8" => (
                with(Driver::Pseries, Governor::Menu),
                "PowerVM LPAR: pseries_idle (snooze + CEDE, drivers/cpuidle/cpuidle-pseries.c), menu",
            ),
            "xeon-12c24t" | "jacobsville" | "sapphire-rapids" | "broadwell-ep" => (
                with(Driver::IntelIdle, Governor::Menu),
                "Intel bare metal: intel_idle (drivers/idle/intel_idle.c), menu (the highest-rated governor, 20)",
            ),
            "epyc-zen3" | "epyc-zen3-2s" => (
                with(Driver::AcpiIdle, Governor::Menu),
                "AMD bare metal: acpi_idle from _CST (drivers/acpi/processor_idle.c), menu",
            ),
            "altra" => (
                with(Driver::AcpiIdle, Governor::Menu),
                "Ampere Altra firmware publishes _LPI (an LPI switch beside CPPC in its BIOS); acpi_idle, menu",
            ),
            "kvm-8vcpu" => (
                Cpuidle::NONE,
                "KVM x86 guest without haltpoll: current_driver none (QEMU gives no _CST), HLT",
            ),
            // this development VM: /sys/devices/system/cpu/cpuidle reads
            // current_driver haltpoll, current_governor haltpoll
            "host" => (
                with(Driver::Haltpoll, Governor::Haltpoll),
                "this host's /sys/devices/system/cpu/cpuidle (haltpoll, haltpoll) when it was recorded",
            ),
            _ => (
                Cpuidle::NONE,
                "unknown machine: no driver (the tick is offered for stopping at every idle entry)",
            ),
        }
    }
}

impl fmt::Display for Cpuidle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = match self.driver {
            Driver::None => return write!(f, "none"),
            Driver::IntelIdle => "intel_idle",
            Driver::AcpiIdle => "acpi_idle",
            Driver::Haltpoll => "haltpoll",
            Driver::Pseries => "pseries_idle",
            Driver::Powernv => "powernv_idle",
        };
        let g = match self.governor {
            Governor::Menu => "menu",
            Governor::Teo => "teo",
            Governor::Haltpoll => "haltpoll",
        };
        write!(f, "{d}:{g}")
    }
}

/// `--cpuidle` values: `none`, or `DRIVER[:GOVERNOR]` (governor default:
/// menu, haltpoll for the haltpoll driver).
impl FromStr for Cpuidle {
    type Err = String;
    fn from_str(s: &str) -> Result<Cpuidle, String> {
        let (d, g) = match s.split_once(':') {
            Some((d, g)) => (d, Some(g)),
            None => (s, None),
        };
        let driver = match d {
            "none" => Driver::None,
            "intel_idle" => Driver::IntelIdle,
            "acpi_idle" => Driver::AcpiIdle,
            "haltpoll" => Driver::Haltpoll,
            "pseries_idle" => Driver::Pseries,
            "powernv_idle" => Driver::Powernv,
            other => {
                return Err(format!(
                    "unknown cpuidle driver {other:?} (none, intel_idle, acpi_idle, haltpoll, pseries_idle, powernv_idle)"
                ))
            }
        };
        let governor = match (g, driver) {
            (None, Driver::Haltpoll) => Governor::Haltpoll,
            (None, _) | (Some("menu"), _) => Governor::Menu,
            (Some("teo"), _) => Governor::Teo,
            (Some("haltpoll"), Driver::Haltpoll) => Governor::Haltpoll,
            (Some("haltpoll"), _) => {
                return Err("the haltpoll governor works with the haltpoll driver only".into())
            }
            (Some(other), _) => {
                return Err(format!(
                    "unknown cpuidle governor {other:?} (menu, teo, haltpoll)"
                ))
            }
        };
        if driver == Driver::None && g.is_some() {
            return Err("none takes no governor (there is no driver to govern)".into());
        }
        Ok(Cpuidle { driver, governor })
    }
}

/// cpuidle's POLL state (drivers/cpuidle/poll_state.c
/// `cpuidle_poll_state_init()`: "POLL", exit latency 0, target residency 0,
/// CPUIDLE_FLAG_POLLING).
pub const POLL: IdleState = IdleState {
    name: "POLL",
    exit_latency_ns: 0,
    target_residency_ns: 0,
};

/// Whether `machine` is an x86 machine (ARCH_HAS_CPU_RELAX, which the POLL
/// state needs, is selected by x86 only): the Intel and AMD presets, the KVM
/// guest and, for `host`, the architecture this program runs on. Imported
/// machines (sysfs, hwloc) are taken as x86 (acpi_idle's _CST path).
fn is_x86(machine: &str) -> bool {
    match machine {
        "kunpeng920" | "kunpeng920-1s" | "kunpeng920-node" | "altra" | "power9-smt8" => false,
        "host" => cfg!(any(target_arch = "x86", target_arch = "x86_64")),
        _ => true,
    }
}

impl Cpuidle {
    /// Whether the driver registers cpuidle's POLL state as its state 0 on
    /// `machine`: intel_idle always (`intel_idle_cpuidle_driver_init()`
    /// calls `cpuidle_poll_state_init()`; the driver is x86-only), acpi_idle
    /// when its C-states come from _CST on x86
    /// (`acpi_processor_setup_cstates()`: POLL first when
    /// CONFIG_ARCH_HAS_CPU_RELAX), not from _LPI on arm64
    /// (`acpi_processor_setup_lpi_states()`). haltpoll's poll is modelled on
    /// its own (its governor, `poll_limit_ns`); pseries and powernv list
    /// their snooze state in the machine's idle states.
    pub fn registers_poll(&self, machine: &str) -> bool {
        match self.driver {
            Driver::IntelIdle => true,
            Driver::AcpiIdle => is_x86(machine),
            Driver::None | Driver::Haltpoll | Driver::Pseries | Driver::Powernv => false,
        }
    }

    /// The driver's state table on `machine`: the machine's idle states, with
    /// POLL first when the driver registers it and the table does not start
    /// with a polling state already (a profile from `schedlab calibrate`
    /// lists the host's sysfs states, POLL included). Returns whether POLL
    /// was added.
    pub fn driver_states(&self, machine: &str, states: &mut Vec<IdleState>) -> bool {
        let add = self.registers_poll(machine) && !states.first().is_some_and(|s| s.polls());
        if add {
            states.insert(0, POLL);
        }
        add
    }
}

/// How long POLL spins before the idle loop goes round (`poll_idle()` with
/// `cpuidle_poll_time()`), for the driver table `states` (POLL first) and a
/// tick of `tick_ns`; None: no limit.
pub fn poll_limit_ns(rule: PollLimit, states: &[IdleState], tick_ns: Nanos) -> Option<Nanos> {
    // CPUIDLE_POLL_MIN, CPUIDLE_POLL_MAX
    const MIN: Nanos = 10_000;
    let max = tick_ns / 16;
    let rest = states.get(1..).unwrap_or(&[]);
    match rule {
        PollLimit::None => None,
        PollLimit::TickDiv16 => Some(max),
        PollLimit::FirstState => Some(rest.first().map_or(tick_ns, |s| s.target_residency_ns)),
        PollLimit::TenUsState => Some(
            rest.iter()
                .map(|s| s.target_residency_ns)
                .find(|&r| r >= MIN)
                .map_or(max, |r| r.min(max)),
        ),
    }
}

/// menu's repeating-interval detector (`get_typical_interval()`,
/// drivers/cpuidle/governors/menu.c): the average of the recorded idle
/// periods when their spread is small (standard deviation at most 20 us,
/// or the average more than 6 standard deviations with at least 6 of the 8
/// used); otherwise the largest ones are dropped and it tries again, and
/// once only 6 or fewer would be left it gives up (None: no pattern).
pub fn typical_interval(hist: &[Nanos]) -> Option<Nanos> {
    // 20 us squared, in ns^2
    const SMALL_VARIANCE: u128 = 400_000_000;
    let n = hist.len();
    let mut thresh = Nanos::MAX;
    loop {
        let (mut sum, mut count, mut max) = (0u128, 0usize, 0);
        for &v in hist.iter().filter(|&&v| v <= thresh) {
            sum += v as u128;
            count += 1;
            max = max.max(v);
        }
        if count == 0 {
            return None;
        }
        let avg = sum / count as u128;
        let var = hist
            .iter()
            .filter(|&&v| v <= thresh)
            .map(|&v| (v as i128 - avg as i128).unsigned_abs().pow(2))
            .sum::<u128>()
            / count as u128;
        if (avg * avg > 36 * var && count * 4 >= n * 3) || var <= SMALL_VARIANCE {
            return Some(avg as Nanos);
        }
        if count * 4 <= n * 3 {
            return None;
        }
        thresh = max - 1;
    }
}

/// The governors' prediction of the coming idle period from `hist`, the
/// last idle periods of the CPU (see the module doc): the typical interval
/// when there is one, at most the average.
pub fn predict(hist: &[Nanos]) -> Nanos {
    let avg = hist.iter().sum::<Nanos>() / hist.len().max(1) as Nanos;
    typical_interval(hist).map_or(avg, |t| t.min(avg))
}

/// What the governor sees at one pass of the idle loop.
#[derive(Clone, Copy, Debug)]
pub struct Outlook {
    /// The prediction from the CPU's recent idle periods ([`predict`]).
    pub predicted_ns: Nanos,
    /// Time to the CPU's next timer (`tick_nohz_get_sleep_length()`;
    /// `Nanos::MAX`: none).
    pub sleep_ns: Nanos,
    /// Time to the CPU's next tick (its `delta_next`).
    pub to_tick_ns: Nanos,
    /// The tick period.
    pub tick_ns: Nanos,
}

/// The governor's answer: a state of the driver table and its vote on the
/// tick (`stop_tick` of `cpuidle_select()`, 4.17+; before, the tick was
/// already stopped and the vote is ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Index into the driver's states.
    pub state: usize,
    /// The governor lets the tick stop.
    pub stop_tick: bool,
}

/// menu_select / teo_select, simplified (see the module doc), over the
/// driver's `states` (shallowest first, POLL first if registered), with the
/// tick running: the engine asks at idle entry and after a timed-out POLL,
/// which keeps the tick (the governors' rules for a tick already stopped
/// are not needed; up to 4.16 the governors did not look at the tick).
///
/// menu (drivers/cpuidle/governors/menu.c): one state only: stop the
/// tick; POLL first: per `menu_poll`, POLL for a timer due very soon (and,
/// from 4.20, for a prediction under state 1's exit latency); otherwise the
/// deepest state whose target residency fits the prediction; keep the tick
/// when the state polls or the prediction is under a tick, and then no
/// state deeper than the time to the tick (296bb1e51a48 "cpuidle: menu:
/// Refine idle state selection for running tick", 4.17).
///
/// teo (drivers/cpuidle/governors/teo.c, the newest form): one state only:
/// keep the tick; otherwise the deepest state that fits the prediction
/// (for short idles that is state 0, POLL where registered, as teo's
/// intercepts would pick it), the same tick vote. The haltpoll governor
/// works only with its own driver (modelled in the engine); with another
/// driver it is taken as menu.
pub fn select(
    governor: Governor,
    menu_poll: MenuPoll,
    states: &[IdleState],
    o: &Outlook,
) -> Selection {
    let n = states.len();
    if n <= 1 {
        let polls = states.first().is_some_and(|s| s.polls());
        let stop_tick = match governor {
            Governor::Teo => false,
            Governor::Menu | Governor::Haltpoll => !polls,
        };
        return Selection {
            state: 0,
            stop_tick,
        };
    }
    let res = |i: usize| states[i].target_residency_ns;
    let mut pred = o.predicted_ns.min(o.sleep_ns);
    let mut idx = 0;
    if governor != Governor::Teo {
        let poll0 = states[0].polls();
        match menu_poll {
            MenuPoll::TimerSoon if poll0 => {
                // first_idx: POLL only for a timer within max(20 us, res 1)
                if o.sleep_ns <= res(1).max(20_000) {
                    return Selection {
                        state: 0,
                        stop_tick: false,
                    };
                }
                idx = 1;
            }
            MenuPoll::TimerSoon => {}
            MenuPoll::Prediction => {
                // state 0 is used whatever else happens: return it, and
                // keep the tick if it polls
                if o.sleep_ns < res(1) {
                    return Selection {
                        state: 0,
                        stop_tick: !poll0,
                    };
                }
            }
        }
        for i in idx + 1..n {
            if res(i) <= pred {
                idx = i;
                continue;
            }
            // a real state rather than polling, unless a timer comes
            // before its residency or its exit outlasts the prediction
            if menu_poll == MenuPoll::Prediction
                && states[idx].polls()
                && res(i) <= o.sleep_ns
                && states[i].exit_latency_ns <= pred
            {
                pred = res(i);
                idx = i;
                break;
            }
            if pred >= o.tick_ns {
                // the state so far is shallow: keep the tick and let the
                // governor run again at it
                pred = res(idx);
            }
            break;
        }
    } else {
        for i in 1..n {
            if res(i) <= pred {
                idx = i;
            }
        }
    }
    let keep = states[idx].polls() || pred < o.tick_ns;
    if keep && idx > 0 && res(idx) > o.to_tick_ns {
        // the tick stays: no state whose residency outlasts it
        while idx > 0 {
            idx -= 1;
            if res(idx) <= o.to_tick_ns {
                break;
            }
        }
    }
    Selection {
        state: idx,
        stop_tick: !keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for s in [
            "none",
            "intel_idle:menu",
            "acpi_idle:teo",
            "haltpoll:haltpoll",
            "pseries_idle:menu",
        ] {
            assert_eq!(s.parse::<Cpuidle>().unwrap().to_string(), s);
        }
        assert_eq!(
            "haltpoll".parse::<Cpuidle>().unwrap().governor,
            Governor::Haltpoll
        );
        assert!("none:menu".parse::<Cpuidle>().is_err());
        assert!("intel_idle:haltpoll".parse::<Cpuidle>().is_err());
        assert!("wfi".parse::<Cpuidle>().is_err());
    }

    const US: Nanos = 1_000;
    const TICK: Nanos = 4_000_000;

    fn st(name: &'static str, exit_us: Nanos, res_us: Nanos) -> IdleState {
        IdleState {
            name,
            exit_latency_ns: exit_us * US,
            target_residency_ns: res_us * US,
        }
    }

    /// The xeon-12c24t table as intel_idle registers it: POLL, then
    /// nehalem_cstates.
    fn xeon() -> Vec<IdleState> {
        vec![
            POLL,
            st("C1", 3, 6),
            st("C1E", 10, 20),
            st("C3", 20, 80),
            st("C6", 200, 800),
        ]
    }

    fn look(predicted_ns: Nanos, sleep_ns: Nanos) -> Outlook {
        Outlook {
            predicted_ns,
            sleep_ns,
            to_tick_ns: TICK,
            tick_ns: TICK,
        }
    }

    fn menu(states: &[IdleState], o: &Outlook) -> Selection {
        select(Governor::Menu, MenuPoll::Prediction, states, o)
    }

    #[test]
    fn poll_is_registered_per_driver_and_architecture() {
        let c = |s: &str| s.parse::<Cpuidle>().unwrap();
        assert!(c("intel_idle").registers_poll("xeon-12c24t"));
        assert!(c("acpi_idle").registers_poll("epyc-zen3"));
        assert!(!c("acpi_idle").registers_poll("altra"));
        assert!(!c("none").registers_poll("xeon-12c24t"));
        assert!(!c("haltpoll").registers_poll("kvm-8vcpu"));
        assert!(!c("pseries_idle").registers_poll("power9-smt8"));
        let mut t = vec![st("C1", 2, 2)];
        assert!(c("intel_idle").driver_states("sapphire-rapids", &mut t));
        assert_eq!(t[0], POLL);
        assert_eq!(t.len(), 2);
        // a table that polls first already (a calibrated sysfs profile)
        assert!(!c("intel_idle").driver_states("sapphire-rapids", &mut t));
        assert_eq!(t.len(), 2);
        let mut w = vec![st("WFI", 1, 1)];
        assert!(!c("acpi_idle").driver_states("kunpeng920", &mut w));
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn poll_limit_by_rule() {
        let x = xeon();
        let tick = TICK;
        assert_eq!(poll_limit_ns(PollLimit::None, &x, tick), None);
        assert_eq!(
            poll_limit_ns(PollLimit::TickDiv16, &x, tick),
            Some(250 * US)
        );
        assert_eq!(poll_limit_ns(PollLimit::FirstState, &x, tick), Some(6 * US));
        // C1 (6 us) is under CPUIDLE_POLL_MIN: C1E's 20 us
        assert_eq!(
            poll_limit_ns(PollLimit::TenUsState, &x, tick),
            Some(20 * US)
        );
        // Mel Gorman's AMD example: C1 2 us, C2 800 us -> capped at 250 us
        let amd = [POLL, st("C1", 1, 2), st("C2", 400, 800)];
        assert_eq!(
            poll_limit_ns(PollLimit::TenUsState, &amd, tick),
            Some(250 * US)
        );
        // POLL alone
        assert_eq!(
            poll_limit_ns(PollLimit::FirstState, &[POLL], tick),
            Some(tick)
        );
        assert_eq!(
            poll_limit_ns(PollLimit::TenUsState, &[POLL], tick),
            Some(250 * US)
        );
    }

    #[test]
    fn typical_interval_trims_outliers_or_gives_up() {
        let us = |v: &[Nanos]| v.iter().map(|x| x * US).collect::<Vec<_>>();
        // a steady pattern
        assert_eq!(typical_interval(&us(&[10; 8])), Some(10 * US));
        // one long outlier is dropped, then the rest is steady
        let h = us(&[10, 10, 12, 10, 8, 10, 10, 50_000]);
        assert_eq!(typical_interval(&h), Some(10 * US));
        assert_eq!(predict(&h), 10 * US);
        // the largest value goes with all its copies, and what is left,
        // however few, counts when it is steady (stddev under 20 us)
        assert_eq!(
            typical_interval(&us(&[10, 1000, 1000, 1000, 1000, 1000, 1000, 1000])),
            Some(10 * US)
        );
        assert_eq!(typical_interval(&us(&[1000; 8])), Some(1000 * US));
        // a spread that trimming cannot tame: no pattern, the average
        let h = us(&[10, 300, 2000, 45, 900, 5000, 130, 70]);
        assert_eq!(typical_interval(&h), None);
        assert_eq!(predict(&h), h.iter().sum::<Nanos>() / 8);
        assert_eq!(predict(&[0; 8]), 0);
    }

    #[test]
    fn menu_polls_for_the_shortest_idle_and_keeps_the_tick() {
        let x = xeon();
        // prediction under C1's exit latency: POLL, tick kept
        assert_eq!(
            menu(&x, &look(2 * US, Nanos::MAX)),
            Selection {
                state: 0,
                stop_tick: false
            }
        );
        // under C1's residency but over its exit latency: C1 rather than
        // polling (no timer due before C1's residency)
        assert_eq!(menu(&x, &look(4 * US, Nanos::MAX)).state, 1);
        // a timer due before C1's residency: POLL whatever the prediction
        assert_eq!(
            menu(&x, &look(5 * TICK, 5 * US)),
            Selection {
                state: 0,
                stop_tick: false
            }
        );
        // up to 4.19 only a timer within max(20 us, C1's residency) polls
        let old = |o: &Outlook| select(Governor::Menu, MenuPoll::TimerSoon, &x, o);
        assert_eq!(old(&look(2 * US, Nanos::MAX)).state, 1);
        assert_eq!(old(&look(2 * US, 15 * US)).state, 0);
    }

    #[test]
    fn menu_stops_the_tick_only_for_a_long_prediction() {
        let x = xeon();
        // under a tick: the deepest state that fits, tick kept
        assert_eq!(
            menu(&x, &look(100 * US, Nanos::MAX)),
            Selection {
                state: 3,
                stop_tick: false
            }
        );
        // the tick is due in 50 us: nothing deeper than that
        let mut o = look(1_000 * US, Nanos::MAX);
        assert_eq!(
            menu(&x, &o),
            Selection {
                state: 4,
                stop_tick: false
            }
        );
        o.to_tick_ns = 50 * US;
        assert_eq!(
            menu(&x, &o),
            Selection {
                state: 2,
                stop_tick: false
            }
        );
        // a tick or more: C6 and the tick stops
        assert_eq!(
            menu(&x, &look(2 * TICK, Nanos::MAX)),
            Selection {
                state: 4,
                stop_tick: true
            }
        );
        // ... unless a timer comes first
        assert_eq!(
            menu(&x, &look(2 * TICK, 300 * US)),
            Selection {
                state: 3,
                stop_tick: false
            }
        );
        // one state only: nothing to choose, the tick stops
        assert_eq!(
            menu(&[st("WFI", 1, 1)], &look(US, Nanos::MAX)),
            Selection {
                state: 0,
                stop_tick: true
            }
        );
    }

    #[test]
    fn teo_keeps_the_tick_with_one_state_and_polls_for_short_idle() {
        let teo = |s: &[IdleState], o: &Outlook| select(Governor::Teo, MenuPoll::Prediction, s, o);
        assert_eq!(
            teo(&[st("WFI", 1, 1)], &look(2 * TICK, Nanos::MAX)),
            Selection {
                state: 0,
                stop_tick: false
            }
        );
        let x = xeon();
        assert_eq!(teo(&x, &look(4 * US, Nanos::MAX)).state, 0);
        assert_eq!(
            teo(&x, &look(2 * TICK, Nanos::MAX)),
            Selection {
                state: 4,
                stop_tick: true
            }
        );
    }

    #[test]
    fn every_preset_names_its_idle_configuration() {
        for (name, _) in topology::presets() {
            let (_, source) = Cpuidle::for_machine(name);
            assert!(!source.starts_with("unknown"), "{name}");
        }
    }
}
