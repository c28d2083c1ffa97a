//! The cache-line model for shared scheduler and channel state.
//!
//! Each modelled line remembers its last writer and which CPUs hold its
//! current version (one bit per CPU). A read by
//! a CPU that has not seen the current version costs a one-way transfer (c2c)
//! at the topological distance between writer and reader; a repeated read of a
//! clean copy costs `clean_read_ns`. A write by a CPU that does not own the
//! line costs a transfer from the previous writer (read-for-ownership); a
//! write to an owned line that others have read since costs an invalidation at
//! the distance of the last reader.
//!
//! A line is also a resource: a transfer occupies it for the transfer time.
//! A CPU that needs the line while a transfer is still in flight waits for
//! it (the wait is charged to that CPU), and its transfer then costs the
//! machine's *contended* figure for the distance (`c2c_contended_ns`), which
//! can differ from the uncontended hand-off: on Kunpeng 920 a line bouncing
//! between two cores of one cluster moves faster than between clusters,
//! although the one-way CAS ping-pong latency is the same (see costs.rs).
//! Accesses are timed at the engine's current event time ([`LineTable::now`]).

use crate::costs::MachineCosts;
use crate::Nanos;
use topology::Topology;

/// Identifies a modelled cache line.
pub type LineId = u32;

const NOBODY: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Line {
    writer: u32,
    last_reader: u32,
    shared: bool,
    /// When the last transfer of this line completes.
    busy_until: Nanos,
    /// How many cache lines the modelled object spans: a transfer moves
    /// them all (a channel's kernel state is several lines; see
    /// `MachineCosts::pipe_lines`).
    weight: u32,
    /// Bit `w` set: word `w` of the line's `holders` row may be non-zero.
    /// A write clears only those words, so its cost follows the CPUs that
    /// read the line, not the machine's size (a row has at most 64 words:
    /// `CpuMask::MAX_CPUS` is 4096).
    dirty: u64,
}

/// All modelled lines of a run.
pub struct LineTable {
    /// Words of `holders` per line (one bit per CPU).
    words: usize,
    lines: Vec<Line>,
    /// `holders[line * words..][cpu / 64] >> (cpu % 64) & 1`: `cpu` holds
    /// the line's current version (has read or written it since the last
    /// write). A bit per CPU rather than a version number per CPU: the
    /// table is lines x CPUs, and hackbench alone has a line per channel.
    holders: Vec<u64>,
    /// Transfers charged (reads and writes that moved a line).
    pub transfers: u64,
    /// Of which found the line still in flight (contended).
    pub contended: u64,
    /// Time charged for transfers, waits included, ns.
    pub transfer_ns: u64,
    /// Of which waiting for a transfer in flight, ns.
    pub wait_ns: u64,
    /// The current simulated time, set by the engine at each event.
    pub now: Nanos,
}

impl LineTable {
    /// A table for a machine of `ncpus` CPUs.
    pub fn new(ncpus: usize) -> Self {
        assert!(
            ncpus <= 64 * 64,
            "a line's dirty-word summary covers 4096 CPUs"
        );
        LineTable {
            words: ncpus.div_ceil(64).max(1),
            lines: Vec::new(),
            holders: Vec::new(),
            transfers: 0,
            contended: 0,
            transfer_ns: 0,
            wait_ns: 0,
            now: 0,
        }
    }

    /// Allocate a new line, not yet written by anybody.
    pub fn alloc(&mut self) -> LineId {
        self.alloc_lines(1)
    }

    /// Allocate an object of `weight` cache lines that always move
    /// together (at least one).
    pub fn alloc_lines(&mut self, weight: u32) -> LineId {
        let id = self.lines.len() as LineId;
        self.lines.push(Line {
            writer: NOBODY,
            last_reader: NOBODY,
            shared: false,
            busy_until: 0,
            weight: weight.max(1),
            dirty: 0,
        });
        self.holders.resize(self.holders.len() + self.words, 0);
        id
    }

    /// Bytes of table per line on a machine of `ncpus` CPUs (for memory
    /// estimates).
    pub fn bytes_per_line(ncpus: usize) -> usize {
        std::mem::size_of::<Line>() + 8 * ncpus.div_ceil(64).max(1)
    }

