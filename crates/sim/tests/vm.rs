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
fn one_guest_alone_costs_at_most_its_exits_and_entries() {
    let s = spec::preset("vm1x8").unwrap();
    let topo = topology::preset("kvm-8vcpu").unwrap();
    let bare = simulate(&topo, &hb(), &opt()).unwrap();
    let vm = simulate_vm(&s, &[hb()], &opt()).unwrap();
    let g = &vm.guests[0];
    let v = &vm.vm[0];
    assert_eq!(v.steal_ns, 0, "a guest alone is never pre-empted");
    assert_eq!(v.vcpu_preemptions, 0);
    let entry: u64 = v.vcpus.iter().map(|c| c.entry_ns).sum();
    eprintln!("bare {} vm {} entry {}", bare.time_ns, g.time_ns, entry);
    assert!(g.time_ns >= bare.time_ns);
    assert!(
        g.time_ns - bare.time_ns <= entry,
        "{} - {} > {entry}",
        g.time_ns,
        bare.time_ns
    );
}

#[test]
fn two_saturated_guests_share_the_host_cpus_half_and_half() {
    let s = spec::preset("vm2x8").unwrap();
    let sp = Spin {
        tasks: 8,
        work_ns: 200_000_000,
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
        }
    }
    eprintln!("{:?}", vm.host.preemption_ns);
}
