//! Memory in the model: address spaces made of regions (a program's
//! arrays), each cut into 2 MiB chunks that stand for their 512 base pages.
//! A chunk is placed on a node when an op first touches it (the default
//! local policy, mm/mempolicy.c `MPOL_LOCAL` behaviour) or by the run's
//! numactl policy (`--interleave`, `--membind`); NUMA balancing marks
//! chunks for hinting faults and migrates them (see [`super::balancing`]).
//!
//! Granularity: every decision the kernel takes per page (placement,
//! the two-stage migration filter, `last_cpupid`) is taken per chunk here,
//! and the counters count the pages the chunk stands for, so a whole chunk
//! faults and moves at once. That is exact for transparent huge pages
//! (one PMD per chunk) and an aggregation for base pages.

use crate::Nanos;

/// Bytes of a base page.
pub const PAGE_BYTES: u64 = 4096;
/// Bytes of a chunk (one PMD-sized huge page on x86-64 and arm64 with 4 KiB
/// pages).
pub const CHUNK_BYTES: u64 = 2 << 20;
/// Base pages per chunk.
pub const PAGES_PER_CHUNK: u64 = CHUNK_BYTES / PAGE_BYTES;

/// An array of an address space (`Engine::add_region`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegionId(pub u32);

/// A declared memory access pattern (`Engine::add_access`): what one
/// `Op::ComputeMem` touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessId(pub u32);

/// A node number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u16);

/// Part of an access: the byte range `[offset, offset + len)` of a region
/// that an op touches, the DRAM traffic it moves within it (what misses
/// the caches, not every load), and the order in which the op's loop
/// reaches the range's pages over its duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The region.
    pub region: RegionId,
    /// First byte touched.
    pub offset: u64,
    /// Bytes touched.
    pub len: u64,
    /// DRAM traffic within the range, bytes.
    pub bytes: u64,
    /// How many times the op walks the range in address order over its
    /// duration, evenly: 1 for a loop over the range's outer index (a
    /// slab swept once), `n` for a loop whose outer index is an inner
    /// index of the array (each of its `n` iterations walks the whole
    /// range); [`Span::ANY_ORDER`] for a gather or scatter that reaches
    /// every page of the range all through the op.
    pub sweeps: u32,
}

impl Span {
    /// `sweeps` of an access in no address order (a gather or scatter):
    /// every page of the range is touched all through the op.
    pub const ANY_ORDER: u32 = 0;
}

/// Where new pages go: the task's memory policy as `numactl` sets it
/// (mm/mempolicy.c).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum MemPolicy {
    /// The default: the node of the CPU that first touches the page.
    #[default]
    Local,
    /// `numactl --interleave=NODES`: round robin over the nodes, here by
    /// chunk (the kernel interleaves by page).
    Interleave(Vec<u16>),
    /// `numactl --membind=NODES`: the nearest allowed node to the touching
    /// CPU (the lowest-numbered one among equally near).
    Bind(Vec<u16>),
}

impl MemPolicy {
    /// Parse a policy as `--mem-policy` takes it: `local`,
    /// `interleave=all|LIST` or `membind=LIST` (LIST: node numbers and
    /// ranges, `0,2-3`), for a machine of `nodes` nodes.
    pub fn parse(s: &str, nodes: usize) -> Result<MemPolicy, String> {
        let list = |v: &str| -> Result<Vec<u16>, String> {
            if v == "all" {
                return Ok((0..nodes as u16).collect());
            }
            let mut out = Vec::new();
            for part in v.split(',') {
                let (a, b) = match part.split_once('-') {
                    Some((a, b)) => (a, b),
                    None => (part, part),
                };
                let p = |x: &str| {
                    x.trim()
                        .parse::<u16>()
                        .map_err(|_| format!("--mem-policy: '{x}' is not a node number"))
                };
                let (a, b) = (p(a)?, p(b)?);
                if a > b || b as usize >= nodes {
                    return Err(format!(
                        "--mem-policy: nodes {part} are not on this machine (nodes 0-{})",
                        nodes.saturating_sub(1)
                    ));
                }
                out.extend(a..=b);
            }
            out.sort_unstable();
            out.dedup();
            Ok(out)
        };
        match s.split_once('=') {
            None if s == "local" => Ok(MemPolicy::Local),
            Some(("interleave", v)) => Ok(MemPolicy::Interleave(list(v)?)),
            Some(("membind", v)) => Ok(MemPolicy::Bind(list(v)?)),
            _ => Err(format!(
                "--mem-policy: '{s}' is not local, interleave=all|NODES or membind=NODES"
            )),
        }
    }
}

/// No node yet (the chunk was never touched).
pub(crate) const NO_NODE: u16 = u16::MAX;

