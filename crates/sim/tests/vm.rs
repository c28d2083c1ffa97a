//! The host layer: guests on vCPUs a host can pre-empt (issue 15).

use sim::host::run::simulate_vm;
use sim::host::spec::{self, HostSpec};
use sim::run::{simulate, SimOptions};
use sim::workload::hackbench::Hackbench;
use sim::workload::spin::Spin;

fn hb() -> Hackbench {
    Hackbench {
        groups: 2,
        fds: 4,
        loops: 50,
        pipe: true,
        threads: true,
        ..Default::default()
    }
}

fn opt() -> SimOptions {
    SimOptions {
        check: true,
        ..Default::default()
    }
}

#[test]
fn one_guest_alone_with_a_free_host_is_bare_metal() {
    let mut s: HostSpec = spec::preset("vm1x8").unwrap();
    s.host_costs = false;
    let topo = topology::preset("kvm-8vcpu").unwrap();
    let bare = simulate(&topo, &hb(), &opt()).unwrap();
    let vm = simulate_vm(&s, &[hb()], &opt()).unwrap();
    let g = &vm.guests[0];
    assert_eq!(g.time_ns, bare.time_ns);
    assert_eq!(g.placement.decision_digest, bare.placement.decision_digest);
    assert_eq!(g.counters.events, bare.counters.events);
    assert_eq!(vm.vm[0].steal_ns, 0);
    assert_eq!(vm.vm[0].vcpu_preemptions, 0);
}

#[test]
fn one_guest_alone_pays_no_host_cost_beyond_its_halt_exits() {
    // without the guest's idle entry path (a wake-up within it skips the
    // halt and its exit latency, which a bare-metal run always pays, so
    // with it a guest may finish first)
    let mut s = spec::preset("vm1x8").unwrap();
    s.guest_idle_entry_ns = 0;
    let topo = topology::preset("kvm-8vcpu").unwrap();
    let bare = simulate(&topo, &hb(), &opt()).unwrap();
    let vm = simulate_vm(&s, &[hb()], &opt()).unwrap();
    let g = &vm.guests[0];
    let v = &vm.vm[0];
    assert_eq!(v.steal_ns, 0, "a guest alone is never pre-empted");
    assert_eq!(v.vcpu_preemptions, 0);
    let entry: u64 = v.vcpus.iter().map(|c| c.entry_ns).sum();
    eprintln!("bare {} vm {} entry {}", bare.time_ns, g.time_ns, entry);
    assert!(entry > 0, "the host charged its wake-ups and entries");
    // every wake-up of a halted vCPU here is another vCPU's IPI: the
    // sender's thread wakes the halted one as it sends (kvm_vcpu_kick), so
    // the host's wake-up, switch and VM entry (about 8 us) run within the
    // guest's measured 20 us halt exit latency instead of after it, and
    // the guest runs as on bare metal
    assert_eq!(g.time_ns, bare.time_ns);
}

#[test]
fn two_saturated_guests_share_the_host_cpus_half_and_half() {
    let s = spec::preset("vm2x8").unwrap();
    let sp = Spin {
        tasks: 8,
        work_ns: 200_000_000,
        mem_mib: 0,
    };
    let vm = simulate_vm(&s, &[sp.clone(), sp], &opt()).unwrap();
    for g in &vm.vm {
        for c in &g.vcpus {
            let total = c.run_ns + c.steal_ns + c.halted_ns;
            let pct = c.steal_ns as f64 * 100.0 / total as f64;
            eprintln!(
                "{} vcpu {} steal {pct:.1}% preemptions {}",
                g.name, c.vcpu, c.preemptions
            );
            assert!(
                (40.0..=60.0).contains(&pct),
                "{} vCPU {}: {pct:.1} %",
                g.name,
                c.vcpu
            );
        }
    }
    // a turn on the host is the host kernel's slice, rounded up to the
    // host tick that notices it is used (plus the switch and entry)
    let slice = sim::placement::linux::Features::kernel("latest")
        .unwrap()
        .base_slice_ns(24);
    let tick = 1_000_000_000 / sim::costs::MachineCosts::for_machine("xeon-12c24t").hz;
    let turn = slice.div_ceil(tick) * tick;
    let p50 = vm.host.preemption_ns.p50;
    eprintln!("{:?} slice {slice} tick {tick}", vm.host.preemption_ns);
    assert!(
        p50 >= turn && p50 <= turn + tick / 10,
        "median pre-emption {p50} ns, the slice rounded to ticks {turn} ns"
    );
}

