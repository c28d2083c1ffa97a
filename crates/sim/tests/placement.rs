//! Whole-run checks of the Linux wake-up path through the engine: cost-only
//! patches change cost but not decisions (lockstep under `--costs off`), and
//! decision-changing features change placement.

use sim::placement::linux::Features;
use sim::run::{simulate_hackbench, PolicyChoice, SimOptions, SimResult};
use sim::workload::hackbench::Hackbench;

fn run(
    machine: &str,
    kernel: &str,
    feature: Option<(&str, &str)>,
    costs: bool,
    hb: &Hackbench,
) -> SimResult {
    let topo = topology::preset(machine).unwrap();
    let mut f = Features::kernel(kernel).unwrap();
    if let Some((k, v)) = feature {
        f.set(k, v).unwrap();
    }
    let opt = SimOptions {
        policy: PolicyChoice::Linux(Box::new(f)),
        costs,
        check: true,
        ..Default::default()
    };
    simulate_hackbench(&topo, hb, &opt).unwrap()
}

fn hb(groups: u32, loops: u32) -> Hackbench {
    Hackbench {
        groups,
        loops,
        pipe: true,
        threads: true,
        ..Default::default()
    }
}

/// c8987ae5af79 on a machine without SMT: the has_idle_cores read goes away,
/// decisions stay (lockstep with costs off).
#[test]
fn test_idle_cores_smt_gate_is_cost_only() {
    let h = hb(2, 100);
    let off = run(
        "kunpeng920-node",
        "linux-5.12",
        Some(("test_idle_cores_smt_gate", "off")),
        false,
        &h,
    );
    let on = run(
        "kunpeng920-node",
        "linux-5.12",
        Some(("test_idle_cores_smt_gate", "on")),
        false,
        &h,
    );
    assert_eq!(off.placement.decision_digest, on.placement.decision_digest);
    assert!(off.placement.has_idle_cores_reads > 0);
    assert_eq!(on.placement.has_idle_cores_reads, 0);
    let off_c = run(
        "kunpeng920-node",
        "linux-5.12",
        Some(("test_idle_cores_smt_gate", "off")),
        true,
        &h,
    );
    let on_c = run(
        "kunpeng920-node",
        "linux-5.12",
        Some(("test_idle_cores_smt_gate", "on")),
        true,
        &h,
    );
    assert!(off_c.placement.has_idle_cores_reads > 0 && on_c.placement.has_idle_cores_reads == 0);
    assert_ne!(off_c.placement.probe_cost_ns, on_c.placement.probe_cost_ns);
    // From 5.13 the caller is gated by sched_smt_active() too: reverting
    // c8987ae5af79 alone reads nothing on a machine without SMT.
    let r = run(
        "kunpeng920-node",
        "linux-5.13",
        Some(("test_idle_cores_smt_gate", "off")),
        false,
        &h,
    );
    assert_eq!(r.placement.has_idle_cores_reads, 0);
}

/// bec2860a2bd6 on POWER9 SMT8: fewer probes per select_idle_core call, same
/// decisions with costs off.
#[test]
fn select_idle_core_early_break_is_cost_only() {
    let h = hb(4, 100);
    let off = run(
        "power9-smt8",
        "linux-5.6",
        Some(("select_idle_core_early_break", "off")),
        false,
        &h,
    );
    let on = run(
        "power9-smt8",
        "linux-5.6",
        Some(("select_idle_core_early_break", "on")),
        false,
        &h,
    );
    assert_eq!(off.placement.decision_digest, on.placement.decision_digest);
    let (p_off, p_on) = (
        &off.placement.select_idle_core_probes,
        &on.placement.select_idle_core_probes,
    );
    assert!(p_off.count > 0 && p_off.count == p_on.count);
    assert!(
        p_on.mean < p_off.mean,
        "early break {} vs full {}",
        p_on.mean,
        p_off.mean
    );
    let off_c = run(
        "power9-smt8",
        "linux-5.6",
        Some(("select_idle_core_early_break", "off")),
        true,
        &h,
    );
    let on_c = run(
        "power9-smt8",
        "linux-5.6",
        Some(("select_idle_core_early_break", "on")),
        true,
        &h,
    );
    assert!(
        on_c.placement.select_idle_core_cost_ns.mean
            < off_c.placement.select_idle_core_cost_ns.mean
    );
}

/// The 6.7 cluster scan changes decisions: wake-ups found in a cluster.
#[test]
fn cluster_scan_finds_cpus_in_the_cluster() {
    let h = hb(2, 100);
    let old = run("kunpeng920", "linux-6.6", None, true, &h);
    let new = run("kunpeng920", "linux-6.7", None, true, &h);
    assert!(!old.placement.stages.contains_key("idle_cpu_in_cluster"));
    assert!(
        new.placement
            .stages
            .get("idle_cpu_in_cluster")
            .copied()
            .unwrap_or(0)
            > 0
    );
    assert_ne!(old.placement.decision_digest, new.placement.decision_digest);
    // 6.7 with both cluster features off is 6.6 again
    let mut f = Features::kernel("linux-6.7").unwrap();
    f.set("cluster_scan", "off").unwrap();
    f.set("cluster_prev_fallback", "off").unwrap();
    let topo = topology::preset("kunpeng920").unwrap();
    let opt = SimOptions {
        policy: PolicyChoice::Linux(Box::new(f)),
        ..Default::default()
    };
    let back = simulate_hackbench(&topo, &h, &opt).unwrap();
    assert_eq!(
        back.placement.decision_digest,
        old.placement.decision_digest
    );
}

/// Every kernel profile runs hackbench with the invariants checked.
#[test]
fn every_kernel_profile_runs() {
    let h = Hackbench {
        groups: 1,
        fds: 4,
        loops: 20,
        ..Default::default()
    };
    for (k, _) in Features::kernels() {
        for m in ["xeon-12c24t", "kunpeng920"] {
            let r = run(m, k, None, true, &h);
            assert_eq!(r.counters.bytes_read, h.total_bytes(), "{k} on {m}");
        }
    }
}

/// SIS_UTIL (6.0+): on a saturated LLC (kvm-8vcpu: 8 CPUs, 640 tasks) the
/// scan is skipped (nr_idle_scan 0); on a lightly loaded one (24 CPUs, 40
/// tasks, about half busy) it always scans; with SIS_UTIL off it always scans.
#[test]
fn sis_util_stops_scanning_a_saturated_llc() {
    let busy = hb(16, 100);
    let light = hb(1, 100);
    let sat = run("kvm-8vcpu", "linux-6.7", None, true, &busy);
    assert!(
        sat.placement.sis_util_no_scan > 0,
        "no skipped scan on a saturated LLC"
    );
    assert!(
        sat.placement
            .stages
            .get("no_idle_found")
            .copied()
            .unwrap_or(0)
            > 0
    );
    let lt = run("kunpeng920-node", "linux-6.7", None, true, &light);
    assert!(lt.placement.nr_idle_scan_reads > 0);
    assert_eq!(lt.placement.sis_util_no_scan, 0);
    let off = run(
        "kvm-8vcpu",
        "linux-6.7",
        Some(("sis_util", "off")),
        true,
        &busy,
    );
    assert_eq!(off.placement.sis_util_no_scan, 0);
    assert_eq!(off.placement.nr_idle_scan_reads, 0);
}
