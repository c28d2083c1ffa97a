//! Which cpuidle driver and governor a machine runs, and so what its idle
//! loop does with the tick (kernel/sched/idle.c `cpuidle_idle_call()`,
//! kernel/time/tick-sched.c, drivers/cpuidle/governors/).
//!
//! - **No driver** (`none`: KVM x86 guests without haltpoll, arm64 servers
//!   whose firmware gives no usable low-power-idle states): `do_idle()`
//!   calls `tick_nohz_idle_stop_tick()` on every idle entry and then
//!   `default_idle_call()` (HLT / WFI). The tick stops whenever the next
//!   timer is more than a tick away, so nearly every idle period enters and
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
//!
//! Before 4.17 the idle loop stopped the tick at idle entry, before any
//! governor ran, and decremented the LLC's `nr_busy_cpus` on every idle
//! entry (`set_cpu_sd_state_idle()` from `tick_nohz_idle_enter()`, kernel
//! 4.16).

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
            "xeon-12c24t" | "jacobsville" | "sapphire-rapids" => (
                with(Driver::IntelIdle, Governor::Menu),
                "Intel bare metal: intel_idle (drivers/idle/intel_idle.c), menu (the highest-rated governor, 20)",
            ),
            "epyc-zen3" => (
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

    #[test]
    fn every_preset_names_its_idle_configuration() {
        for (name, _) in topology::presets() {
            let (_, source) = Cpuidle::for_machine(name);
            assert!(!source.starts_with("unknown"), "{name}");
        }
    }
}
