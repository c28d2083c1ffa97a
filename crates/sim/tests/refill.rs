//! The cache refill of a task that runs again after others ran on its CPU
//! (`MachineCosts::switch_refill`), checked the way it is measured: a pipe
//! ring of N tasks on one CPU (lmbench lat_ctx's method, as `schedlab
//! calibrate` runs it), where every hop is one pipe write, one read and one
//! switch, and each task runs again after N - 1 others.

use sim::channel::ChanKind;
use sim::costs::MachineCosts;
use sim::engine::{Engine, EngineConfig};
use sim::placement::scx::ScxDefault;
use sim::task::{Op, TaskSpec};
use topology::{CpuMask, DomainOptions, SchedDomains};

const SWITCH: u64 = 1000;
const MM_EXTRA: u64 = 50;

/// Only the switch, the mm switch and the refill tables cost anything.
fn costs() -> MachineCosts {
    let mut c = MachineCosts::for_machine("kunpeng920-node").zeroed();
    c.ctx_switch_ns = SWITCH;
    c.mm_switch_extra_ns = MM_EXTRA;
    c.refill_thread_ns = [100, 200, 300, 400, 500];
    c.refill_process_ns = [1000, 2000, 3000, 4000, 5000];
    c
}

/// ns per hop of rounds 10..20 of a ring of `n` tasks on CPU 0.
fn ring_per_hop(n: usize, processes: bool) -> u64 {
    let topo = topology::preset("kunpeng920-node").unwrap();
    let sd = SchedDomains::build(&topo, &DomainOptions::default());
    let mut cfg = EngineConfig::checked(CpuMask::from_cpus([0]));
    // every hop one switch: the woken task waits for the writer to block
    // (WAKEUP_PREEMPTION off), so the ring's order is fixed
    cfg.eevdf.wakeup_preemption = false;
    let mut e: Engine = Engine::new(&topo, &sd, costs(), cfg, Box::new(ScxDefault));
    let chans: Vec<_> = (0..n)
        .map(|_| e.add_channel(ChanKind::Pipe, true))
        .collect();
    let hop = |i: usize| {
        vec![
            Op::Read {
                chan: chans[i],
                bytes: 1,
            },
            Op::Write {
                chan: chans[(i + 1) % n],
                bytes: 1,
            },
        ]
    };
    for i in 0..n {
        let mut p = Vec::new();
        if i == 0 {
            // the first token, then ten rounds, a mark, ten more, a mark
            p.push(Op::Write {
                chan: chans[1 % n],
                bytes: 1,
            });
            for m in 0..2 {
                p.push(Op::Loop(10));
                p.extend(hop(0));
                p.push(Op::EndLoop);
                p.push(Op::Mark(m));
            }
            p.push(Op::Read {
                chan: chans[0],
                bytes: 1,
            });
        } else {
            p.push(Op::Loop(21));
            p.extend(hop(i));
            p.push(Op::EndLoop);
        }
        p.push(Op::Exit);
        e.add_task(TaskSpec {
            name: format!("ring{i}"),
            program: p.into(),
            mm: if processes { i as u32 } else { 0 },
            parent: None,
            spawned: false,
            start_cpu: Some(0),
            nice: 0,
            footprint_lines: 0,
        });
    }
    e.run().unwrap();
    let (a, b) = (e.mark(0).unwrap(), e.mark(1).unwrap());
    (b - a) / (10 * n as u64)
}

#[test]
fn a_ring_of_two_pays_the_plain_switch() {
    assert_eq!(ring_per_hop(2, false), SWITCH);
    assert_eq!(ring_per_hop(2, true), SWITCH + MM_EXTRA);
}

#[test]
fn a_ring_pays_the_refill_of_its_size_minus_one() {
    // at the measured ring sizes, the table's values
    for (n, thread, process) in [(4, 100, 1000), (8, 200, 2000), (64, 500, 5000)] {
        assert_eq!(ring_per_hop(n, false), SWITCH + thread, "threads, N = {n}");
        assert_eq!(
            ring_per_hop(n, true),
            SWITCH + MM_EXTRA + process,
            "processes, N = {n}"
        );
    }
    // between them, linear in the number of others: 5 others is halfway
    // from 3 (100) to 7 (200)
    assert_eq!(ring_per_hop(6, false), SWITCH + 150);
    // past the last size, the last value
    assert_eq!(ring_per_hop(80, false), SWITCH + 500);
}

#[test]
fn switch_refill_interpolates_and_saturates() {
    let c = costs();
    assert_eq!(c.switch_refill(0, false), 0);
    assert_eq!(c.switch_refill(1, false), 0);
    // from (1, 0) to (3, 100)
    assert_eq!(c.switch_refill(2, false), 50);
    assert_eq!(c.switch_refill(3, false), 100);
    assert_eq!(c.switch_refill(31, true), 4000);
    assert_eq!(c.switch_refill(47, true), 4500);
    assert_eq!(c.switch_refill(u64::MAX, false), 500);
    // a table that falls between two sizes falls linearly too
    let mut d = c.clone();
    d.refill_thread_ns = [400, 200, 200, 200, 200];
    assert_eq!(d.switch_refill(5, false), 300);
    assert_eq!(
        MachineCosts::for_machine("kunpeng920")
            .zeroed()
            .switch_refill(u64::MAX, true),
        0
    );
}