/// The `last_cpupid` of a page (include/linux/mm.h): the CPU of the last
/// hinting fault and the low 8 bits of the faulting task's pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuPid {
    /// The CPU.
    pub cpu: u16,
    /// The pid's low 8 bits.
    pub pid8: u8,
}

impl CpuPid {
    /// The pid bits a task leaves (`cpu_pid_to_cpupid`): task ids stand
    /// for pids.
    pub fn of(cpu: usize, task: u32) -> CpuPid {
        CpuPid {
            cpu: cpu as u16,
            pid8: (task & 0xff) as u8,
        }
    }
}

/// Bytes the engine holds per chunk (for memory estimates).
pub const CHUNK_STATE_BYTES: u64 = std::mem::size_of::<Chunk>() as u64;

/// One chunk's state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chunk {
    /// Its node (`NO_NODE`: not yet touched).
    pub(crate) node: u16,
    /// Base pages it stands for: 512, fewer for the tail of a region
    /// whose size is not a multiple of 2 MiB (such a tail is never a huge
    /// page: a PMD-sized page must lie wholly inside its VMA).
    pub(crate) pages: u16,
    /// Marked by the scanner (`change_prot_numa`): the next touch faults.
    pub(crate) prot_none: bool,
    /// The last hinting fault's CPU and pid bits (None: unset).
    pub(crate) last_cpupid: Option<CpuPid>,
}

/// An array of an address space.
#[derive(Clone, Debug)]
pub(crate) struct Region {
    /// Index of its address space.
    pub(crate) space: usize,
    /// Its first chunk in the space's chunk list.
    pub(crate) first_chunk: u32,
    /// Its size, bytes.
    pub(crate) bytes: u64,
    /// Its name (reports).
    pub(crate) name: String,
}

/// A span resolved to chunks: its space, chunk range, traffic per chunk,
/// and sweeps (`Span::sweeps`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkSpan {
    pub(crate) space: u32,
    pub(crate) first: u32,
    pub(crate) count: u32,
    /// DRAM traffic per chunk, bytes.
    pub(crate) bytes_per_chunk: u64,
    /// Walks of the range over the op (`Span::ANY_ORDER`: none, every
    /// chunk throughout).
    pub(crate) sweeps: u32,
}

impl ChunkSpan {
    /// The chunks (indices into the space's list, in the order reached)
    /// that the op's loop reaches while its progress goes from `from` to
    /// `to` of `total` (work units): `f(chunk)` for each, a chunk at most
    /// once. Reaching is uniform in the op's work: in a walk of `count`
    /// chunks, chunk `i` is reached as progress passes `i / count` of the
    /// walk's share. A range in no order is reached whole by any progress.
    pub(crate) fn reached(&self, from: u64, to: u64, total: u64, mut f: impl FnMut(u32)) {
        if to <= from || total == 0 || self.count == 0 {
            return;
        }
        let n = self.count as u128;
        // the chunk-steps begun by progress x (a chunk is reached as the
        // walk enters it): x / total x sweeps x count, rounded up
        let units = |x: u64| -> u128 {
            (x.min(total) as u128 * self.sweeps as u128 * n).div_ceil(total as u128)
        };
        let (a, b) = if self.sweeps == Span::ANY_ORDER {
            (0, n)
        } else {
            (units(from), units(to))
        };
        if b <= a {
            return;
        }
        if b - a >= n {
            for i in 0..self.count {
                f(self.first + i);
            }
            return;
        }
        for u in a..b {
            f(self.first + (u % n) as u32);
        }
    }
}

/// One address space (an mm): its chunks and the NUMA scanner's position.
#[derive(Clone, Debug)]
pub(crate) struct AddressSpace {
    /// The mm id (`TaskSpec::mm`).
    pub(crate) mm: u32,
    pub(crate) chunks: Vec<Chunk>,
    /// Chunks placed so far (the resident set, in chunks).
    pub(crate) resident: u64,
    /// `mm->numa_next_scan` (0: not yet set).
    pub(crate) numa_next_scan: Nanos,
    /// `mm->numa_scan_offset`, as a chunk index.
    pub(crate) numa_scan_offset: u32,
    /// `mm->numa_scan_seq`: completed passes over the address space.
    pub(crate) numa_scan_seq: u32,
    /// `mm_users`: threads of this mm alive.
    pub(crate) users: u32,
}

/// Every address space's memory, and the declared accesses.
#[derive(Clone, Debug, Default)]
pub struct Memory {
    pub(crate) spaces: Vec<AddressSpace>,
    pub(crate) regions: Vec<Region>,
    pub(crate) accesses: Vec<Vec<ChunkSpan>>,
    /// The run's placement policy for new pages.
    pub(crate) policy: MemPolicy,
    /// Interleave's next node index, per address space.
    pub(crate) interleave_next: Vec<usize>,
}

