//! The idle loop per cpuidle configuration and kernel version: what it does
//! with the tick and with wake-ups (kernel/sched/idle.c cpuidle_idle_call,
//! the menu and haltpoll governors, cpuidle's POLL state, the 4.17 idle-loop
//! rework, the next-timer input of the governors).

use sim::costs::MachineCosts;
use sim::cpuidle::Cpuidle;
use sim::engine::{Engine, EngineConfig};
use sim::placement::linux::Features;
use sim::placement::scx::ScxDefault;
use sim::run::{simulate_hackbench, simulate_schbench, PolicyChoice, SimOptions, SimResult};
use sim::task::{Op, TaskSpec};
use sim::workload::hackbench::Hackbench;
use sim::workload::schbench::SchbenchSim;
use topology::{CpuMask, DomainOptions, SchedDomains};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

fn opts(kernel: &str, features: &[(&str, &str)], cpuidle: Option<&str>) -> SimOptions {
    let mut f = Features::kernel(kernel).unwrap();
    for (k, v) in features {
        f.set(k, v).unwrap();
    }
    SimOptions {
        check: true,
        policy: PolicyChoice::Linux(Box::new(f)),
        cpuidle: cpuidle.map(|s| s.parse::<Cpuidle>().unwrap()),
        ..Default::default()
    }
}

fn hackbench(machine: &str, opt: &SimOptions) -> SimResult {
    let topo = topology::preset(machine).unwrap();
    let hb = Hackbench {
        groups: 2,
        fds: 4,
        loops: 200,
        datasize: 8000,
        pipe: true,
        threads: true,
    };
    simulate_hackbench(&topo, &hb, opt).unwrap()
}

fn run(machine: &str, cpuidle: Option<&str>) -> SimResult {
    hackbench(machine, &opts("latest", &[], cpuidle))
}

/// Without a driver every idle period offers the tick for stopping, and
/// it stops: every idle exit follows a stopped tick. With menu,
/// hackbench's short idle periods are predicted under a tick, so the tick
/// is mostly kept. A driver with a single state leaves menu no choice: it
/// stops the tick as without a driver (menu_select's `state_count <= 1`
/// return).
#[test]
fn no_driver_stops_the_tick_at_every_idle_entry_menu_mostly_keeps_it() {
    let none = run("xeon-12c24t", Some("none"));
    // CPUs start the run idle with the tick stopped: one exit each without
    // a stop of this run
    let cpus = 24;
    assert!(none.counters.idle_exits > 100, "{:?}", none.counters);
    assert!(
        none.counters.tick_stops + cpus >= none.counters.idle_exits,
        "{:?}",
        none.counters
    );
    let menu = run("xeon-12c24t", None);
    assert_eq!(
        Cpuidle::for_machine("xeon-12c24t").0.to_string(),
        "intel_idle:menu"
    );
    // mostly kept: stopped at fewer than one idle entry in three (the
    // runs' idle patterns differ, so the count is compared with menu's own
    // idle exits, not with the other run's stops)
    assert!(
        menu.counters.idle_exits > 100 && menu.counters.tick_stops * 3 < menu.counters.idle_exits,
        "menu stopped the tick {} times in {} idle exits (none: {})",
        menu.counters.tick_stops,
        menu.counters.idle_exits,
        none.counters.tick_stops
    );
    assert_eq!(none.counters.polled_wakeups, 0);
    // Kunpeng 920's table is WFI alone (no POLL on arm64)
    let one = run("kunpeng920-node", Some("acpi_idle:menu"));
    let wfi = run("kunpeng920-node", None);
    assert_eq!(Cpuidle::for_machine("kunpeng920-node").0, Cpuidle::NONE);
    assert_eq!(one.counters.tick_stops, wfi.counters.tick_stops);
    assert_eq!(one.placement.decision_digest, wfi.placement.decision_digest);
}