/// A waker on vCPU 0 computes for `lead` ns, then wakes a task that slept
/// on vCPU 1 (a pipe write, WF_SYNC) and waits for its answer.
struct PingOnce {
    lead: u64,
}

impl sim::workload::Workload for PingOnce {
    fn name(&self) -> &'static str {
        "ping-once"
    }
    fn build<R: sim::rq::RunQueue>(&self, e: &mut sim::engine::Engine<'_, R>, _first: usize) {
        use sim::channel::ChanKind;
        use sim::task::{Op, TaskSpec};
        let a = e.add_channel(ChanKind::Pipe, true);
        let b = e.add_channel(ChanKind::Pipe, true);
        let task = |name: &str, cpu: usize, program: Vec<Op>| TaskSpec {
            name: name.into(),
            program: program.into(),
            mm: 1,
            parent: None,
            spawned: false,
            start_cpu: Some(cpu),
            nice: 0,
            footprint_lines: 0,
        };
        e.add_task(task(
            "waker",
            0,
            vec![
                Op::Compute(self.lead),
                Op::Write { chan: a, bytes: 1 },
                Op::Read { chan: b, bytes: 1 },
                Op::Exit,
            ],
        ));
        e.add_task(task(
            "wakee",
            1,
            vec![
                Op::Read { chan: a, bytes: 1 },
                Op::Compute(10_000),
                Op::Write { chan: b, bytes: 1 },
                Op::Exit,
            ],
        ));
    }
    fn report(&self, rec: &sim::workload::Record) -> sim::workload::Report {
        sim::workload::Report {
            time_ns: rec.end,
            ..Default::default()
        }
    }
}

/// Two vCPUs booted with idle=poll on two host CPUs; a noisy host thread
/// shares host CPU 1 with vCPU 1, so an idle vCPU 1 is pre-empted half the
/// time.
fn scenario_host() -> HostSpec {
    let text = "[host]\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=xeon-12c24t\"\n\
                [[guest]]\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=kvm-8vcpu\"\npin = [0, 1]\nidle = \"poll\"\n\
                [[noisy]]\ntasks = 1\ncpus = \"1\"\npinned = true\n";
    spec::from_toml(text, "scenario").unwrap()
}

fn with_check(on: bool) -> SimOptions {
    kernel_with_check("latest", on)
}

/// Guest kernel `kernel` with the vCPU-preempted check on or off, checked.
fn kernel_with_check(kernel: &str, on: bool) -> SimOptions {
    let mut f = sim::placement::linux::Features::kernel(kernel).unwrap();
    f.set("vcpu_preempt_check", if on { "on" } else { "off" })
        .unwrap();
    SimOptions {
        check: true,
        policy: sim::run::PolicyChoice::Linux(Box::new(f)),
        ..Default::default()
    }
}