    /// Number of lines.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when no line is allocated.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// `cpu` reads `line`; returns the cost in ns.
    #[inline]
    pub fn read(
        &mut self,
        line: LineId,
        cpu: usize,
        topo: &Topology,
        costs: &MachineCosts,
    ) -> Nanos {
        let l = &mut self.lines[line as usize];
        let word = &mut self.holders[line as usize * self.words + cpu / 64];
        let bit = 1u64 << (cpu % 64);
        let held = *word & bit != 0;
        *word |= bit;
        l.dirty |= 1 << (cpu / 64);
        if l.writer == NOBODY || l.writer as usize == cpu || held {
            return costs.clean_read_ns;
        }
        l.shared = true;
        l.last_reader = cpu as u32;
        let d = topo.distance(l.writer as usize, cpu);
        self.transfer(line, d, costs)
    }

    /// Move `line` over distance `d` at [`LineTable::now`]: wait for a
    /// transfer still in flight, then occupy the line for this one. Returns
    /// the wait plus the transfer time (the line's weight times one line's:
    /// the lines of one object are taken as fetched one after another, as
    /// the kernel's pointer chasing through them does).
    #[inline]
    fn transfer(&mut self, line: LineId, d: topology::Distance, costs: &MachineCosts) -> Nanos {
        let l = &mut self.lines[line as usize];
        self.transfers += 1;
        let w = l.weight as Nanos;
        if self.now < l.busy_until {
            self.contended += 1;
            let wait = l.busy_until - self.now;
            let t = costs.c2c_contended(d) * w;
            l.busy_until += t;
            self.wait_ns += wait;
            self.transfer_ns += wait + t;
            wait + t
        } else {
            let t = costs.c2c(d) * w;
            l.busy_until = self.now + t;
            self.transfer_ns += t;
            t
        }
    }

