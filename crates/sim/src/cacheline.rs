//! The cache-line model for shared scheduler and channel state.
//!
//! Each modelled line remembers its last writer and which CPUs hold its
//! current version (kept in the line's own record while they are few). A read by
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
use topology::{Distance, Topology};

/// Identifies a modelled cache line.
pub type LineId = u32;

/// What a modelled line is a line of: the kernel object (or the user
/// memory) it belongs to, named as the kernel names the struct, so a run
/// can report its transfers by object and by distance (docs/costs.md).
/// Only the objects the line model charges are here; the inventory's others
/// (`costs::kernel_objects`) join as they are charged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum LineKind {
    /// A run queue's summary (`struct rq`: nr_running, the idle state, the
    /// lock the remote waker takes).
    Rq,
    /// An LLC's `struct sched_domain_shared` (nr_busy_cpus, has_idle_cores).
    SchedDomainShared,
    /// The root domain's overload and overutilized flags.
    RootDomain,
    /// A pipe's `struct pipe_inode_info` (mutex, wait queues, head, tail).
    PipeInodeInfo,
    /// A pipe's `struct pipe_buffer` slot.
    PipeBuffer,
    /// The `struct file` of a pipe or socket end: its reference count,
    /// written by every call of a thread whose file table is shared.
    File,
    /// An AF_UNIX socket's state: both ends' `struct unix_sock`, the skb and
    /// the pid count, as the measured line count covers them.
    UnixSock,
    /// A TCP socket's `struct tcp_sock` (and its `struct socket`).
    TcpSock,
    /// Message bytes: a pipe's data page or an skb's data.
    MessageData,
    /// A task's `struct task_struct`.
    TaskStruct,
    /// A task's kernel stack.
    KernelStack,
    /// User memory a workload synchronises on: a futex word, a queue, a
    /// pthread object, an OpenMP barrier or flag.
    UserMemory,
    /// A futex's `struct futex_hash_bucket` (waiters count, lock, chain):
    /// written by every FUTEX_WAIT and every FUTEX_WAKE that finds a waiter.
    FutexHashBucket,
    /// A sleeping waiter's `struct futex_q` (on its kernel stack): queued by
    /// the waiter, unlinked by the waker.
    FutexQ,
    /// A CPU's wake list: its `call_single_queue` llist head and the run
    /// queue line holding `ttwu_pending`, written by a remote waker
    /// (`ttwu_queue_wakelist`) and by the CPU that empties it
    /// (`sched_ttwu_pending`).
    WakeList,
    /// An idle task's `thread_info` flags: TIF_POLLING_NRFLAG set and
    /// cleared by its CPU around idle, TIF_NEED_RESCHED set by the waker
    /// that kicks it (`set_nr_if_polling`, `resched_curr`).
    IdleThreadInfo,
    /// `jiffies` (and `last_jiffies_update`): written by the timekeeping
    /// CPU's tick, read by every CPU entering nohz idle.
    Jiffies,
}

impl LineKind {
    /// Every kind, in report order.
    pub const ALL: [LineKind; 17] = [
        LineKind::Rq,
        LineKind::SchedDomainShared,
        LineKind::RootDomain,
        LineKind::PipeInodeInfo,
        LineKind::PipeBuffer,
        LineKind::File,
        LineKind::UnixSock,
        LineKind::TcpSock,
        LineKind::MessageData,
        LineKind::TaskStruct,
        LineKind::KernelStack,
        LineKind::UserMemory,
        LineKind::FutexHashBucket,
        LineKind::FutexQ,
        LineKind::WakeList,
        LineKind::IdleThreadInfo,
        LineKind::Jiffies,
    ];
    /// Number of kinds.
    pub const COUNT: usize = Self::ALL.len();

    /// The name reports use: the kernel's struct name where it is one.
    pub const fn name(self) -> &'static str {
        match self {
            LineKind::Rq => "rq",
            LineKind::SchedDomainShared => "sched_domain_shared",
            LineKind::RootDomain => "root_domain",
            LineKind::PipeInodeInfo => "pipe_inode_info",
            LineKind::PipeBuffer => "pipe_buffer",
            LineKind::File => "file",
            LineKind::UnixSock => "unix_sock",
            LineKind::TcpSock => "tcp_sock",
            LineKind::MessageData => "message data",
            LineKind::TaskStruct => "task_struct",
            LineKind::KernelStack => "kernel stack",
            LineKind::UserMemory => "user memory",
            LineKind::FutexHashBucket => "futex_hash_bucket",
            LineKind::FutexQ => "futex_q",
            LineKind::WakeList => "wake list",
            LineKind::IdleThreadInfo => "idle thread_info",
            LineKind::Jiffies => "jiffies",
        }
    }
}

