//! The idle loop of a CPU (kernel/sched/idle.c `do_idle()` and
//! `cpuidle_idle_call()`, kernel/time/tick-sched.c, the driver and governor
//! of [`crate::cpuidle`], the version rules of [`crate::idle_loop`]): which
//! state an idle CPU enters, whether its tick stops and the nohz
//! bookkeeping that follows, the time limits of cpuidle's POLL and of
//! haltpoll's poll window, and what the governor remembers of each idle
//! period.
//!
//! The next-timer test of `tick_nohz_next_event()` never keeps the tick
//! here (see `timers`: the modelled timers are hrtimers), so the tick stops
//! whenever the idle loop tries to stop it: at every idle entry without a
//! driver or up to 4.16, on the governor's vote from 4.17.

use super::{Engine, Mode, POLL_STATE};
use crate::cpuidle::{self, Driver, Governor, Outlook, Selection};
use crate::event::{Event, Slot};
use crate::idle_loop::TickStop;
use crate::rq::RunQueue;
use crate::Nanos;

/// What menu records for an idle period that its tick ended while no timer
/// was due within a tick: 9/10 of MAX_INTERESTING, 50 ms (`menu_update()`,
/// drivers/cpuidle/governors/menu.c, 4.17+).
pub(super) const MENU_TICK_WAKEUP_NS: Nanos = 45_000_000;

/// A long idle period, where the governors record "long" (teo's artificial
/// wake-up, S64_MAX; menu after a timed-out poll with no timer pending,
/// KTIME_MAX): one second, longer than any tick or target residency, so it
/// decides as they do and keeps the average of 8 finite.
pub(super) const LONG_IDLE_NS: Nanos = 1_000_000_000;

impl<'t, R: RunQueue> Engine<'t, R> {
    /// `c` has nothing to run: one pass of `do_idle()`. Without a driver
    /// `cpuidle_idle_call()` stops the tick and halts (HLT / WFI,
    /// `default_idle_call()`); haltpoll polls with the tick kept while its
    /// poll window is open, else halts with it stopped; a menu or teo
    /// driver enters the state the governor picks and stops the tick on its
    /// vote. Up to 4.16 (`idle_tick_stop=upfront`) the tick was stopped and
    /// the CPU counted idle in its LLC's `nr_busy_cpus` at the top of
    /// `do_idle()`, before any governor ran.
    pub(super) fn enter_idle(&mut self, c: usize) {
        let now = self.now;
        let upfront = self.cfg.idle_loop.tick_stop == TickStop::Upfront;
        let mut poll_until = None;
        self.cpus[c].idle.halt_since = None;
        let (state, tick_stopped) = match self.cfg.cpuidle.driver {
            Driver::None => {
                self.cpus[c].idle.halt_since = Some(now);
                (self.k.costs.halt_state(), true)
            }
            // haltpoll_select(): poll with the tick kept while the poll
            // limit is non-zero, then halt with it stopped (`poll_end`).
            Driver::Haltpoll => {
                let limit = self.cpus[c].idle.poll_limit_ns;
                if limit == 0 || !self.k.costs.charge_idle_exit {
                    self.cpus[c].idle.halt_since = Some(now);
                    (self.k.costs.halt_state(), true)
                } else {
                    poll_until = Some(now + limit);
                    (POLL_STATE, upfront)
                }
            }
            _ => {
                let sel = self.governor_select(c);
                poll_until = self.poll_window(sel.state).map(|l| now + l);
                (sel.state, upfront || sel.stop_tick)
            }
        };
        self.set_mode(
            c,
            Mode::Idle {
                since: now,
                state,
                tick_stopped,
            },
        );
        if self.traced() {
            self.trace_idle_enter(c);
        }
        self.cpus[c].gen = self.cpus[c].gen.wrapping_add(1);
        self.events.clear_slot(c, Slot::Main);
        let st = &mut self.k.cpu_state[c];
        st.curr_is_idle = true;
        self.k.lines.set_running(c, false);
        st.idle_stamp = now.max(1);
        st.idle_exit_latency = self
            .k
            .costs
            .idle_states
            .get(state)
            .map_or(0, |s| s.exit_latency_ns);
        self.counters.tick_stops += tick_stopped as u64;
        if let Some(t) = poll_until {
            let gen = self.cpus[c].gen;
            self.events
                .set_slot(c, Slot::Main, t, Event::PollEnd { cpu: c as u32, gen });
        }
        let line = st.line;
        let _ = self.k.lines.write(line, c, self.k.topo, &self.k.costs);
        // current_set_polling_and_test, and tick_nohz_next_event's read of
        // jiffies (moved, not charged: the CPU is on its way to idle)
        let _ = self.k.idle_thread_info_lines(c, c);
        let _ = self.k.idle_jiffies_lines(c);
        self.cpus[c].bal.newidle_done = false;
        if upfront {
            // tick_nohz_idle_enter() of <= 4.16: set_cpu_sd_state_idle()
            // at every idle entry, whether the tick then stops or not
            self.sd_state_idle(c);
        }
        if tick_stopped {
            self.nohz_enter(c);
        } else if self.k.balancer.is_some() {
            // the tick keeps running: the idle CPU balances at it
            self.arm_tick(c);
        }
        // set_next_task_idle -> update_idle_core
        let t0 = self.cfg.phase_timing.then(std::time::Instant::now);
        self.k.cpu_enters_idle(c, self.now);
        self.phases.placement(t0);
        self.cpus[c].debt = 0;
    }

