//! The idle loop per cpuidle configuration: what it does with the tick and
//! with wake-ups (kernel/sched/idle.c cpuidle_idle_call, the menu and
//! haltpoll governors).

use sim::cpuidle::Cpuidle;
use sim::run::{simulate_hackbench, SimOptions, SimResult};
use sim::workload::hackbench::Hackbench;

fn run(machine: &str, cpuidle: Option<&str>) -> SimResult {
    let topo = topology::preset(machine).unwrap();
    let hb = Hackbench {
        groups: 2,
        fds: 4,
        loops: 200,
        datasize: 8000,
        pipe: true,
        threads: true,
    };
    let opt = SimOptions {
        check: true,
        cpuidle: cpuidle.map(|s| s.parse::<Cpuidle>().unwrap()),
        ..Default::default()
    };
    simulate_hackbench(&topo, &hb, &opt).unwrap()
}

/// Without a driver every idle period offers the tick for stopping, and
/// (no timer due within a tick being modelled) it stops: every idle exit
/// follows a stopped tick. With menu, hackbench's short idle periods are
/// predicted under a tick, so the tick is mostly kept.
#[test]
fn no_driver_stops_the_tick_at_every_idle_entry_menu_mostly_keeps_it() {
    let none = run("kunpeng920-node", None);
    assert_eq!(Cpuidle::for_machine("kunpeng920-node").0, Cpuidle::NONE);
    // CPUs start the run idle with the tick stopped: one exit each without
    // a stop of this run
    let cpus = 24;
    assert!(none.counters.idle_exits > 100, "{:?}", none.counters);
    assert!(
        none.counters.tick_stops + cpus >= none.counters.idle_exits,
        "{:?}",
        none.counters
    );
    let menu = run("kunpeng920-node", Some("acpi_idle:menu"));
    assert!(
        menu.counters.tick_stops * 4 < none.counters.tick_stops,
        "menu {} against none {}",
        menu.counters.tick_stops,
        none.counters.tick_stops
    );
    assert_eq!(
        (none.counters.polled_wakeups, menu.counters.polled_wakeups),
        (0, 0)
    );
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