#[test]
fn a_wakeup_avoids_a_preempted_idle_vcpu_only_with_the_check() {
    let s = scenario_host();
    let mut seen = 0;
    // wake at several points of the host's alternation between vCPU 1
    // and the noisy thread; the runs are identical up to the wake-up
    for lead_us in (1_000..=30_000).step_by(1_000) {
        let w = PingOnce {
            lead: lead_us * 1_000,
        };
        let off = simulate_vm(&s, std::slice::from_ref(&w), &with_check(false)).unwrap();
        let on = simulate_vm(&s, std::slice::from_ref(&w), &with_check(true)).unwrap();
        let (voff, von) = (&off.vm[0], &on.vm[0]);
        // the initial placements (time 0) are the same in both
        if voff.wakeups_on_preempted == 0 {
            // vCPU 1 was running at the wake-up: both runs place alike
            assert_eq!(
                off.guests[0].placement.decision_digest,
                on.guests[0].placement.decision_digest
            );
            continue;
        }
        seen += 1;
        // off: the wakee went to the pre-empted vCPU 1 and waited for the
        // host to run it again (the noisy thread's turn: ms)
        assert!(voff.wakeups_on_preempted >= 1, "lead {lead_us} us");
        assert!(voff.wait_on_preempted_ns >= 100_000, "{voff:?}");
        // on: it went to the waker's vCPU 0 instead and ran as soon as the
        // waker blocked on its read (us)
        assert_eq!(von.wakeups_on_preempted, 0, "lead {lead_us} us");
        assert!(
            on.guests[0].placement.wake_locality.same_cpu
                > off.guests[0].placement.wake_locality.same_cpu
        );
        assert!(
            von.wakeup_wait_ns < voff.wakeup_wait_ns,
            "on {} off {}",
            von.wakeup_wait_ns,
            voff.wakeup_wait_ns
        );
        assert!(on.guests[0].time_ns < off.guests[0].time_ns);
    }
    assert!(
        seen >= 2,
        "the wake-up met a pre-empted idle vCPU in {seen} runs"
    );
}

#[test]
fn noisy_neighbours_and_floating_vcpus_run_checked() {
    // 8 host threads pinned beside the 8 vCPUs: the guest's busy vCPUs
    // share their host CPUs, so they steal
    let s = spec::preset("vm1x8-noisy").unwrap();
    let sp = Spin {
        tasks: 8,
        work_ns: 50_000_000,
        mem_mib: 0,
    };
    let vm = simulate_vm(&s, std::slice::from_ref(&sp), &opt()).unwrap();
    assert!(vm.vm[0].steal_ns > 0 && vm.vm[0].vcpu_preemptions > 0);
    // two guests floating over the same 4 host CPUs
    let text = "[host]\nmachine = \"smp:sockets=1,cores=4,threads=1,cost=xeon-12c24t\"\n\
                [[guest]]\nmachine = \"smp:sockets=1,cores=4,threads=1,cost=kvm-8vcpu\"\ncpus = \"0-3\"\n\
                [[guest]]\nmachine = \"smp:sockets=1,cores=4,threads=1,cost=kvm-8vcpu\"\ncpus = \"0-3\"\n";
    let s = spec::from_toml(text, "floating").unwrap();
    let a = simulate_vm(&s, &[hb(), hb()], &opt()).unwrap();
    let b = simulate_vm(&s, &[hb(), hb()], &opt()).unwrap();
    assert_eq!(a.guests[1].time_ns, b.guests[1].time_ns, "deterministic");
    assert!(a.vm.iter().all(|g| g.steal_ns > 0));
}

/// A host of 4 CPUs running `noisy` and one 1-vCPU guest described by
/// `guest` (its affinity line), with a spin of `ms` in the guest.
fn small_host(guest: &str, noisy: &str) -> HostSpec {
    let text = format!(
        "[host]\nmachine = \"smp:sockets=1,cores=4,threads=1,cost=xeon-12c24t\"\n\
         [[guest]]\nmachine = \"smp:sockets=1,cores=1,threads=1,cost=kvm-8vcpu\"\n{guest}\n\
         [[noisy]]\n{noisy}\n"
    );
    spec::from_toml(&text, "small").unwrap()
}

fn spin_ms(ms: u64) -> Spin {
    Spin {
        tasks: 1,
        work_ns: ms * 1_000_000,
        mem_mib: 0,
    }
}

#[test]
fn the_host_load_balancer_spreads_noisy_threads_started_on_one_cpu() {
    // two always-runnable host threads allowed on CPUs 0-2, both started
    // on CPU 0; the guest's vCPU is pinned to CPU 3
    let s = small_host("pin = [3]", "tasks = 2\ncpus = \"0-2\"\nstart = 0");
    let vm = simulate_vm(&s, &[spin_ms(50)], &opt()).unwrap();
    let h = &vm.host;
    eprintln!("{:?} {:?}", h.noisy_cpus, h.balance);
    assert!(h.balance.moved >= 1, "{:?}", h.balance);
    assert_ne!(
        h.noisy_cpus[0], h.noisy_cpus[1],
        "the balancer left both threads on one CPU"
    );
    assert!(h.noisy_cpus.iter().all(|&c| c <= 2), "{:?}", h.noisy_cpus);
    // the guest alone on its CPU: no steal
    assert_eq!(vm.vm[0].steal_ns, 0);
    let again = simulate_vm(&s, &[spin_ms(50)], &opt()).unwrap();
    assert_eq!(again.host.balance, h.balance, "deterministic");
}