impl Memory {
    /// The index of mm's address space, created on first use.
    pub(crate) fn space_of(&mut self, mm: u32) -> usize {
        if let Some(i) = self.spaces.iter().position(|s| s.mm == mm) {
            return i;
        }
        self.spaces.push(AddressSpace {
            mm,
            chunks: Vec::new(),
            resident: 0,
            numa_next_scan: 0,
            numa_scan_offset: 0,
            numa_scan_seq: 0,
            users: 0,
        });
        self.interleave_next.push(0);
        self.spaces.len() - 1
    }

    /// The address space of `mm`, if it has memory.
    pub(crate) fn find_space(&self, mm: u32) -> Option<usize> {
        self.spaces.iter().position(|s| s.mm == mm)
    }

    /// Add a region of `bytes` to mm's address space.
    pub(crate) fn add_region(&mut self, mm: u32, name: &str, bytes: u64) -> RegionId {
        let space = self.space_of(mm);
        let s = &mut self.spaces[space];
        let first_chunk = s.chunks.len() as u32;
        let n = bytes.div_ceil(CHUNK_BYTES).max(1);
        s.chunks.extend((0..n).map(|i| {
            Chunk {
                node: NO_NODE,
                pages: (bytes.saturating_sub(i * CHUNK_BYTES))
                    .min(CHUNK_BYTES)
                    .div_ceil(PAGE_BYTES)
                    .max(1) as u16,
                prot_none: false,
                last_cpupid: None,
            }
        }));
        self.regions.push(Region {
            space,
            first_chunk,
            bytes,
            name: name.to_string(),
        });
        RegionId(self.regions.len() as u32 - 1)
    }

    /// Declare an access. Errors name the bad span.
    pub(crate) fn add_access(&mut self, spans: &[Span]) -> Result<AccessId, String> {
        let mut out = Vec::with_capacity(spans.len());
        for (i, s) in spans.iter().enumerate() {
            let r = self
                .regions
                .get(s.region.0 as usize)
                .ok_or_else(|| format!("access span {i}: no region {}", s.region.0))?;
            if s.len == 0 || s.offset.checked_add(s.len).is_none_or(|e| e > r.bytes) {
                return Err(format!(
                    "access span {i}: bytes [{}, +{}) are outside region '{}' of {} bytes",
                    s.offset, s.len, r.name, r.bytes
                ));
            }
            let first = s.offset / CHUNK_BYTES;
            let last = (s.offset + s.len - 1) / CHUNK_BYTES;
            let count = (last - first + 1) as u32;
            out.push(ChunkSpan {
                space: r.space as u32,
                first: r.first_chunk + first as u32,
                count,
                bytes_per_chunk: s.bytes / count as u64,
                sweeps: s.sweeps,
            });
        }
        self.accesses.push(out);
        Ok(AccessId(self.accesses.len() as u32 - 1))
    }