    /// `cpu` writes `line`; returns the cost in ns.
    #[inline]
    pub fn write(
        &mut self,
        line: LineId,
        cpu: usize,
        topo: &Topology,
        costs: &MachineCosts,
    ) -> Nanos {
        let l = &self.lines[line as usize];
        if l.writer as usize == cpu && !l.shared {
            // written last by `cpu` and read by nobody since (a read by
            // another CPU sets `shared`; the writer's own reads change
            // nothing): the line is already in the state this write leaves
            return 0;
        }
        let cost = if l.writer == NOBODY {
            0
        } else if l.writer as usize != cpu {
            let d = topo.distance(l.writer as usize, cpu);
            self.transfer(line, d, costs)
        } else {
            // Owner upgrading a line others hold: invalidate their copies.
            let d = topo.distance(l.last_reader as usize, cpu);
            self.transfer(line, d, costs)
        };
        let l = &mut self.lines[line as usize];
        l.writer = cpu as u32;
        l.shared = false;
        l.last_reader = NOBODY;
        // a new version: only the writer holds it. Only the words some
        // reader may have set are cleared (`dirty`), so a write costs the
        // same on 24 CPUs as on 4096.
        let row = &mut self.holders[line as usize * self.words..][..self.words];
        let (at, bit) = (cpu / 64, 1u64 << (cpu % 64));
        let mut stale = l.dirty & !(1u64 << at);
        while stale != 0 {
            row[stale.trailing_zeros() as usize] = 0;
            stale &= stale - 1;
        }
        row[at] = bit;
        l.dirty = 1u64 << at;
        cost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (Topology, MachineCosts, LineTable) {
        let topo = topology::preset("kunpeng920-node").unwrap();
        let costs = MachineCosts::for_machine("kunpeng920-node");
        let t = LineTable::new(topo.nr_cpus());
        (topo, costs, t)
    }

    #[test]
    fn an_idle_line_moves_at_the_uncontended_cost() {
        let (topo, costs, mut t) = setup();
        let l = t.alloc();
        t.now = 1000;
        assert_eq!(
            t.write(l, 0, &topo, &costs),
            0,
            "first write: nobody holds it"
        );
        t.now = 2000;
        assert_eq!(t.read(l, 4, &topo, &costs), 36, "other cluster");
        assert_eq!(
            t.read(l, 4, &topo, &costs),
            costs.clean_read_ns,
            "clean copy"
        );
        t.now = 3000;
        assert_eq!(
            t.write(l, 1, &topo, &costs),
            35,
            "same cluster as the writer"
        );
        assert_eq!(t.contended, 0);
    }

    #[test]
    fn a_line_in_flight_makes_the_next_cpu_wait_then_pay_the_contended_cost() {
        let (topo, costs, mut t) = setup();
        let l = t.alloc();
        t.now = 1000;
        t.write(l, 0, &topo, &costs);
        t.now = 2000;
        // CPU 4 (other cluster) pulls it: busy until 2036
        assert_eq!(t.write(l, 4, &topo, &costs), 36);
        // CPU 5 (CPU 4's cluster) wants it 10 ns later: waits 26, then a
        // contended in-cluster hand-off (26)
        t.now = 2010;
        assert_eq!(t.write(l, 5, &topo, &costs), 26 + 26);
        // (the line is now busy until 2036 + 26 = 2062); CPU 0 right after
        // waits for that, then pays a contended cross-cluster hand-off (36)
        t.now = 2020;
        assert_eq!(t.read(l, 0, &topo, &costs), (2062 - 2020) + 36);
        assert_eq!((t.transfers, t.contended), (3, 2));
    }

    /// The table against a plain model of the same rules (a set of holders
    /// per line) on a machine whose rows span many words: the dirty-word
    /// bookkeeping must not change any cost.
    mod against_a_set_model {
        use super::*;
        use proptest::prelude::*;
        use std::collections::HashSet;

        struct Model {
            writer: Option<usize>,
            last_reader: Option<usize>,
            shared: bool,
            busy_until: Nanos,
            holders: HashSet<usize>,
        }

        fn transfer(m: &mut Model, now: Nanos, d: topology::Distance, c: &MachineCosts) -> Nanos {
            if now < m.busy_until {
                let wait = m.busy_until - now;
                let t = c.c2c_contended(d);
                m.busy_until += t;
                wait + t
            } else {
                let t = c.c2c(d);
                m.busy_until = now + t;
                t
            }
        }

        proptest! {
            #[test]
            fn costs_match(ops in proptest::collection::vec((any::<bool>(), 0usize..12, 0u64..80), 1..300)) {
                let spec = "sockets=2,cores=256,threads=2,nodes=2";
                let topo = topology::SmpSpec::parse(spec).unwrap().build(spec).unwrap();
                let costs = MachineCosts::for_machine("sapphire-rapids");
                // CPUs spread over many holder words
                let cpus = [0, 1, 63, 64, 200, 511, 512, 700, 777, 1000, 1022, 1023];
                let mut t = LineTable::new(topo.nr_cpus());
                let l = t.alloc();
                let mut m = Model { writer: None, last_reader: None, shared: false, busy_until: 0, holders: HashSet::new() };
                let mut now = 0;
                for (write, i, dt) in ops {
                    let cpu = cpus[i];
                    now += dt;
                    t.now = now;
                    let want = if write {
                        let cost = match m.writer {
                            None => 0,
                            Some(w) if w == cpu && !m.shared => 0,
                            Some(w) if w != cpu => transfer(&mut m, now, topo.distance(w, cpu), &costs),
                            Some(_) => {
                                let r = m.last_reader.expect("shared implies a reader");
                                transfer(&mut m, now, topo.distance(r, cpu), &costs)
                            }
                        };
                        m.writer = Some(cpu);
                        m.shared = false;
                        m.last_reader = None;
                        m.holders = HashSet::from([cpu]);
                        cost
                    } else {
                        let held = !m.holders.insert(cpu);
                        match m.writer {
                            Some(w) if w != cpu && !held => {
                                m.shared = true;
                                m.last_reader = Some(cpu);
                                transfer(&mut m, now, topo.distance(w, cpu), &costs)
                            }
                            _ => costs.clean_read_ns,
                        }
                    };
                    let got = if write { t.write(l, cpu, &topo, &costs) } else { t.read(l, cpu, &topo, &costs) };
                    prop_assert_eq!(got, want, "cpu {} write {}", cpu, write);
                }
            }
        }
    }
}