/// Distances in report order, with the names reports use.
pub const DISTANCES: [(Distance, &str); 6] = [
    (Distance::SameCpu, "same_cpu"),
    (Distance::Smt, "smt"),
    (Distance::Cluster, "cluster"),
    (Distance::Llc, "llc"),
    (Distance::Package, "package"),
    (Distance::Remote, "remote"),
];

/// Line transfers of a run by object and by distance: `[kind][distance]`,
/// both in report order ([`LineKind::ALL`], [`DISTANCES`]).
pub type TransfersBy = [[u64; 6]; LineKind::COUNT];

/// Lines moved in a run by object and distance, serialised as a map of
/// maps with the objects and distances that moved any (`{"pipe_inode_info":
/// {"cluster": 1200}}`), in report order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinesMoved(pub TransfersBy);

impl LinesMoved {
    /// The non-zero entries: (object, distance, lines), in report order.
    pub fn entries(&self) -> impl Iterator<Item = (&'static str, &'static str, u64)> + '_ {
        LineKind::ALL.iter().flat_map(move |k| {
            DISTANCES.iter().filter_map(move |(d, name)| {
                let n = self.0[*k as usize][*d as usize];
                (n > 0).then_some((k.name(), *name, n))
            })
        })
    }

    /// Lines moved in all.
    pub fn total(&self) -> u64 {
        self.0.iter().flatten().sum()
    }

    /// Lines moved over each distance, in [`DISTANCES`] order.
    pub fn by_distance(&self) -> [u64; 6] {
        let mut out = [0; 6];
        for row in &self.0 {
            for (o, n) in out.iter_mut().zip(row) {
                *o += n;
            }
        }
        out
    }
}

impl serde::Serialize for LinesMoved {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        for k in LineKind::ALL {
            let row = &self.0[k as usize];
            if row.iter().any(|&n| n > 0) {
                let inner: Vec<(&str, u64)> = DISTANCES
                    .iter()
                    .filter(|(d, _)| row[*d as usize] > 0)
                    .map(|(d, name)| (*name, row[*d as usize]))
                    .collect();
                m.serialize_entry(k.name(), &OrderedPairs(&inner))?;
            }
        }
        m.end()
    }
}

