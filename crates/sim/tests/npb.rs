//! The NPB models end to end: every kernel runs, deterministically, with
//! teams smaller and larger than the machine and than LU's rows.

use sim::run::simulate_npb as simulate;
use sim::run::{SimOptions, SimResult};
use sim::workload::npb::{Class, Kernel, Npb};
use topology::CpuMask;

fn run(machine: &str, kernel: Kernel, class: Class, threads: u32, cpus: Option<&str>) -> SimResult {
    let topo = topology::preset(machine).unwrap();
    let opt = SimOptions {
        cpus: cpus.map(|c| CpuMask::parse_list(c).unwrap()),
        ..SimOptions::default()
    };
    let ncpus = opt.cpus.as_ref().map_or(topo.nr_cpus(), |m| m.weight());
    let npb = Npb::new(kernel, class, threads, ncpus);
    simulate(&topo, &npb, &opt).unwrap_or_else(|e| panic!("{kernel:?}: {e}"))
}

/// Every kernel's class S runs to its end on two nodes and reports a time
/// and a Mop/s; the same run gives the same record.
#[test]
fn every_kernel_runs_class_s() {
    for k in Kernel::ALL {
        let r = run("xeon-12c24t", k, Class::S, 8, None);
        assert!(r.time_ns > 0, "{k:?}");
        let npb = &r.workload["npb"];
        assert_eq!(npb["bench"], k.name());
        assert!(npb["mops_total"].as_f64().unwrap() > 0.0, "{k:?}");
        assert!(r.text.contains(" Benchmark Completed."), "{k:?}");
        // the master and its seven pool threads ran
        assert!(r.user_s > 0.0);
        let again = run("xeon-12c24t", k, Class::S, 8, None);
        assert_eq!(
            (r.time_ns, r.sim_ns),
            (again.time_ns, again.sim_ns),
            "{k:?}"
        );
    }
}

/// LU's wavefront with more threads than interior rows: only the threads
/// with rows take part in the flag chain, and the run ends.
#[test]
fn lu_with_more_threads_than_rows() {
    // class S: 12 points, 10 interior rows; 16 threads
    let r = run("xeon-12c24t", Kernel::Lu, Class::S, 16, None);
    assert!(r.time_ns > 0);
}

/// More threads than CPUs (libgomp's throttled spin): still runs, and
/// slower than a team that fits.
#[test]
fn oversubscribed_team_runs() {
    let fit = run("xeon-12c24t", Kernel::Bt, Class::S, 4, Some("0-3"));
    let over = run("xeon-12c24t", Kernel::Bt, Class::S, 8, Some("0-3"));
    assert!(over.time_ns > 0 && fit.time_ns > 0);
    assert!(
        over.time_ns as f64 > 0.9 * fit.time_ns as f64,
        "8 threads on 4 CPUs {} vs 4 threads {}",
        over.time_ns,
        fit.time_ns
    );
}

/// EP is compute only: its time is its operations over the team.
#[test]
fn ep_time_follows_its_operation_count() {
    let one = run("xeon-12c24t", Kernel::Ep, Class::S, 1, Some("0"));
    let four = run("xeon-12c24t", Kernel::Ep, Class::S, 4, Some("0-3"));
    // 2^25 numbers x 40 operations at 2.2 GHz: 0.61 s on one thread
    let expect = (1u64 << 25) as f64 * 40.0 / 2.2;
    let t1 = one.time_ns as f64;
    assert!((t1 / expect - 1.0).abs() < 0.02, "{t1} vs {expect}");
    let ratio = one.time_ns as f64 / four.time_ns as f64;
    assert!(ratio > 3.8 && ratio < 4.05, "speed-up {ratio}");
}

/// The class tables: the size line and the iteration count of class D.
#[test]
fn class_d_parameters() {
    let info = |k| Npb::new(k, Class::D, 88, 88).info();
    use sim::workload::npb::Size;
    assert_eq!(info(Kernel::Bt).size, Size::Grid(408, 408, 408));
    assert_eq!(info(Kernel::Bt).iterations, 250);
    assert_eq!(info(Kernel::Sp).iterations, 500);
    assert_eq!(info(Kernel::Lu).iterations, 300);
    assert_eq!(info(Kernel::Cg).size, Size::Count(1_500_000));
    assert_eq!(info(Kernel::Cg).iterations, 100);
    assert_eq!(info(Kernel::Ep).size, Size::Pow2(37));
    assert_eq!(info(Kernel::Is).size, Size::Count(1 << 31));
    assert_eq!(info(Kernel::Mg).size, Size::Grid(1024, 1024, 1024));
    assert_eq!(info(Kernel::Mg).iterations, 50);
    assert_eq!(info(Kernel::Ua).iterations, 250);
}