#[test]
fn a_floating_vcpu_wakes_on_the_idle_cpu_select_idle_sibling_finds() {
    // a host thread runs on CPU 0 all the time; the vCPU floats over 0-3
    // and last ran on CPU 0 (its first allowed CPU). Its first wake-up is
    // the guest's own timer (a host hrtimer on CPU 0, no waker):
    // select_task_rq_fair goes to select_idle_sibling(prev 0, target 0),
    // which finds neither target nor prev idle, recent_used_cpu is prev,
    // and select_idle_cpu scans the LLC from target + 1: CPU 1.
    let s = small_host("cpus = \"0-3\"", "tasks = 1\ncpus = \"0\"\npinned = true");
    let vm = simulate_vm(&s, &[spin_ms(5)], &opt()).unwrap();
    let v = &vm.vm[0].vcpus[0];
    eprintln!("{:?} {:?}", vm.host.wakeup_stages, v);
    assert_eq!(v.host_cpu, 1);
    assert_eq!(v.host_migrations, 1);
    assert_eq!(vm.host.wakeup_stages.get("idle_cpu_in_llc"), Some(&1));
    assert_eq!(v.steal_ns, 0, "it never waited behind the noisy thread");
}

#[test]
fn a_vcpu_woken_by_another_vcpus_ipi_is_woken_by_that_vcpus_thread() {
    // hackbench's wake-ups cross vCPUs: the sender's thread wakes the
    // halted vCPU's thread (kvm_vcpu_kick) from its own host CPU
    let s = spec::preset("vm1x8").unwrap();
    let vm = simulate_vm(&s, &[hb()], &opt()).unwrap();
    let w = &vm.host.wake_locality;
    eprintln!("{w:?}");
    assert!(w.same_llc > 0, "{w:?}");
    // pinned 1:1, a vCPU never lands on its sender's host CPU
    assert_eq!(w.same_cpu, 0, "{w:?}");
    // compute-only tasks never wake each other: the vCPUs' only wake-ups
    // are their own (boot kicks, timers), which have no waking thread
    let vm = simulate_vm(&s, &[spin_ms(5)], &opt()).unwrap();
    let w = &vm.host.wake_locality;
    assert_eq!(
        w.same_cpu + w.same_cluster + w.same_llc + w.other_llc,
        0,
        "{w:?}"
    );
}

/// A host switch-in costs what the engine charges a task: the switch, the
/// mm switch when the CPU last ran another process, and the refill by
/// reuse distance; a vCPU adds the VM entry. A vCPU and one noisy thread
/// on one host CPU alternate (one other thread in between: no refill); with
/// two noisy threads, each of the vCPU's later turns follows two others
/// (refill after 2 others, halfway to the table's 3-others point).
#[test]
fn a_host_switch_in_pays_the_mm_switch_and_the_refill_by_reuse_distance() {
    let c = sim::costs::MachineCosts::for_machine("xeon-12c24t");
    let turn = c.ctx_switch_ns + spec::EXIT_ENTRY_NS + c.mm_switch_extra_ns;
    let s = small_host("pin = [0]", "tasks = 1\ncpus = \"0\"");
    let vm = simulate_vm(&s, &[spin_ms(50)], &opt()).unwrap();
    let v = &vm.vm[0].vcpus[0];
    assert!(v.preemptions >= 10, "{v:?}");
    assert_eq!(v.entry_ns, (v.preemptions + 1) * turn, "{v:?}");
    let s = small_host("pin = [0]", "tasks = 2\ncpus = \"0\"");
    let vm = simulate_vm(&s, &[spin_ms(50)], &opt()).unwrap();
    let v = &vm.vm[0].vcpus[0];
    let refill = c.switch_refill(2, true);
    assert_eq!(refill, c.refill_process_ns[0] / 2);
    let extra = v.entry_ns - (v.preemptions + 1) * turn;
    // the first turn refills nothing (the thread never ran), every later
    // one after two others at most
    assert!(
        extra.is_multiple_of(refill) && extra >= refill && extra <= v.preemptions * refill,
        "{v:?}: {extra} beyond the switches"
    );
}

