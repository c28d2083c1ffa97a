//! Ticks, __schedule and what a CPU does between segments: continue its
//! task, switch, or go idle (with the nohz busy accounting).

use super::{Engine, Mode, TaskState, POLL_STATE};
use crate::event::{Event, Slot};
use crate::rq::RunQueue;
use crate::Nanos;

impl<'t, R: RunQueue> Engine<'t, R> {
    pub(super) fn arm_tick(&mut self, c: usize) {
        if self.cpus[c].tick.armed {
            return;
        }
        self.cpus[c].tick.armed = true;
        let off = self.cpus[c].tick.offset;
        let next = ((self.now.saturating_sub(off)) / self.tick_ns + 1) * self.tick_ns + off;
        self.events.push(next, Event::Tick { cpu: c as u32 });
    }

    pub(super) fn tick(&mut self, c: usize) {
        self.cpus[c].tick.armed = false;
        if self.cpus[c].mode != Mode::Busy {
            // An idle CPU whose tick still runs balances as idle; with the
            // tick stopped (NO_HZ idle) nothing happens.
            if let Mode::Idle {
                tick_stopped: false,
                ..
            } = self.cpus[c].mode
            {
                if self.balancer.is_some() {
                    self.idle_tick(c);
                }
            }
            return;
        }
        let now = self.now;
        if let Some(cur) = self.cpus[c].rq.curr() {
            let resched = self.cpus[c].rq.update_curr(&mut self.ents, now);
            self.update_task_pelt(cur as usize, true, true);
            if resched {
                // update_deadline -> resched_curr, from the tick interrupt
                self.resched_curr(c, c, 0, true);
            }
        }
        self.update_rq_pelt(c);
        if self.balancer.is_some() {
            let idle = self.cpus[c].seg.task.is_none() && self.cpus[c].rq.nr_running() == 0;
            self.balance_tick(c, idle);
        }
        self.arm_tick(c);
    }

    pub(super) fn segment_done(&mut self, c: usize) {
        if self.cpus[c].seg.user && !self.cpus[c].seg.spin {
            self.counters.compute_work_ns += self.cpus[c].seg.work - self.cpus[c].seg.debt;
        }
        self.cpus[c].seg.work = 0;
        self.cpus[c].seg.debt = 0;
        if let Some(t) = self.cpus[c].seg.task {
            self.apply_op(c, t);
        }
        self.continue_cpu(c);
    }

    /// Decide what `c` does next: keep running its task's next op, switch,
    /// or go idle.
    pub(super) fn continue_cpu(&mut self, c: usize) {
        self.run_pending_balance(c);
        loop {
            let curr = self.cpus[c].rq.curr();
            let runnable =
                curr.is_some_and(|t| self.tasks[t as usize].state == TaskState::Runnable);
            if (!runnable || self.cpus[c].need_resched) && !self.schedule(c) {
                return; // went idle (or is working off debt first)
            }
            let t = self.cpus[c].rq.curr().expect("scheduled task");
            if self.start_op(c, t) {
                return;
            }
        }
    }

    /// __schedule: pick the next task on `c`. Returns false if the CPU went
    /// idle (or runs kernel debt before going idle).
    pub(super) fn schedule(&mut self, c: usize) -> bool {
        let now = self.now;
        self.cpus[c].need_resched = false;
        let prev = self.cpus[c].rq.curr();
        // prev ran until now (a blocked or exited prev was updated then)
        if let Some(p) = prev.filter(|&p| self.tasks[p as usize].state == TaskState::Runnable) {
            self.update_task_pelt(p as usize, true, true);
        }
        let next = self.cpus[c].rq.pick_next(&self.ents, &self.cfg.eevdf);
        // next waited runnable until now
        if let Some(n) = next.filter(|&n| Some(n) != prev) {
            self.update_task_pelt(n as usize, true, false);
        }
        self.cpus[c].rq.set_next(&mut self.ents, next, now);
        self.update_rq_pelt(c);
        match next {
            None => {
                if self.balance_newidle(c) {
                    // pulled work: pick again (its cost is owed first)
                    return self.schedule(c);
                }
                if self.cpus[c].debt > 0 {
                    // finish kernel work, then come back here
                    self.start_segment(c, None, 0, false);
                    return false;
                }
                self.enter_idle(c);
                false
            }
            Some(n) => {
                let ni = n as usize;
                self.cpu_state[c].curr_is_idle = false;
                self.cpus[c].bal.newidle_done = false;
                // set_next_task_fair moves it to the head of cfs_tasks
                self.list_seq += 1;
                self.tasks[ni].list_stamp = self.list_seq;
                if prev != Some(n) {
                    self.counters.context_switches += 1;
                    self.cpus[c].time.switches += 1;
                    let mm = self.tasks[ni].spec.mm;
                    let mut cost = self.costs.ctx_switch_ns;
                    let mm_changed = self.cpus[c].last_mm != Some(mm);
                    if mm_changed {
                        cost += self.costs.mm_switch_extra_ns;
                    }
                    self.cpus[c].last_mm = Some(mm);
                    let seq = self.cpus[c].time.switches;
                    match self.tasks[ni].last_ran {
                        // back on its CPU: refill what the tasks that ran
                        // here since evicted (the count includes this
                        // switch, so one other task in between is 2 - 1)
                        Some(from) if from == c => {
                            let others = seq - 1 - self.tasks[ni].ran_at_switch;
                            cost += self.costs.switch_refill(others, mm_changed);
                        }
                        // migrated: none of its working set is in this
                        // CPU's private caches; its data lines come from
                        // the old CPU at their distance
                        Some(from) => {
                            let d = self.topo.distance(from, c);
                            cost += self.costs.switch_refill(u64::MAX, mm_changed);
                            cost += self.tasks[ni].spec.footprint_lines as u64 * self.costs.c2c(d);
                        }
                        None => {}
                    }
                    self.tasks[ni].ran_at_switch = seq;
                    self.cpus[c].debt += cost;
                    // the CPU's own run-queue line is written by the switch
                    let line = self.cpu_state[c].line;
                    self.cpus[c].debt += self.lines.write(line, c, self.topo, &self.costs);
                }
                self.tasks[ni].last_ran = Some(c);
                if self.cpus[c].mode != Mode::Busy {
                    self.set_mode(c, Mode::Busy);
                }
                self.arm_tick(c);
                true
            }
        }
    }