/// intel_idle, and acpi_idle on x86, register cpuidle's POLL as state 0:
/// menu picks it for the shortest idle periods and a wake-up finds the CPU
/// polling (no IPI, no exit latency). acpi_idle on arm64 (LPI) has no POLL,
/// nor does a machine without a driver.
#[test]
fn intel_idle_and_x86_acpi_idle_poll_first_arm64_acpi_idle_does_not() {
    let spr = run("sapphire-rapids", None);
    assert!(spr.counters.polled_wakeups > 0, "{:?}", spr.counters);
    assert_eq!(
        run("sapphire-rapids", Some("none")).counters.polled_wakeups,
        0
    );
    assert_eq!(
        Cpuidle::for_machine("epyc-zen3").0.to_string(),
        "acpi_idle:menu"
    );
    assert!(run("epyc-zen3", None).counters.polled_wakeups > 0);
    assert_eq!(
        Cpuidle::for_machine("altra").0.to_string(),
        "acpi_idle:menu"
    );
    assert_eq!(run("altra", None).counters.polled_wakeups, 0);
    // schbench on an intel_idle machine: its workers' wake-ups find
    // polling CPUs too
    let topo = topology::preset("xeon-12c24t").unwrap();
    let mut sb = SchbenchSim::new_version();
    sb.bench.message_threads = 2;
    sb.bench.worker_threads = Some(8);
    sb.bench.runtime = 1;
    let r = simulate_schbench(&topo, &sb, &opts("latest", &[], None)).unwrap();
    assert!(r.counters.polled_wakeups > 0, "{:?}", r.counters);
    let r = simulate_schbench(&topo, &sb, &opts("latest", &[], Some("none"))).unwrap();
    assert_eq!(r.counters.polled_wakeups, 0);
}

/// Up to 4.16 the idle loop stopped the tick at idle entry, before the
/// governor ran: every idle period stops it, as without a driver. From
/// 4.17 (554c8aa8ecad) menu keeps it for hackbench's short predicted idle
/// periods. The toggle alone makes the difference.
#[test]
fn linux_4_16_stops_the_tick_at_every_idle_entry_later_kernels_keep_it() {
    let cpus = 24;
    let old = hackbench("xeon-12c24t", &opts("linux-4.16", &[], None));
    assert!(old.counters.idle_exits > 100, "{:?}", old.counters);
    assert!(
        old.counters.tick_stops + cpus >= old.counters.idle_exits,
        "{:?}",
        old.counters
    );
    for new in [
        hackbench("xeon-12c24t", &opts("linux-5.15", &[], None)),
        hackbench(
            "xeon-12c24t",
            &opts("linux-4.16", &[("idle_tick_stop", "governor")], None),
        ),
    ] {
        // mostly kept (see above)
        assert!(
            new.counters.idle_exits > 100 && new.counters.tick_stops * 3 < new.counters.idle_exits,
            "stopped {} times in {} idle exits (4.16: {} in {})",
            new.counters.tick_stops,
            new.counters.idle_exits,
            old.counters.tick_stops,
            old.counters.idle_exits
        );
    }
    // and the LLC's nr_busy_cpus is written at every idle entry (without a
    // balancer the engine keeps it: one write at entry, one at the wake)
    let off = [("load_balance", "off")];
    let old = hackbench("xeon-12c24t", &opts("linux-4.16", &off, None));
    let new = hackbench("xeon-12c24t", &opts("linux-5.15", &off, None));
    assert!(
        old.placement.llc_shared_writes >= 2 * (old.counters.idle_exits - cpus),
        "{:?} {:?}",
        old.placement,
        old.counters
    );
    assert!(new.placement.llc_shared_writes * 4 < old.placement.llc_shared_writes);
}

/// One task on CPU 0 of a Xeon (intel_idle, menu, latest kernel) computes
/// 20 us and sleeps `sleep`, `n` times, without a load balancer; returns
/// (tick stops, polled wake-ups).
fn sleeper(cpuidle: &str, sleep: u64, n: u32, f: &[(&str, &str)]) -> (u64, u64) {
    let topo = topology::preset("xeon-12c24t").unwrap();
    let sd = SchedDomains::build(&topo, &DomainOptions::default());
    let mut cfg = EngineConfig::checked(CpuMask::parse_list("0").unwrap());
    cfg.cpuidle = cpuidle.parse().unwrap();
    let mut features = Features::kernel("latest").unwrap();
    for (k, v) in f {
        features.set(k, v).unwrap();
    }
    cfg.idle_loop = features.idle;
    let costs = MachineCosts::for_machine("xeon-12c24t");
    let mut e: Engine = Engine::new(&topo, &sd, costs, cfg, Box::new(ScxDefault));
    e.add_task(TaskSpec {
        name: "sleeper".into(),
        program: vec![
            Op::Loop(n),
            Op::Compute(20 * US),
            Op::USleep(sleep),
            Op::EndLoop,
            Op::Exit,
        ]
        .into(),
        mm: 0,
        parent: None,
        spawned: false,
        start_cpu: Some(0),
        nice: 0,
        footprint_lines: 0,
    });
    e.run().unwrap();
    (e.counters.tick_stops, e.counters.polled_wakeups)
}

