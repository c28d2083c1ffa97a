//! The cache-line model for shared scheduler and channel state.
//!
//! Each modelled line remembers its last writer and a write sequence number;
//! every CPU remembers which version of each line it last pulled in. A read by
//! a CPU that has not seen the current version costs a one-way transfer (c2c)
//! at the topological distance between writer and reader; a repeated read of a
//! clean copy costs `clean_read_ns`. A write by a CPU that does not own the
//! line costs a transfer from the previous writer (read-for-ownership); a
//! write to an owned line that others have read since costs an invalidation at
//! the distance of the last reader.

use crate::costs::MachineCosts;
use crate::Nanos;
use topology::Topology;

/// Identifies a modelled cache line.
pub type LineId = u32;

const NOBODY: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Line {
    writer: u32,
    seq: u32,
    last_reader: u32,
    shared: bool,
}

/// All modelled lines of a run.
pub struct LineTable {
    ncpus: usize,
    lines: Vec<Line>,
    /// `seen[line * ncpus + cpu]`: the version `cpu` holds (0 = none).
    seen: Vec<u32>,
    /// Transfers charged (reads and writes that moved a line).
    pub transfers: u64,
}

impl LineTable {
    /// A table for a machine of `ncpus` CPUs.
    pub fn new(ncpus: usize) -> Self {
        LineTable {
            ncpus,
            lines: Vec::new(),
            seen: Vec::new(),
            transfers: 0,
        }
    }

    /// Allocate a new line, not yet written by anybody.
    pub fn alloc(&mut self) -> LineId {
        let id = self.lines.len() as LineId;
        self.lines.push(Line {
            writer: NOBODY,
            seq: 1,
            last_reader: NOBODY,
            shared: false,
        });
        self.seen.resize(self.seen.len() + self.ncpus, 0);
        id
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
        let seen = &mut self.seen[line as usize * self.ncpus + cpu];
        if l.writer == NOBODY || l.writer as usize == cpu || *seen == l.seq {
            *seen = l.seq;
            return costs.clean_read_ns;
        }
        *seen = l.seq;
        l.shared = true;
        l.last_reader = cpu as u32;
        self.transfers += 1;
        costs.c2c(topo.distance(l.writer as usize, cpu))
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
        let l = &mut self.lines[line as usize];
        let cost = if l.writer == NOBODY || (l.writer as usize == cpu && !l.shared) {
            0
        } else if l.writer as usize != cpu {
            self.transfers += 1;
            costs.c2c(topo.distance(l.writer as usize, cpu))
        } else {
            // Owner upgrading a line others hold: invalidate their copies.
            self.transfers += 1;
            costs.c2c(topo.distance(l.last_reader as usize, cpu))
        };
        l.writer = cpu as u32;
        l.seq = l.seq.wrapping_add(1).max(1);
        l.shared = false;
        l.last_reader = NOBODY;
        self.seen[line as usize * self.ncpus + cpu] = l.seq;
        cost
    }
}
