//! The engine's hot path does not allocate per event: doubling the length of
//! a run (and so its events) must not grow the number of allocations by more
//! than a small constant.

use sim::run::{simulate_hackbench, SimOptions};
use sim::workload::hackbench::Hackbench;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn allocs_and_events(loops: u32, machine: &str) -> (u64, u64) {
    let topo = topology::preset(machine).unwrap();
    let hb = Hackbench {
        groups: 2,
        loops,
        pipe: true,
        threads: true,
        ..Default::default()
    };
    let before = ALLOCS.load(Ordering::Relaxed);
    let r = simulate_hackbench(&topo, &hb, &SimOptions::default()).unwrap();
    (ALLOCS.load(Ordering::Relaxed) - before, r.counters.events)
}

#[test]
fn no_allocation_per_event() {
    for machine in ["kunpeng920-node", "power9-smt8"] {
        let (a1, e1) = allocs_and_events(100, machine);
        let (a2, e2) = allocs_and_events(400, machine);
        assert!(
            e2 > e1 + 10_000,
            "{machine}: the longer run must have many more events ({e1} vs {e2})"
        );
        // Growth of queues and histograms is amortised: a few hundred at most.
        assert!(
            a2 < a1 + 500,
            "{machine}: {a1} allocations for {e1} events, {a2} for {e2}"
        );
    }
}