/// A CPU whose next timer is due within a tick keeps the tick: menu bounds
/// its prediction by the time to the next timer (tick_nohz_get_sleep_length
/// takes the sleeping task's hrtimer into account), so a 200 us sleep never
/// lets it stop, while a 20 ms one does at nearly every sleep. Without a
/// driver the tick stops whatever the timer: the next-timer test of
/// tick_nohz_next_event sees only timer-wheel timers when high-resolution
/// timers are on, and a sleep is an hrtimer.
#[test]
fn a_cpu_whose_next_timer_is_within_a_tick_keeps_the_tick() {
    let n = 100;
    let (short, _) = sleeper("intel_idle:menu", 200 * US, n, &[]);
    assert!(short <= 2, "{short} tick stops");
    let (long, _) = sleeper("intel_idle:menu", 20 * MS, n, &[]);
    assert!(long >= n as u64 / 2, "{long} tick stops");
    let (none, _) = sleeper("none", 200 * US, n, &[]);
    assert!(none >= n as u64, "{none} tick stops");
    // teo takes the same bound
    let (teo, _) = sleeper("intel_idle:teo", 200 * US, n, &[]);
    assert!(teo <= 2, "{teo} tick stops");
}

/// cpuidle's POLL is bounded (5.11+: the first state's residency of at
/// least 10 us, 20 us on this Xeon): a CPU that picked POLL and is not
/// woken within it makes the governor choose again, and a history of such
/// timeouts leads it to a real state, so a CPU sleeping 5 ms at a time is
/// not found polling. Without the limit (4.16's poll_idle) the first
/// sleeps, predicted short from an empty history, are spent polling and
/// their wake-ups are polled ones.
#[test]
fn a_poll_that_times_out_lets_the_governor_choose_again() {
    let n = 20;
    let (_, limited) = sleeper("intel_idle:menu", 5 * MS, n, &[]);
    assert_eq!(limited, 0);
    let (_, unlimited) = sleeper("intel_idle:menu", 5 * MS, n, &[("poll_limit", "none")]);
    assert!(unlimited >= 5, "{unlimited} polled wake-ups");
}

/// haltpoll: after the first halts the poll limit grows and later idle
/// periods poll, so wake-ups find polling CPUs (no IPI), and only the
/// idle periods that outlast the poll stop the tick.
#[test]
fn haltpoll_polls_after_it_learns_and_polled_wakeups_skip_the_ipi() {
    let hp = run("kvm-8vcpu", Some("haltpoll"));
    assert!(hp.counters.polled_wakeups > 0, "{:?}", hp.counters);
    let none = run("kvm-8vcpu", None);
    assert_eq!(none.counters.polled_wakeups, 0);
    assert!(hp.counters.tick_stops < none.counters.tick_stops);
}

/// `--costs off` keeps decisions comparable: haltpoll never polls then
/// (no cost means nothing to learn from), so the digest is the no-driver
/// one.
#[test]
fn costs_off_haltpoll_is_plain_halt() {
    let topo = topology::preset("kvm-8vcpu").unwrap();
    let hb = Hackbench {
        groups: 1,
        fds: 3,
        loops: 50,
        pipe: true,
        threads: true,
        ..Default::default()
    };
    let r = |c: &str| {
        let opt = SimOptions {
            costs: false,
            cpuidle: Some(c.parse().unwrap()),
            ..Default::default()
        };
        simulate_hackbench(&topo, &hb, &opt).unwrap()
    };
    assert_eq!(
        r("haltpoll").placement.decision_digest,
        r("none").placement.decision_digest
    );
}