/// A list of (key, count) pairs serialised as a map in list order.
struct OrderedPairs<'a>(&'a [(&'static str, u64)]);

impl serde::Serialize for OrderedPairs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// No CPU (a line nobody has written, or nobody has read since its write).
const NOBODY: u16 = u16::MAX;
/// [`Line::own`]'s bit for a version another CPU has read.
const SHARED: u32 = 1 << 16;
/// CPU ids a line's record keeps itself on a machine of more than 64 CPUs
/// before its holders move to a row of bits.
const NEAR_SLOTS: u8 = 4;
/// Four empty 16-bit slots.
const NEAR_EMPTY: u64 = u64::MAX;
/// The low bit of each 16-bit slot.
const LANE_LOW: u64 = 0x0001_0001_0001_0001;
/// The high bit of each 16-bit slot.
const LANE_HIGH: u64 = 0x8000_8000_8000_8000;

/// One modelled line: 32 bytes, two to a host cache line, with the CPUs
/// that read it since its last write kept inside the record while they
/// are few. The run queue and channel lines a simulation touches on every
/// event are then one host cache line each, whatever the simulated
/// machine's size (a row of 1024 bits is two host lines of its own).
#[derive(Clone, Copy)]
struct Line {
    /// When the last transfer of this line completes.
    busy_until: Nanos,
    /// The CPUs other than the writer that hold the current version. On a
    /// machine of at most 64 CPUs, one bit per CPU. On a larger one, up to
    /// [`NEAR_SLOTS`] 16-bit CPU ids (`near_len` of them, the rest
    /// all-ones) until a further CPU reads; from then on the set is the
    /// line's row of bits (`spilled`), for the following versions too
    /// while each has more holders than the slots hold, and `near` says
    /// which words of the row may be non-zero (bit `w`: word `w`), so a
    /// write clears only those and costs the same on 128 CPUs as on 4096.
    near: u64,
    /// The last writer (a CPU id, or [`NOBODY`]) in the low 16 bits, and
    /// [`SHARED`] once a CPU other than the writer has read this version:
    /// one word, so that a write's test for a line it owns alone (the
    /// common case, inline at every caller) is one comparison.
    own: u32,
    last_reader: u16,
    /// How many cache lines the modelled object spans: a transfer moves
    /// them all (a channel's kernel state is several lines; see
    /// `MachineCosts::pipe_lines`).
    weight: u32,
    /// Holders in the slots; in the row, holders of this version so far
    /// (saturating).
    near_len: u8,
    spilled: bool,
    /// What the record is made of: an index into the table's classes
    /// ([`LineClass`]), by which its transfers are counted.
    class: u16,
}

impl Line {
    /// The last writer, or [`NOBODY`].
    #[inline(always)]
    fn writer(&self) -> u16 {
        self.own as u16
    }
}

/// What a record is made of: `weight` lines, the first `weight - split`
/// of object `kind`, the last `split` of `kind2` (two objects that always
/// move together kept as one record: a pipe's state and its buffer slot).
/// A run has a handful (the profile's object sizes), so a transfer counts
/// one event in its class's row and [`LineTable::by_kind`] turns the rows
/// into lines by object when asked, where the transfer itself once
/// added to three object rows (docs/performance.md).
#[derive(Clone, Copy, PartialEq, Eq)]
struct LineClass {
    kind: LineKind,
    kind2: LineKind,
    weight: u32,
    split: u8,
}

/// The running counts of a table's transfers (their number is
/// [`LineTable::transfers`]).
#[derive(Clone, Default)]
pub struct LineTally {
    /// Transfers that found the line still in flight (contended).
    pub contended: u64,
    /// Time charged for transfers, waits included, ns.
    pub transfer_ns: u64,
    /// Of which waiting for a transfer in flight, ns.
    pub wait_ns: u64,
    /// Transfers of each class's records, by distance.
    class_moves: Vec<[u64; 6]>,
    /// Message lines that moved with a record, by distance.
    data_moves: [u64; 6],
    /// Transfers of lines in no record ([`LineTable::stream`]).
    streams: u64,
}

/// All modelled lines of a run.
pub struct LineTable {
    /// Words of bits per row (one bit per CPU); 1 on machines of at most
    /// 64 CPUs, where the bits live in the line itself.
    words: usize,
    lines: Vec<Line>,
    /// On a machine of more than 64 CPUs, a row of holder bits per line,
    /// `words` words each (`CpuMask::MAX_CPUS` is 4096: at most 64 words),
    /// used while more than [`NEAR_SLOTS`] CPUs read a version. A row per
    /// line in line order, not one allocated at a line's first spill: the
    /// balancer reads the run-queue lines of a domain in CPU order, and
    /// rows in that order cost 287 ns per event on 1024 CPUs, rows in the
    /// order of first spills 293 (docs/performance.md names the run).
    rows: Vec<u64>,
    /// What the records are made of (see [`LineClass`]).
    classes: Vec<LineClass>,
    /// The counts of transfers so far.
    pub tally: LineTally,
    /// Lines moved by [`LineTable::stream`], by object and distance.
    streamed: TransfersBy,
    /// The CPUs running a task (not idle), one bit each: a line fetched
    /// from one of them moves at the contended figure (see `transfer`).
    /// Words for the most CPUs a machine has (4,096), so that a CPU's word
    /// is found without a bounds test ([`LineTable::is_running`]).
    running: Box<[u64; 64]>,
    /// The current simulated time, set by the engine at each event.
    pub now: Nanos,
}

impl LineTable {
    /// A table for a machine of `ncpus` CPUs.
    pub fn new(ncpus: usize) -> Self {
        assert!(ncpus <= 64 * 64, "a row's summary word covers 4096 CPUs");
        LineTable {
            words: ncpus.div_ceil(64).max(1),
            lines: Vec::new(),
            rows: Vec::new(),
            classes: Vec::new(),
            tally: LineTally::default(),
            streamed: [[0; 6]; LineKind::COUNT],
            running: Box::new([0; 64]),
            now: 0,
        }
    }

    /// `cpu` now runs a task (`true`) or its idle task (`false`).
    #[inline]
    pub fn set_running(&mut self, cpu: usize, running: bool) {
        let (w, bit) = ((cpu / 64) % 64, 1u64 << (cpu % 64));
        if running {
            self.running[w] |= bit;
        } else {
            self.running[w] &= !bit;
        }
    }

    /// `cpu` runs a task. (CPU ids are below 4,096, asserted in `new`:
    /// the word's index taken modulo 64 is the index itself, and tells the
    /// compiler it is in bounds.)
    #[inline(always)]
    fn is_running(running: &[u64; 64], cpu: usize) -> bool {
        running[(cpu / 64) % 64] & (1 << (cpu % 64)) != 0
    }

    /// Transfers charged so far (reads and writes that moved a line, and
    /// streams of lines in no record).
    pub fn transfers(&self) -> u64 {
        let moves: u64 = self.tally.class_moves.iter().flatten().sum();
        moves + self.tally.streams
    }

    /// Allocate a new line (of user memory), not yet written by anybody.
    pub fn alloc(&mut self) -> LineId {
        self.alloc_of(LineKind::UserMemory, 1)
    }

    /// Allocate an object of `weight` lines (of user memory).
    pub fn alloc_lines(&mut self, weight: u32) -> LineId {
        self.alloc_of(LineKind::UserMemory, weight)
    }

    /// Allocate an object of `kind` spanning `weight` cache lines that
    /// always move together (at least one), not yet written by anybody.
    pub fn alloc_of(&mut self, kind: LineKind, weight: u32) -> LineId {
        self.alloc_pair(kind, weight, kind, 0)
    }

    /// Allocate a record of two objects that always move together: `weight`
    /// lines of `kind` and then `weight2` of `kind2` (counted apart).
    pub fn alloc_pair(
        &mut self,
        kind: LineKind,
        weight: u32,
        kind2: LineKind,
        weight2: u8,
    ) -> LineId {
        let weight = (weight + weight2 as u32).max(1);
        let class = LineClass {
            kind,
            kind2,
            weight,
            split: weight2,
        };
        let class = match self.classes.iter().position(|c| *c == class) {
            Some(i) => i,
            None => {
                self.classes.push(class);
                self.tally.class_moves.push([0; 6]);
                self.classes.len() - 1
            }
        };
        // object sizes come from the machine's profile: a run has a few
        // classes, never near the 16-bit index
        let class = u16::try_from(class).expect("fewer than 65,536 kinds of line record");
        let id = self.lines.len() as LineId;
        self.lines.push(Line {
            busy_until: 0,
            near: if self.words == 1 { 0 } else { NEAR_EMPTY },
            own: NOBODY as u32,
            last_reader: NOBODY,
            weight,
            near_len: 0,
            spilled: false,
            class,
        });
        if self.words > 1 {
            self.rows.resize(self.rows.len() + self.words, 0);
        }
        id
    }

    /// Bytes of table per line on a machine of `ncpus` CPUs (for memory
    /// estimates).
    pub fn bytes_per_line(ncpus: usize) -> usize {
        let words = ncpus.div_ceil(64).max(1);
        std::mem::size_of::<Line>() + if words == 1 { 0 } else { 8 * words }
    }

    /// Ask for the records of `n` lines from `first` (a hint only: with
    /// tens of thousands of tasks their records are beyond the private
    /// caches when a wake-up or a switch comes to write them).
    #[inline(always)]
    pub fn prefetch(&self, first: LineId, n: usize) {
        if let Some(l) = self.lines.get(first as usize) {
            crate::prefetch::prefetch(l, (n * std::mem::size_of::<Line>()).div_ceil(64));
        }
    }

    /// Number of lines.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when no line is allocated.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Lines moved so far by the object they belong to and the distance
    /// they moved (a record of weight w counts w lines, split between its
    /// two objects; message lines that moved with a record count as
    /// [`LineKind::MessageData`]).
    pub fn by_kind(&self) -> TransfersBy {
        let mut by = self.streamed;
        for (c, moves) in self.classes.iter().zip(&self.tally.class_moves) {
            let (first, second) = ((c.weight - c.split as u32) as u64, c.split as u64);
            for (d, &n) in moves.iter().enumerate() {
                by[c.kind as usize][d] += n * first;
                by[c.kind2 as usize][d] += n * second;
            }
        }
        for (d, &n) in self.tally.data_moves.iter().enumerate() {
            by[LineKind::MessageData as usize][d] += n;
        }
        by
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
        let l = &self.lines[line as usize];
        // the writer always holds the current version; a line nobody wrote
        // is clean everywhere; on up to 64 CPUs the other holders are bits
        // of the record, so a read of a copy `cpu` holds (the balancer's
        // and the wake-up scan's reads of run queues they read before)
        // ends here, with no other memory and no registers to save
        let writer = l.writer();
        if writer == NOBODY
            || writer as usize == cpu
            || (self.words == 1 && l.near & (1 << cpu) != 0)
        {
            return costs.clean_read_ns;
        }
        self.read_slow(line, cpu, topo, costs)
    }

    /// The rest of [`LineTable::read`]: note `cpu` as a holder, and move
    /// the line to it if it had not seen this version.
    #[inline(never)]
    fn read_slow(
        &mut self,
        line: LineId,
        cpu: usize,
        topo: &Topology,
        costs: &MachineCosts,
    ) -> Nanos {
        if self.words == 1 {
            self.lines[line as usize].near |= 1 << cpu;
        } else if self.note_holder(line, cpu) {
            return costs.clean_read_ns;
        }
        let l = &mut self.lines[line as usize];
        l.own |= SHARED;
        l.last_reader = cpu as u16;
        let src = l.writer() as usize;
        let busy = Self::is_running(&self.running, src);
        transfer(
            l,
            &mut self.tally,
            self.now,
            topo.distance(src, cpu),
            busy,
            costs,
            0,
        )
    }

    /// `lines` lines of `kind` that live in no record (message bytes, each
    /// chunk last written by its writer) move over distance `d`: uncontended
    /// transfers, counted by object and distance. Returns their cost.
    #[inline]
    pub fn stream(
        &mut self,
        kind: LineKind,
        d: topology::Distance,
        lines: u64,
        costs: &MachineCosts,
    ) -> Nanos {
        if lines == 0 || d == Distance::SameCpu {
            return 0;
        }
        self.tally.streams += 1;
        self.streamed[kind as usize][d as usize] += lines;
        let t = costs.c2c(d) * lines;
        self.tally.transfer_ns += t;
        t
    }

    /// Record that `cpu` (not the writer) holds `line`'s current version,
    /// on a machine of more than 64 CPUs (on a smaller one `read` sets the
    /// record's bit itself); true when it already did.
    #[inline]
    fn note_holder(&mut self, line: LineId, cpu: usize) -> bool {
        let words = self.words;
        let l = &mut self.lines[line as usize];
        if !l.spilled {
            // is `cpu` in one of the 16-bit slots? (a slot equal to `cpu`
            // XORs to zero; the test finds a zero slot exactly, and the
            // empty slots, all ones, never match an id below 4096)
            let x = l.near ^ (cpu as u64).wrapping_mul(LANE_LOW);
            if x.wrapping_sub(LANE_LOW) & !x & LANE_HIGH != 0 {
                return true;
            }
            if l.near_len < NEAR_SLOTS {
                let shift = 16 * l.near_len as u32;
                l.near = (l.near & !(0xffff << shift)) | ((cpu as u64) << shift);
                l.near_len += 1;
                return false;
            }
            self.spill(line);
        }
        let l = &mut self.lines[line as usize];
        let (at, bit) = (cpu / 64, 1u64 << (cpu % 64));
        let word = &mut self.rows[line as usize * words + at];
        let held = *word & bit != 0;
        *word |= bit;
        l.near |= 1 << at;
        // count this version's holders, to leave the row once a version
        // has few again
        l.near_len = l.near_len.saturating_add(!held as u8);
        held
    }

    /// Move the holders in `line`'s slots to its row of bits (allocated
    /// with the line; all zero while the line is not spilled).
    #[cold]
    fn spill(&mut self, line: LineId) {
        let words = self.words;
        let l = &mut self.lines[line as usize];
        let (row, slots) = (line as usize * words, l.near);
        l.spilled = true;
        l.near = 0;
        for slot in 0..NEAR_SLOTS as u32 {
            let cpu = (slots >> (16 * slot)) as usize & 0xffff;
            self.rows[row + cpu / 64] |= 1 << (cpu % 64);
            l.near |= 1 << (cpu / 64);
        }
    }

    /// `cpu` writes `line`; returns the cost in ns.
    #[inline(always)]
    pub fn write(
        &mut self,
        line: LineId,
        cpu: usize,
        topo: &Topology,
        costs: &MachineCosts,
    ) -> Nanos {
        self.write_with_data(line, cpu, 0, topo, costs)
    }

    /// `cpu` writes `line` and `data` lines of message bytes whose home is
    /// the line's (a channel's state and the buffer a write fills, which
    /// the last reader left behind together): they move with the record,
    /// counted as [`LineKind::MessageData`].
    #[inline(always)]
    pub fn write_with_data(
        &mut self,
        line: LineId,
        cpu: usize,
        data: u32,
        topo: &Topology,
        costs: &MachineCosts,
    ) -> Nanos {
        let l = &self.lines[line as usize];
        if l.own == cpu as u32 {
            // written last by `cpu` and read by nobody since (a read by
            // another CPU sets `SHARED`; the writer's own reads change
            // nothing): the line is already in the state this write leaves
            return 0;
        }
        self.write_moving(line, cpu, data, topo, costs)
    }

    /// The rest of [`LineTable::write_with_data`]: the line must move or
    /// be upgraded (kept out of line: most writes find their line owned).
    #[inline(never)]
    fn write_moving(
        &mut self,
        line: LineId,
        cpu: usize,
        data: u32,
        topo: &Topology,
        costs: &MachineCosts,
    ) -> Nanos {
        let words = self.words;
        let l = &mut self.lines[line as usize];
        // the line comes from its writer, or, when this CPU wrote it and
        // others read it since, the read-for-ownership invalidates their
        // copies at the distance of the last of them; a line nobody wrote
        // is free (the writer is NOBODY, so is the source)
        let src = if l.writer() as usize != cpu {
            l.writer()
        } else {
            l.last_reader
        };
        let cost = if src == NOBODY {
            0
        } else {
            let src = src as usize;
            let busy = Self::is_running(&self.running, src);
            transfer(
                l,
                &mut self.tally,
                self.now,
                topo.distance(src, cpu),
                busy,
                costs,
                data as Nanos,
            )
        };
        // a new version: only the writer holds it
        l.own = cpu as u32;
        l.last_reader = NOBODY;
        if l.spilled {
            clear_row(l, &mut self.rows[line as usize * words..][..words]);
        }
        l.near = if words == 1 || l.spilled {
            0
        } else {
            NEAR_EMPTY
        };
        l.near_len = 0;
        cost
    }
}

/// Move line record `l` over distance `d` at time `now`, from a CPU that
/// is running a task (`busy_src`) or idle: wait for a transfer still in
/// flight, then occupy the line for this one, with `data` lines of message
/// bytes moving with it. Returns the wait plus the transfer time (the
/// line's weight times one line's: the lines of one object are taken as
/// fetched one after another, as the kernel's pointer chasing through them
/// does).
#[inline(always)]
fn transfer(
    l: &mut Line,
    tally: &mut LineTally,
    now: Nanos,
    d: topology::Distance,
    busy_src: bool,
    costs: &MachineCosts,
    data: Nanos,
) -> Nanos {
    // one count in the class's row: the lines by object follow from the
    // class when a report asks (`LineTable::by_kind`)
    tally.class_moves[l.class as usize][d as usize] += 1;
    tally.data_moves[d as usize] += data;
    let w = l.weight as Nanos + data;
    if now < l.busy_until {
        tally.contended += 1;
        let wait = l.busy_until - now;
        let t = costs.c2c_contended(d) * w;
        l.busy_until += t;
        tally.wait_ns += wait;
        tally.transfer_ns += wait + t;
        wait + t
    } else {
        // a line held by a CPU that is running a task comes at the
        // machine's busy figure (Kunpeng: fitted between clusters,
        // costs.rs); an idle CPU's caches give it up at the uncontended one
        let t = if busy_src {
            costs.c2c_busy(d)
        } else {
            costs.c2c(d)
        } * w;
        l.busy_until = now + t;
        tally.transfer_ns += t;
        t
    }
}

/// A spilled line's new version: clear the words of its row some reader
/// may have set, and keep the row for the next version only while versions
/// have more holders than the record's slots (a run queue the balancer
/// scans).
#[cold]
fn clear_row(l: &mut Line, row: &mut [u64]) {
    let mut stale = l.near;
    while stale != 0 {
        row[stale.trailing_zeros() as usize] = 0;
        stale &= stale - 1;
    }
    l.spilled = l.near_len > NEAR_SLOTS;
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
        assert_eq!(t.tally.contended, 0);
    }

    #[test]
    fn transfers_are_counted_by_object_and_distance() {
        let (topo, costs, mut t) = setup();
        let pipe = t.alloc_of(LineKind::PipeInodeInfo, 3);
        let rq = t.alloc_of(LineKind::Rq, 1);
        t.now = 1000;
        t.write(pipe, 0, &topo, &costs);
        t.write(rq, 0, &topo, &costs);
        t.now = 2000;
        // three lines from another CPU of the cluster, then one from
        // another cluster
        assert_eq!(t.write(pipe, 1, &topo, &costs), 3 * 35);
        t.now = 3000;
        assert_eq!(t.read(rq, 4, &topo, &costs), 36);
        let moved = LinesMoved(t.by_kind());
        let entries: Vec<_> = moved.entries().collect();
        // report order: the objects as LineKind::ALL lists them
        assert_eq!(
            entries,
            vec![("rq", "llc", 1), ("pipe_inode_info", "cluster", 3)]
        );
        assert_eq!(moved.total(), 4);
        assert_eq!(moved.by_distance(), [0, 0, 3, 1, 0, 0]);
        let json = serde_json::to_string(&moved).unwrap();
        assert_eq!(json, r#"{"rq":{"llc":1},"pipe_inode_info":{"cluster":3}}"#);
    }

    #[test]
    fn a_write_with_data_moves_the_bytes_with_the_record() {
        let (topo, costs, mut t) = setup();
        let pipe = t.alloc_pair(LineKind::PipeInodeInfo, 3, LineKind::PipeBuffer, 1);
        t.now = 1000;
        assert_eq!(
            t.write_with_data(pipe, 0, 2, &topo, &costs),
            0,
            "nobody held it"
        );
        t.now = 2000;
        // the reader takes the state: four lines, the bytes come apart
        assert_eq!(t.write(pipe, 4, &topo, &costs), 4 * 36);
        t.now = 3000;
        // the next write pulls the state and the two lines of bytes back
        assert_eq!(t.write_with_data(pipe, 0, 2, &topo, &costs), 6 * 36);
        // a stream is counted but has no record
        assert_eq!(
            t.stream(LineKind::MessageData, topology::Distance::Llc, 2, &costs),
            2 * 36
        );
        assert_eq!(
            t.stream(
                LineKind::MessageData,
                topology::Distance::SameCpu,
                2,
                &costs
            ),
            0
        );
        let moved = LinesMoved(t.by_kind());
        let entries: Vec<_> = moved.entries().collect();
        assert_eq!(
            entries,
            vec![
                ("pipe_inode_info", "llc", 6),
                ("pipe_buffer", "llc", 2),
                ("message data", "llc", 4)
            ]
        );
    }

    #[test]
    fn a_line_from_a_running_cpu_comes_at_the_busy_figure() {
        let (topo, mut costs, mut t) = setup();
        costs.c2c_busy_ns = [0, 8, 35, 74, 81, 125];
        let l = t.alloc();
        t.now = 1000;
        t.write(l, 0, &topo, &costs);
        t.now = 2000;
        assert_eq!(t.read(l, 4, &topo, &costs), 36, "CPU 0 idle: uncontended");
        // (CPU set running or idle first, at time, writer, cost, why)
        type Step = (Option<(usize, bool)>, Nanos, usize, Nanos, &'static str);
        let steps: [Step; 4] = [
            (
                Some((0, true)),
                3000,
                8,
                74,
                "from CPU 0, running, another cluster",
            ),
            (
                Some((8, true)),
                4000,
                9,
                35,
                "from a running CPU of the cluster",
            ),
            (Some((9, false)), 5000, 0, 36, "CPU 9 went idle"),
            // still in flight: contended whatever the source does
            (
                None,
                5001,
                4,
                35 + 36,
                "in flight: the wait and the contended hand-off",
            ),
        ];
        for (running, now, cpu, cost, why) in steps {
            if let Some((c, on)) = running {
                t.set_running(c, on);
            }
            t.now = now;
            assert_eq!(t.write(l, cpu, &topo, &costs), cost, "{why}");
        }
    }

    #[test]
    fn a_line_record_is_half_a_host_cache_line() {
        assert_eq!(std::mem::size_of::<Line>(), 32);
    }

    #[test]
    fn spills_and_returns() {
        // 1024 CPUs: a line keeps four readers in its record, moves to its
        // row with the fifth, keeps the row for the next version only if
        // that one has more than four readers too
        let spec = "sockets=2,cores=256,threads=2,nodes=2";
        let topo = topology::SmpSpec::parse(spec).unwrap().build(spec).unwrap();
        let costs = MachineCosts::for_machine("sapphire-rapids");
        let mut t = LineTable::new(topo.nr_cpus());
        let (l, other) = (t.alloc(), t.alloc());
        let clean = costs.clean_read_ns;
        let mut now = 0;
        let mut at = |t: &mut LineTable| {
            now += 1000; // nothing in flight
            t.now = now;
        };
        at(&mut t);
        t.write(l, 0, &topo, &costs);
        t.write(other, 0, &topo, &costs);
        let readers = [5, 300, 600, 900, 1023, 512];
        for &r in &readers {
            at(&mut t);
            assert!(t.read(l, r, &topo, &costs) > clean, "first read by {r}");
            assert_eq!(t.read(l, r, &topo, &costs), clean, "again by {r}");
        }
        assert!(t.lines[l as usize].spilled);
        // the other line's row is untouched
        at(&mut t);
        assert!(t.read(other, 600, &topo, &costs) > clean);
        assert!(!t.lines[other as usize].spilled);
        // a new version with six readers: still in the row
        at(&mut t);
        t.write(l, 2, &topo, &costs);
        assert!(t.lines[l as usize].spilled);
        for &r in &readers {
            at(&mut t);
            assert!(t.read(l, r, &topo, &costs) > clean, "after the write, {r}");
        }
        // a version with two readers: back in the record at the next write
        at(&mut t);
        t.write(l, 3, &topo, &costs);
        for &r in &readers[..2] {
            at(&mut t);
            assert!(t.read(l, r, &topo, &costs) > clean);
            assert_eq!(t.read(l, r, &topo, &costs), clean);
        }
        at(&mut t);
        t.write(l, 4, &topo, &costs);
        assert!(!t.lines[l as usize].spilled);
        at(&mut t);
        assert!(t.read(l, readers[5], &topo, &costs) > clean);
        assert_eq!(t.read(l, readers[5], &topo, &costs), clean);
    }

    #[test]
    fn an_object_of_many_lines_moves_them_all() {
        // a profile may give a channel's state up to 10^9 lines
        // (`pipe_lines`): the weight is not narrowed
        let (topo, costs, mut t) = setup();
        let l = t.alloc_lines(70_000);
        t.now = 1000;
        t.write(l, 0, &topo, &costs);
        t.now = 2000;
        assert_eq!(t.read(l, 4, &topo, &costs), 36 * 70_000);
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
        assert_eq!((t.transfers(), t.tally.contended), (3, 2));
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
            fn costs_match(ops in proptest::collection::vec((proptest::bool::weighted(0.2), 0usize..12, 0u64..80, 0usize..3), 1..600)) {
                // CPUs spread over many words of a row; more of them than a
                // line keeps in its own record
                let cpus = [0, 1, 63, 64, 200, 511, 512, 700, 777, 1000, 1022, 1023];
                check("sockets=2,cores=256,threads=2,nodes=2", &cpus, ops)?;
            }

            #[test]
            fn costs_match_on_4096_cpus(ops in proptest::collection::vec((proptest::bool::weighted(0.2), 0usize..12, 0u64..80, 0usize..3), 1..600)) {
                // ids in the high bits of a 16-bit slot, rows of 64 words
                let cpus = [0, 1, 64, 1023, 2047, 2048, 2049, 3000, 4032, 4094, 4095, 3];
                check("sockets=16,cores=128,threads=2,nodes=16", &cpus, ops)?;
            }

            #[test]
            fn costs_match_on_a_machine_of_64_cpus_or_fewer(ops in proptest::collection::vec((proptest::bool::weighted(0.2), 0usize..12, 0u64..80, 0usize..3), 1..600)) {
                let cpus = [0, 1, 2, 5, 17, 30, 31, 32, 40, 47, 62, 63];
                check("sockets=2,cores=16,threads=2,nodes=2", &cpus, ops)?;
            }
        }

        /// Three lines side by side (their rows are neighbours on a large
        /// machine), each op on the line it draws: on a third of them, a
        /// version gathers about four readers before the next write, so
        /// lines spill (`spills_and_returns` pins that path).
        fn check(
            spec: &str,
            cpus: &[usize],
            ops: Vec<(bool, usize, u64, usize)>,
        ) -> Result<(), TestCaseError> {
            let topo = topology::SmpSpec::parse(spec).unwrap().build(spec).unwrap();
            let costs = MachineCosts::for_machine("sapphire-rapids");
            let mut t = LineTable::new(topo.nr_cpus());
            let lines = [t.alloc(), t.alloc(), t.alloc()];
            let mut models: Vec<Model> = (0..3)
                .map(|_| Model {
                    writer: None,
                    last_reader: None,
                    shared: false,
                    busy_until: 0,
                    holders: HashSet::new(),
                })
                .collect();
            let mut now = 0;
            for (write, i, dt, which) in ops {
                let cpu = cpus[i];
                let (l, m) = (lines[which], &mut models[which]);
                now += dt;
                t.now = now;
                let want = if write {
                    let cost = match m.writer {
                        None => 0,
                        Some(w) if w == cpu && !m.shared => 0,
                        Some(w) if w != cpu => transfer(m, now, topo.distance(w, cpu), &costs),
                        Some(_) => {
                            let r = m.last_reader.expect("shared implies a reader");
                            transfer(m, now, topo.distance(r, cpu), &costs)
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
                            transfer(m, now, topo.distance(w, cpu), &costs)
                        }
                        _ => costs.clean_read_ns,
                    }
                };
                let got = if write {
                    t.write(l, cpu, &topo, &costs)
                } else {
                    t.read(l, cpu, &topo, &costs)
                };
                prop_assert_eq!(got, want, "line {} cpu {} write {}", which, cpu, write);
            }
            Ok(())
        }
    }
}