    /// The governor's choice for idle `c` (`cpuidle_select()`), from its
    /// last 8 idle periods and the time to its next timer.
    fn governor_select(&mut self, c: usize) -> Selection {
        let predicted = cpuidle::predict(&self.cpus[c].idle.hist);
        let sleep = self.time_to_next_timer(c);
        self.cpus[c].idle.sleep_ns = sleep;
        let f = self.cfg.idle_loop;
        let o = Outlook {
            predicted_ns: predicted,
            sleep_ns: sleep,
            to_tick_ns: self.time_to_tick(c),
            tick_ns: self.k.tick_ns,
        };
        cpuidle::select(
            self.cfg.cpuidle.governor,
            f.menu_poll,
            &self.k.costs.idle_states,
            &o,
        )
    }

    /// How long `state` polls before the idle loop goes round, for
    /// cpuidle's POLL of intel_idle and acpi_idle (None: the state does not
    /// poll, or polls without a limit). pseries' and powernv's snooze loops
    /// have their own limits, not modelled.
    fn poll_window(&self, state: usize) -> Option<Nanos> {
        let polls = self
            .k
            .costs
            .idle_states
            .get(state)
            .is_some_and(|s| s.polls());
        if !polls
            || !matches!(
                self.cfg.cpuidle.driver,
                Driver::IntelIdle | Driver::AcpiIdle
            )
        {
            return None;
        }
        cpuidle::poll_limit_ns(
            self.cfg.idle_loop.poll_limit,
            &self.k.costs.idle_states,
            self.k.tick_ns,
        )
    }

    /// Time from now to `c`'s next tick.
    fn time_to_tick(&self, c: usize) -> Nanos {
        let off = self.cpus[c].tick.offset;
        if self.now < off {
            return off - self.now;
        }
        ((self.now - off) / self.k.tick_ns + 1) * self.k.tick_ns + off - self.now
    }

    /// A poll ran out (`Event::PollEnd`): haltpoll halts; cpuidle's POLL
    /// returns with `poll_time_limit` set and the idle loop goes round: the
    /// governor counts the poll as lasting until the next timer (menu, since
    /// "make menu_update() always assume ... the next timer event", a fix of
    /// a37b969a61c1) or as long (teo), and chooses again; the tick stops if
    /// it votes so, and stays stopped if it already was (7059b36636be).
    pub(super) fn poll_limit_reached(&mut self, c: usize) {
        if self.cfg.cpuidle.driver == Driver::Haltpoll {
            self.poll_end(c);
            return;
        }
        let Mode::Idle {
            state,
            tick_stopped,
            ..
        } = self.cpus[c].mode
        else {
            return;
        };
        if self.poll_window(state).is_none() {
            return;
        }
        let measured = match self.cfg.cpuidle.governor {
            Governor::Teo => LONG_IDLE_NS,
            Governor::Menu | Governor::Haltpoll => self.cpus[c].idle.sleep_ns.min(LONG_IDLE_NS),
        };
        self.record_idle(c, measured);
        let sel = self.governor_select(c);
        let stop = tick_stopped || sel.stop_tick;
        let now = self.now;
        self.cpus[c].mode = Mode::Idle {
            since: now,
            state: sel.state,
            tick_stopped: stop,
        };
        if self.traced() {
            // the idle loop goes round: out of POLL, into the new choice
            self.trace_idle_exit(c);
            self.trace_idle_enter(c);
        }
        self.k.cpu_state[c].idle_exit_latency = self
            .k
            .costs
            .idle_states
            .get(sel.state)
            .map_or(0, |s| s.exit_latency_ns);
        if let Some(l) = self.poll_window(sel.state) {
            let gen = self.cpus[c].gen;
            self.events.set_slot(
                c,
                Slot::Main,
                now + l,
                Event::PollEnd { cpu: c as u32, gen },
            );
        }
        if stop && !tick_stopped {
            self.counters.tick_stops += 1;
            self.nohz_enter(c);
        }
    }