/// Two guests on 2 host CPUs: guest `a` (2 vCPUs pinned to host CPUs 0
/// and 1) runs a pipe hackbench whose vCPUs halt briefly and often (so
/// KVM's adaptive window has them halt-poll), guest `b` (1 vCPU pinned to
/// host CPU 1) runs one too and keeps waking on vCPU 1's host CPU; the
/// host runs `kernel`.
fn shared_cpu_host(kernel: &str) -> HostSpec {
    let text = format!(
        "[host]\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=xeon-12c24t\"\nkernel = \"{kernel}\"\n\
         [[guest]]\nname = \"a\"\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=kvm-8vcpu\"\npin = [0, 1]\n\
         [[guest]]\nname = \"b\"\nmachine = \"smp:sockets=1,cores=1,threads=1,cost=kvm-8vcpu\"\npin = [1]\n"
    );
    spec::from_toml(&text, "shared").unwrap()
}

fn small_hb(groups: u32) -> Hackbench {
    Hackbench {
        groups,
        fds: 2,
        loops: 200,
        pipe: true,
        threads: true,
        ..Default::default()
    }
}

fn check_on_418(on: bool) -> SimOptions {
    kernel_with_check("linux-4.18", on)
}

#[test]
fn a_halt_polling_vcpu_scheduled_out_is_flagged_by_a_4_18_host_only() {
    let w = [small_hb(1), small_hb(1)];
    let old = simulate_vm(&shared_cpu_host("linux-4.18"), &w, &check_on_418(false)).unwrap();
    let new = simulate_vm(&shared_cpu_host("linux-6.6"), &w, &check_on_418(false)).unwrap();
    let (fo, fnew) = (&old.vm[0].flagged, &new.vm[0].flagged);
    eprintln!("4.18 host {fo:?}\n6.6 host {fnew:?}");
    // kvm_arch_vcpu_put of 4.18 writes the flag at every sched-out: a
    // vCPU that stopped polling because guest b's vCPU became runnable on
    // its host CPU, or that blocked in HLT, is flagged
    assert!(fo.halt_polling > 0, "{fo:?}");
    assert!(fo.halted > 0, "{fo:?}");
    // from 5.19 only a pre-emption of guest code is: never a halted vCPU
    assert_eq!((fnew.halt_polling, fnew.halted), (0, 0), "{fnew:?}");
    // and the wake-ups see it: with the check off, wake-ups land on
    // flagged idle vCPUs; with it on, the check turns them down
    assert!(old.vm[0].wakeups_on_preempted > 0);
    assert_eq!(old.vm[0].preempted_idle_rejected, 0, "the check is off");
    let on = simulate_vm(&shared_cpu_host("linux-4.18"), &w, &check_on_418(true)).unwrap();
    let v = &on.vm[0];
    eprintln!(
        "check on: rejected {} in {} wake-ups, on pre-empted {} (off: {})",
        v.preempted_idle_rejected,
        v.wakeups_redirected,
        v.wakeups_on_preempted,
        old.vm[0].wakeups_on_preempted
    );
    assert!(v.wakeups_redirected > 0 && v.preempted_idle_rejected >= v.wakeups_redirected);
    assert!(v.wakeups_on_preempted < old.vm[0].wakeups_on_preempted);
}

