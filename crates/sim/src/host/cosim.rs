//! One event loop over a host and its guests: the earliest event of the
//! host or of any guest runs next (the host first on equal times, then the
//! guests in order), so a run is as deterministic as a bare-metal one.
//!
//! A guest event addressed to a vCPU whose thread is not running guest
//! code waits for it (`Engine::vm_defer_next`); if the vCPU had halted, the
//! event is the interrupt that wakes its thread through the host first
//! (`Host::wake`), and when the host can run it at once (no cost to pay)
//! the event is handled at its own time, exactly as on bare metal.

use super::sched::{GuestCpus, Host, ThreadState};
use crate::engine::{Engine, InvariantError, RunError, VcpuRun};
use crate::Nanos;

struct Guests<'a, 'e, 't>(&'a mut [&'e mut Engine<'t>]);

impl GuestCpus for Guests<'_, '_, '_> {
    fn pause(&mut self, guest: usize, vcpu: usize, now: Nanos, preempted: bool) {
        self.0[guest].vm_pause(vcpu, now, preempted);
    }
    fn resume(&mut self, guest: usize, vcpu: usize, now: Nanos) {
        self.0[guest].vm_resume(vcpu, now);
    }
    fn flag_halted(&mut self, guest: usize, vcpu: usize, polled: bool) {
        self.0[guest].vm_flag_halted(vcpu, polled);
    }
}

/// Run `guests` (engines with their workloads built and `vm_enable`d) on
/// `host` until every guest is done. With `check`, each guest's vCPU
/// accounting is checked against the host's when it finishes: guest time
/// plus steal plus halted time equals the host time, and the time the
/// guest saw its vCPU off equals the host's steal, halted and entry time.
pub fn run(
    host: &mut Host<'_>,
    guests: &mut [&mut Engine<'_>],
    check: bool,
) -> Result<(), RunError> {
    host.start(&mut Guests(guests));
    for g in guests.iter_mut() {
        g.vm_start();
    }
    let n = guests.len();
    let mut retired = vec![false; n];
    loop {
        let mut best: Option<(Nanos, usize, Option<usize>)> = None;
        let mut done = Vec::new();
        for (i, g) in guests.iter_mut().enumerate() {
            if retired[i] {
                continue;
            }
            match g.vm_peek() {
                Some((t, c)) if best.is_none_or(|b| t < b.0) => best = Some((t, i, c)),
                Some(_) => {}
                None if g.vm_done() => done.push(i),
                None => {}
            }
        }
        for i in done {
            retired[i] = true;
            let now = host.now().max(guests[i].now());
            if check {
                check_guest(host, guests[i], i, now)?;
            }
            host.retire(i, now, &mut Guests(guests));
        }
        if retired.iter().all(|&r| r) {
            break;
        }
        match (host.next_time(), best) {
            (Some(h), Some((t, _, _))) if h <= t => host.step(&mut Guests(guests)),
            // the guests wait for vCPUs the host will run again
            (Some(_), None) if host.vcpus_pending() => host.step(&mut Guests(guests)),
            (_, Some((_, i, None))) => guests[i].vm_stop(),
            (_, Some((t, i, Some(c)))) => {
                if guests[i].vm_run_state(c) == VcpuRun::Halted {
                    let from = guests[i].vm_wake_source();
                    host.wake(i, c, t, from, &mut Guests(guests));
                }
                if guests[i].vm_run_state(c) == VcpuRun::Running {
                    guests[i].vm_step()?;
                    let now = guests[i].now();
                    for c in guests[i].vm_take_halts() {
                        host.halt(i, c, now, &mut Guests(guests));
                    }
                    for (c, from, at) in guests[i].vm_take_kicks() {
                        host.kick(i, c, at, from);
                    }
                } else {
                    guests[i].vm_defer_next()?;
                }
            }
            // nothing can happen any more: the guests that are not done
            // report their deadlock below
            _ => break,
        }
        if check {
            check_states(host, guests, &retired)?;
        }
    }
    let end = guests
        .iter()
        .map(|g| g.now())
        .max()
        .unwrap_or(0)
        .max(host.now());
    host.finish(end);
    for g in guests.iter_mut() {
        g.vm_finish()?;
    }
    if check {
        host.check_accounting()
            .map_err(|what| InvariantError { time: end, what })?;
    }
    Ok(())
}

/// A guest runs a vCPU exactly when the host runs its thread in the guest.
fn check_states(
    host: &Host<'_>,
    guests: &[&mut Engine<'_>],
    retired: &[bool],
) -> Result<(), RunError> {
    if host.dropped_moves > 0 {
        return Err(InvariantError {
            time: host.now(),
            what: format!(
                "the host dropped {} balancer move(s) its run queues did not allow",
                host.dropped_moves
            ),
        }
        .into());
    }
    for (i, g) in guests.iter().enumerate() {
        if retired[i] {
            continue;
        }
        for c in 0..g.nr_cpus() {
            let guest_runs = g.vm_run_state(c) == VcpuRun::Running;
            let host_runs = host.vcpu_state(i, c) == ThreadState::Running;
            if guest_runs != host_runs {
                return Err(InvariantError {
                    time: host.now().max(g.now()),
                    what: format!(
                        "guest {i} CPU {c} is {:?} in the guest but its vCPU thread is {:?} on the host",
                        g.vm_run_state(c),
                        host.vcpu_state(i, c)
                    ),
                }
                .into());
            }
        }
    }
    Ok(())
}

/// The accounting of guest `i` at `now`, from both sides.
fn check_guest(host: &mut Host<'_>, g: &Engine<'_>, i: usize, now: Nanos) -> Result<(), RunError> {
    host.finish(now);
    let off = g.vm_off_at(now);
    for (v, &off) in off.iter().enumerate() {
        let x = host.vcpu_times(i, v);
        let err = |what: String| -> Result<(), RunError> {
            Err(InvariantError { time: now, what }.into())
        };
        if x.run_ns + x.steal_ns + x.halted_ns != now {
            return err(format!(
                "guest {i} vCPU {v}: guest {} + steal {} + halted {} != host time {now}",
                x.run_ns, x.steal_ns, x.halted_ns
            ));
        }
        if off != x.steal_ns + x.halted_ns + x.entry_ns {
            return err(format!(
                "guest {i} vCPU {v}: the guest saw it off {off} ns, the host steal {} + halted {} + entry {}",
                x.steal_ns, x.halted_ns, x.entry_ns
            ));
        }
    }
    Ok(())
}