    pub(super) fn enter_idle(&mut self, c: usize) {
        use crate::cpuidle::Driver;
        let now = self.now;
        let mut poll_until = None;
        self.cpus[c].idle.halt_since = None;
        let (state, tick_stopped) = match self.cfg.cpuidle.driver {
            // cpuidle_idle_call() without a driver: tick_nohz_idle_stop_tick()
            // then default_idle_call() (HLT / WFI). The next timer of an idle
            // CPU is not modelled, so it is taken as more than a tick away:
            // the tick stops.
            Driver::None => {
                self.cpus[c].idle.halt_since = Some(now);
                (self.costs.halt_state(), true)
            }
            // haltpoll_select(): poll with the tick kept while the poll
            // limit is non-zero, then halt with it stopped (`poll_end`).
            Driver::Haltpoll => {
                let limit = self.cpus[c].idle.poll_limit_ns;
                if limit == 0 || !self.costs.charge_idle_exit {
                    self.cpus[c].idle.halt_since = Some(now);
                    (self.costs.halt_state(), true)
                } else {
                    poll_until = Some(now + limit);
                    (POLL_STATE, false)
                }
            }
            // menu / teo, simplified: predict the average of recent idle
            // periods; the governor votes to stop the tick only if that is
            // at least a tick (the rule both follow since 4.17).
            _ => {
                let h = &self.cpus[c].idle.hist;
                let predicted = h.iter().sum::<Nanos>() / h.len() as Nanos;
                (
                    self.costs.pick_idle_state(predicted),
                    predicted >= self.tick_ns,
                )
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
        self.cpus[c].gen = self.cpus[c].gen.wrapping_add(1);
        self.events.clear_slot(c, Slot::Main);
        let st = &mut self.cpu_state[c];
        st.curr_is_idle = true;
        st.idle_stamp = now.max(1);
        st.idle_exit_latency = self
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
        let _ = self.lines.write(line, c, self.topo, &self.costs);
        self.cpus[c].bal.newidle_done = false;
        if self.balancer.is_some() {
            if tick_stopped {
                // tick_nohz_idle_stop_tick -> nohz_balance_enter_idle (its
                // line writes are made; the time is not charged, as below)
                let (req, _) = self.balance_call(c, |b, env| b.nohz_enter_idle(env, c));
                self.recycle(req);
            } else {
                // the tick keeps running: the idle CPU balances at it
                self.arm_tick(c);
            }
        } else if tick_stopped {
            self.nohz_busy(c, false);
        }
        // set_next_task_idle -> update_idle_core
        // (its reads and the has_idle_cores write go through the line model;
        // the time is not charged: the CPU is on its way to idle)
        let (_, cost, probes) = self.wake_env_call(c, |p, env| p.cpu_enters_idle(env, c));
        self.pstats.probes += probes as u64;
        self.pstats.cost_ns += cost;
        self.cpus[c].debt = 0;
    }

    /// A polling CPU (haltpoll) found no work within its poll limit: the
    /// idle loop goes round again, the governor picks the halt state and
    /// votes to stop the tick (haltpoll_select after a timed-out poll).
    pub(super) fn poll_end(&mut self, c: usize) {
        let Mode::Idle {
            since,
            state: POLL_STATE,
            ..
        } = self.cpus[c].mode
        else {
            return;
        };
        let halt = self.costs.halt_state();
        self.cpus[c].mode = Mode::Idle {
            since,
            state: halt,
            tick_stopped: true,
        };
        self.cpus[c].idle.halt_since = Some(self.now);
        self.counters.tick_stops += 1;
        self.cpu_state[c].idle_exit_latency = self
            .costs
            .idle_states
            .get(halt)
            .map_or(0, |s| s.exit_latency_ns);
        if self.balancer.is_some() {
            let (req, _) = self.balance_call(c, |b, env| b.nohz_enter_idle(env, c));
            self.recycle(req);
        } else {
            self.nohz_busy(c, false);
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

    pub(super) fn record_idle(&mut self, c: usize, dur: Nanos) {
        let cpu = &mut self.cpus[c];
        cpu.idle.hist[cpu.idle.hist_pos] = dur;
        cpu.idle.hist_pos = (cpu.idle.hist_pos + 1) % cpu.idle.hist.len();
    }

    pub(super) fn nohz_busy(&mut self, c: usize, busy: bool) {
        let l = self.sd.llc_index(c);
        let line = self.llc[l].line;
        let cost = self.lines.write(line, c, self.topo, &self.costs);
        self.cpus[c].debt += cost;
        self.pstats.llc_shared_writes += 1;
        if busy {
            self.llc[l].nr_busy_cpus += 1;
        } else {
            self.llc[l].nr_busy_cpus = self.llc[l].nr_busy_cpus.saturating_sub(1);
        }
    }
}
