//! The idle loop's version-dependent rules, as toggles of a kernel profile
//! (kernel/sched/idle.c `do_idle()` / `cpuidle_idle_call()`,
//! kernel/time/tick-sched.c, drivers/cpuidle/poll_state.c,
//! drivers/cpuidle/cpuidle.c `cpuidle_poll_time()`,
//! drivers/cpuidle/governors/menu.c), derived from the version like the
//! wake-up path's and the balancer's toggles and overridable by name.
//!
//! What the machine runs (its cpuidle driver and governor) is not a kernel
//! toggle: see [`crate::cpuidle`].

/// When the idle loop stops the tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickStop {
    /// Up to 4.16: `tick_nohz_idle_enter()` at the top of `do_idle()` stops
    /// the tick (when no timer is due within a tick) before any governor
    /// runs, whatever it would predict, and decrements the LLC's
    /// `nr_busy_cpus` on every idle entry (`set_cpu_sd_state_idle()`,
    /// kernel/time/tick-sched.c and kernel/sched/fair.c of 4.16).
    Upfront,
    /// From 4.17 (Rafael Wysocki's idle-loop rework: 2aaf709a518d "sched:
    /// idle: Do not stop the tick upfront in the idle loop", 554c8aa8ecad
    /// "sched: idle: Select idle state before stopping the tick"): the
    /// governor chooses the state and votes on the tick first, and only a
    /// stop vote (or no driver) stops it; `set_cpu_sd_state_idle()` moved
    /// into `nohz_balance_enter_idle()` (00357f5ec5d6 "sched/nohz: Clean up
    /// nohz enter/exit"), so the LLC count changes only when the tick stops.
    Governor,
}

/// How long cpuidle's POLL state spins before the idle loop goes round
/// again (drivers/cpuidle/poll_state.c `poll_idle()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollLimit {
    /// Up to 4.16: no limit, it spins until need_resched.
    None,
    /// 4.17-4.20 (a37b969a61c1 "cpuidle: poll_state: Add time limit to
    /// poll_idle()"): TICK_NSEC / 16.
    TickDiv16,
    /// 5.0-5.10: the target residency of the first enabled state after
    /// POLL (a tick when there is none; `cpuidle_poll_time()` from 5.4,
    /// 259231a04561 and its fix 36fcb4292473 "cpuidle: use first valid
    /// target residency as poll time").
    FirstState,
    /// 5.11+ (Mel Gorman, "cpuidle: Select polling interval based on a
    /// c-state with a longer target residency", LKML 2020-11-30):
    /// the first enabled state's residency that is at least 10 us
    /// (CPUIDLE_POLL_MIN), at most TICK_NSEC / 16 (CPUIDLE_POLL_MAX), which
    /// is also the value when no state qualifies.
    TenUsState,
}

/// How menu decides between POLL and the first real state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MenuPoll {
    /// Up to 4.19: POLL only when the next timer is due within max(20 us,
    /// state 1's target residency) (menu_select's `first_idx`,
    /// 7884084f3bcc "cpuidle,x86: increase forced cut-off for polling to
    /// 20us"); otherwise the search starts at state 1.
    TimerSoon,
    /// From the first_idx removal (after 4.19; 4.20 is taken here, the
    /// release is not checked): POLL when the next timer is due before
    /// state 1's target residency, or when the prediction is under state
    /// 1's residency and also under its exit latency (the exit-latency
    /// test lived in `latency_req` until 779b1a1cb13a and is explicit
    /// since db86f55bf81a "cpuidle: governors: menu: Select polling state
    /// in some more cases", both in stable back to 4.17+/6.6).
    Prediction,
}

crate::toggles! {
    /// The idle-loop toggles of one kernel profile.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct IdleLoopFeatures {}
    /// (name, values, description) of every idle-loop toggle.
    table pub IDLE_FEATURES;
    defaults(_name, _v, ge);
    fn for_version = "The toggles of kernel version `v` (`(7, 0)` is the latest tree, \
        `(2, 6)` 2.6.38, which also stopped the tick upfront).";
    fn set = "Set toggle `name` to `value`. Ok(false): not an idle-loop toggle; \
        Err(valid values): a bad value.";
    impl Default = (7, 0), "The latest tree's.";
    toggles {
        /// When the tick stops.
        pub tick_stop: TickStop = if ge(4, 17) { TickStop::Governor } else { TickStop::Upfront },
            "idle_tick_stop" ("upfront|governor": "upfront" => TickStop::Upfront, "governor" => TickStop::Governor)
            => "the idle loop stops the tick before the governor runs and counts the CPU idle in nr_busy_cpus at every entry (<=4.16), or after the governor's vote (554c8aa8ecad, 4.17)";
        /// POLL's time limit.
        pub poll_limit: PollLimit = if ge(5, 11) {
                PollLimit::TenUsState
            } else if ge(5, 0) {
                PollLimit::FirstState
            } else if ge(4, 17) {
                PollLimit::TickDiv16
            } else {
                PollLimit::None
            },
            "poll_limit" ("none|tick/16|first-state|10us-state":
                "none" => PollLimit::None,
                "tick/16" => PollLimit::TickDiv16,
                "first-state" => PollLimit::FirstState,
                "10us-state" => PollLimit::TenUsState)
            => "cpuidle POLL time limit: none (<=4.16), TICK_NSEC/16 (a37b969a61c1, 4.17), the first state's target residency (5.0), the first residency >= 10 us capped at TICK_NSEC/16 (5.11)";
        /// menu's POLL rule.
        pub menu_poll: MenuPoll = if ge(4, 20) { MenuPoll::Prediction } else { MenuPoll::TimerSoon },
            "menu_poll_rule" ("timer-soon|prediction": "timer-soon" => MenuPoll::TimerSoon, "prediction" => MenuPoll::Prediction)
            => "menu picks POLL only for a timer due within max(20 us, state 1's residency) (<=4.19), or also for a prediction under state 1's exit latency (4.20)";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_choose_the_idle_loop() {
        let old = IdleLoopFeatures::for_version((4, 16));
        assert_eq!(old.tick_stop, TickStop::Upfront);
        assert_eq!(old.poll_limit, PollLimit::None);
        assert_eq!(old.menu_poll, MenuPoll::TimerSoon);
        let v417 = IdleLoopFeatures::for_version((4, 17));
        assert_eq!(v417.tick_stop, TickStop::Governor);
        assert_eq!(v417.poll_limit, PollLimit::TickDiv16);
        assert_eq!(
            IdleLoopFeatures::for_version((5, 4)).poll_limit,
            PollLimit::FirstState
        );
        let latest = IdleLoopFeatures::default();
        assert_eq!(latest.poll_limit, PollLimit::TenUsState);
        assert_eq!(latest.menu_poll, MenuPoll::Prediction);
        assert_eq!(
            IdleLoopFeatures::for_version((2, 6)).tick_stop,
            TickStop::Upfront
        );
    }

    #[test]
    fn every_listed_value_parses_and_bad_ones_name_the_valid_ones() {
        let mut f = IdleLoopFeatures::default();
        for (name, values, _) in IDLE_FEATURES {
            for v in values.split('|') {
                assert_eq!(f.set(name, v), Ok(true), "{name}={v}");
            }
            assert_eq!(f.set(name, "bogus"), Err(*values), "{name}");
        }
        assert_eq!(f.set("sis_util", "on"), Ok(false));
    }
}