    /// The regions of address space `space` as chunk ranges [start, end),
    /// in address order (the VMAs the scanner walks).
    pub(crate) fn region_chunks(&self, space: usize) -> Vec<(u32, u32)> {
        let mut v: Vec<(u32, u32)> = self
            .regions
            .iter()
            .filter(|r| r.space == space)
            .map(|r| {
                let n = r.bytes.div_ceil(CHUNK_BYTES).max(1) as u32;
                (r.first_chunk, r.first_chunk + n)
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// Pages resident on each node, over every address space.
    pub fn pages_per_node(&self, nodes: usize) -> Vec<u64> {
        let mut v = vec![0u64; nodes];
        for s in &self.spaces {
            for c in &s.chunks {
                if let Some(x) = v.get_mut(c.node as usize) {
                    *x += c.pages as u64;
                }
            }
        }
        v
    }

    /// The node a new chunk of `space` goes to when CPU node `cpu_node`
    /// touches it, under the run's policy; `dist(a, b)` is the SLIT
    /// distance.
    pub(crate) fn place(
        &mut self,
        space: usize,
        cpu_node: u16,
        dist: impl Fn(u16, u16) -> u32,
    ) -> u16 {
        match &self.policy {
            MemPolicy::Local => cpu_node,
            MemPolicy::Interleave(nodes) => {
                let i = &mut self.interleave_next[space];
                let n = nodes[*i % nodes.len()];
                *i += 1;
                n
            }
            MemPolicy::Bind(nodes) => *nodes
                .iter()
                .min_by_key(|&&n| (dist(cpu_node, n), n))
                .expect("a bind policy names a node"),
        }
    }
}

/// The NUMA counters of a run, as /proc/vmstat names them (mm/vmstat.c),
/// in base pages where the kernel counts pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NumaCounters {
    /// PTEs the scanner made PROT_NONE (a huge page counts its 512).
    pub numa_pte_updates: u64,
    /// Huge-page PMDs the scanner marked.
    pub numa_huge_pte_updates: u64,
    /// Hinting faults.
    pub numa_hint_faults: u64,
    /// Hinting faults on a page already on the faulting CPU's node.
    pub numa_hint_faults_local: u64,
    /// Pages NUMA balancing migrated.
    pub numa_pages_migrated: u64,
    /// Pages allocated on the allocating CPU's node.
    pub numa_local: u64,
    /// Pages allocated on another node.
    pub numa_other: u64,
    /// task_numa_work calls that scanned (passed the mm-wide rate limit).
    pub numa_scans: u64,
    /// Tasks moved to their preferred node (`migrate_task_to`).
    pub numa_task_migrations: u64,
    /// Task swaps across nodes (`migrate_swap`).
    pub numa_task_swaps: u64,
    /// CPU time spent scanning, faulting and migrating pages, ns (part of
    /// the system time).
    pub numa_kernel_ns: u64,
    /// PTEs of base pages the scanner changed: `numa_pte_updates` less
    /// 512 per huge PMD (derived).
    pub base_page_pte_updates: u64,
    /// mmtests' "NUMA page range updates" (MonitorMmtestsvmstat.pm):
    /// `numa_pte_updates` plus 512 per huge PMD, although the kernel's
    /// `numa_pte_updates` already counts a huge PMD as 512 (derived; its
    /// "NUMA base PTE updates" row is `numa_pte_updates` itself and "NUMA
    /// huge PMD updates" is `numa_huge_pte_updates`).
    pub mmtests_numa_pte_updates: u64,
}

impl NumaCounters {
    /// Fill in the derived fields from the kernel's counters.
    pub fn derive(mut self) -> NumaCounters {
        let huge_pages = self.numa_huge_pte_updates * PAGES_PER_CHUNK;
        self.base_page_pte_updates = self.numa_pte_updates.saturating_sub(huge_pages);
        self.mmtests_numa_pte_updates = self.numa_pte_updates + huge_pages;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse() {
        assert_eq!(MemPolicy::parse("local", 2), Ok(MemPolicy::Local));
        assert_eq!(
            MemPolicy::parse("interleave=all", 3),
            Ok(MemPolicy::Interleave(vec![0, 1, 2]))
        );
        assert_eq!(
            MemPolicy::parse("membind=1,3-4", 5),
            Ok(MemPolicy::Bind(vec![1, 3, 4]))
        );
        assert!(MemPolicy::parse("membind=2", 2)
            .unwrap_err()
            .contains("nodes 0-1"));
        assert!(MemPolicy::parse("preferred=0", 2).is_err());
        assert!(MemPolicy::parse("interleave=x", 2).is_err());
    }

    #[test]
    fn regions_cut_into_chunks_and_spans_resolve() {
        let mut m = Memory::default();
        let a = m.add_region(7, "a", 5 * CHUNK_BYTES + 1);
        let b = m.add_region(7, "b", CHUNK_BYTES);
        assert_eq!(m.spaces.len(), 1);
        assert_eq!(m.spaces[0].chunks.len(), 7);
        let x = m
            .add_access(&[
                Span {
                    region: a,
                    offset: CHUNK_BYTES - 1,
                    len: 2,
                    bytes: 1000,
                    sweeps: 1,
                },
                Span {
                    region: b,
                    offset: 0,
                    len: CHUNK_BYTES,
                    bytes: 10,
                    sweeps: 1,
                },
            ])
            .unwrap();
        let s = &m.accesses[x.0 as usize];
        assert_eq!((s[0].first, s[0].count, s[0].bytes_per_chunk), (0, 2, 500));
        assert_eq!((s[1].first, s[1].count), (6, 1));
        let bad = m.add_access(&[Span {
            region: b,
            offset: 1,
            len: CHUNK_BYTES,
            bytes: 0,
            sweeps: 1,
        }]);
        assert!(bad.unwrap_err().contains("outside region 'b'"));
    }

    #[test]
    fn bind_takes_the_nearest_allowed_node() {
        let mut m = Memory {
            policy: MemPolicy::Bind(vec![1, 2]),
            ..Default::default()
        };
        let s = m.space_of(1);
        let dist = |a: u16, b: u16| {
            if a == b {
                10
            } else {
                10 + 10 * a.abs_diff(b) as u32
            }
        };
        assert_eq!(m.place(s, 3, dist), 2);
        assert_eq!(m.place(s, 0, dist), 1);
        m.policy = MemPolicy::Interleave(vec![0, 1]);
        let got: Vec<u16> = (0..4).map(|_| m.place(s, 1, dist)).collect();
        assert_eq!(got, [0, 1, 0, 1]);
    }
}