    /// A polling CPU (haltpoll) found no work within its poll limit: the
    /// idle loop goes round again, the governor picks the halt state and
    /// votes to stop the tick (haltpoll_select after a timed-out poll).
    fn poll_end(&mut self, c: usize) {
        let Mode::Idle {
            since,
            state: POLL_STATE,
            tick_stopped,
        } = self.cpus[c].mode
        else {
            return;
        };
        let halt = self.k.costs.halt_state();
        self.cpus[c].mode = Mode::Idle {
            since,
            state: halt,
            tick_stopped: true,
        };
        if self.traced() {
            self.trace_idle_exit(c);
            self.trace_idle_enter(c);
        }
        self.cpus[c].idle.halt_since = Some(self.now);
        self.k.cpu_state[c].idle_exit_latency = self
            .k
            .costs
            .idle_states
            .get(halt)
            .map_or(0, |s| s.exit_latency_ns);
        if !tick_stopped {
            self.counters.tick_stops += 1;
            self.nohz_enter(c);
        }
    }

    /// The tick of idle `c` stopped (running -> stopped in
    /// `tick_nohz_idle_stop_tick()`): `nohz_balance_enter_idle()` (its line
    /// writes are made; the time is not charged: the CPU is on its way to
    /// idle). Without a balancer the engine keeps the LLC's `nr_busy_cpus`
    /// itself.
    fn nohz_enter(&mut self, c: usize) {
        if self.k.balancer.is_some() {
            let (req, _) = self.balance_call(c, |b, env| b.nohz_enter_idle(env, c));
            self.k.recycle(req);
        } else {
            self.sd_state_idle(c);
        }
    }

    /// `set_cpu_sd_state_idle()`: `c` no longer counts in its LLC's
    /// `nr_busy_cpus` (once per idle period: `LlcShared::set_cpu_sd_state`
    /// keeps the count and the flag, called by the balancer when there is
    /// one, else by the engine, which counts the CPU busy again when it
    /// wakes).
    fn sd_state_idle(&mut self, c: usize) {
        if self.k.balancer.is_some() {
            let (req, _) = self.balance_call(c, |b, env| b.set_cpu_sd_state_idle(env, c));
            self.k.recycle(req);
        } else {
            self.set_cpu_sd_state_idle(c);
        }
    }

    /// haltpoll_reflect after a halt of `block` ns: grow the poll limit
    /// when the halt ended inside the largest poll window, shrink it when
    /// it was longer (drivers/cpuidle/governors/haltpoll.c defaults:
    /// guest_halt_poll_ns 200 us, grow x2 from 50 us, shrink /2, to 0
    /// below the start value).
    pub(super) fn haltpoll_reflect(&mut self, c: usize, block: Nanos) {
        const MAX: Nanos = 200_000;
        const GROW_START: Nanos = 50_000;
        let limit = &mut self.cpus[c].idle.poll_limit_ns;
        if *limit < block && block <= MAX {
            *limit = (*limit * 2).clamp(GROW_START, MAX);
        } else if block > MAX {
            *limit /= 2;
            if *limit < GROW_START {
                *limit = 0;
            }
        }
    }

    /// What the governor remembers of an idle period of `c` that lasted
    /// (or is taken to have lasted) `dur`.
    pub(super) fn record_idle(&mut self, c: usize, dur: Nanos) {
        let cpu = &mut self.cpus[c];
        cpu.idle.hist[cpu.idle.hist_pos] = dur;
        cpu.idle.hist_pos = (cpu.idle.hist_pos + 1) % cpu.idle.hist.len();
    }

    /// set_cpu_sd_state_busy (kernel/sched/fair.c): `c` counts as busy in
    /// its LLC's `nr_busy_cpus` again (a CPU whose tick restarts), unless
    /// it already does.
    pub(super) fn set_cpu_sd_state_busy(&mut self, c: usize) {
        self.set_cpu_sd_state(c, true);
    }

    /// set_cpu_sd_state_idle (kernel/sched/fair.c): `c` no longer counts
    /// as busy in its LLC's `nr_busy_cpus` (a CPU whose tick stops), unless
    /// it already does not.
    pub(super) fn set_cpu_sd_state_idle(&mut self, c: usize) {
        self.set_cpu_sd_state(c, false);
    }

    /// `LlcShared::set_cpu_sd_state` (the count and the flag, shared with
    /// the balancer), and the atomic on the LLC's shared line when the
    /// count changed, charged to `c`.
    fn set_cpu_sd_state(&mut self, c: usize, busy: bool) {
        let l = self.k.sd.llc_index(c);
        if !self.k.llc[l].set_cpu_sd_state(&mut self.k.cpu_state[c], busy) {
            return;
        }
        let line = self.k.llc[l].line;
        let cost = self.k.lines.write(line, c, self.k.topo, &self.k.costs);
        self.cpus[c].debt += cost;
        self.k.pstats.llc_shared_writes += 1;
    }
}