#[test]
fn a_halted_vcpu_is_not_flagged_by_a_5_19_host() {
    // one guest alone: nothing pre-empts its vCPUs, which halt and block
    let mut s = spec::preset("vm1x8").unwrap();
    s.kernel = "linux-5.19".into();
    let vm = simulate_vm(&s, &[hb()], &check_on_418(true)).unwrap();
    let v = &vm.vm[0];
    assert_eq!(v.flagged, sim::engine::FlaggedBy::default());
    assert_eq!(v.preempted_idle_rejected, 0);
    assert_eq!(v.wakeups_on_preempted, 0);
    // the same guest under a 5.18 host: every block in HLT is flagged
    // (each vCPU once at boot too), and the check turns idle vCPUs down
    s.kernel = "linux-5.18".into();
    let vm = simulate_vm(&s, &[hb()], &check_on_418(true)).unwrap();
    let v = &vm.vm[0];
    eprintln!("{:?} rejected {}", v.flagged, v.preempted_idle_rejected);
    assert!(v.flagged.halted >= 8, "{:?}", v.flagged);
    assert_eq!(v.flagged.running, 0, "alone: never pre-empted running");
    assert!(v.preempted_idle_rejected > 0);
}

/// One task on vCPU 1 that computes 200 us, then sleeps 1 ms or 3 ms in
/// turn, 50 times.
struct SleepLoop;

impl sim::workload::Workload for SleepLoop {
    fn name(&self) -> &'static str {
        "sleep-loop"
    }
    fn build<R: sim::rq::RunQueue>(&self, e: &mut sim::engine::Engine<'_, R>, _first: usize) {
        use sim::task::{Op, TaskSpec};
        let mut program = Vec::new();
        for i in 0..50 {
            program.push(Op::Compute(200_000));
            program.push(Op::Sleep(if i % 2 == 0 { 1_000_000 } else { 3_000_000 }));
        }
        program.push(Op::Exit);
        e.add_task(TaskSpec {
            name: "sleeper".into(),
            program: program.into(),
            mm: 1,
            parent: None,
            spawned: false,
            start_cpu: Some(1),
            nice: 0,
            footprint_lines: 0,
        });
    }
    fn report(&self, rec: &sim::workload::Record) -> sim::workload::Report {
        sim::workload::Report {
            time_ns: rec.end,
            ..Default::default()
        }
    }
}

#[test]
fn a_vcpu_preempted_in_its_idle_entry_path_is_flagged_and_halts_later() {
    // vCPU 1 shares host CPU 1 with an always-runnable host thread; its
    // idle entry path is made long (2 ms, against the task's 1 ms and
    // 3 ms sleeps) so that the host takes the vCPU in it
    let text = "[host]\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=xeon-12c24t\"\nguest_idle_entry_ns = 2000000\n\
                [[guest]]\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=kvm-8vcpu\"\npin = [0, 1]\n\
                [[noisy]]\ntasks = 1\ncpus = \"1\"\npinned = true\n";
    let s = spec::from_toml(text, "entry").unwrap();
    let vm = simulate_vm(&s, &[SleepLoop], &opt()).unwrap();
    let v = &vm.vm[0];
    eprintln!("{:?} {:?}", v.flagged, v.vcpus[1]);
    assert!(v.flagged.idle_entry > 0, "{:?}", v.flagged);
    // the path resumed and reached its HLT in the 3 ms sleeps
    assert!(v.vcpus[1].halted_ns > 0);
    // without the noisy thread: a 1 ms sleep never halts (the timer
    // fires within the path), a 3 ms one halts after 2 ms
    let alone = |entry: u64| {
        let t = format!(
            "[host]\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=xeon-12c24t\"\nguest_idle_entry_ns = {entry}\n\
             [[guest]]\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=kvm-8vcpu\"\npin = [0, 1]\n"
        );
        simulate_vm(&spec::from_toml(&t, "alone").unwrap(), &[SleepLoop], &opt()).unwrap()
    };
    let (zero, long) = (alone(0), alone(2_000_000));
    let halted = |r: &sim::host::run::VmResult| r.vm[0].vcpus[1].halted_ns;
    eprintln!(
        "halted: entry 0 {} entry 2 ms {}",
        halted(&zero),
        halted(&long)
    );
    assert!(halted(&long) < halted(&zero));
    assert_eq!(long.vm[0].flagged, sim::engine::FlaggedBy::default());
}
