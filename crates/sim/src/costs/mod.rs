//! Machine cost profiles: every hardware or OS cost the simulator charges, with
//! its source. This file holds [`MachineCosts`], each field declared with its
//! one-line meaning ([`MachineCosts::MEANINGS`], by `fields.rs`'s
//! `cost_fields!`), and the functions that charge from it; `presets.rs`
//! holds each machine preset's figures.
//!
//! Sources are the public measurements, kernel tables and vendor figures
//! named at each profile (`presets.rs`) (c2c: the per-pair CSVs of
//! github.com/nviennot/core-to-core-latency and
//! github.com/KCORES/core-to-core-latency-plus, one-way = CAS round trip / 2,
//! median over the core pairs of each distance class; idle states:
//! drivers/idle/intel_idle.c) and the OS-cost measurement that `schedlab calibrate`
//! makes (crates/native/src/calibrate.rs, the same method) run on the
//! development machine (an AMD EPYC Firecracker/KVM guest, Linux 6.18;
//! "local" below). Rules followed:
//! - a figure from a measurement table is used as printed (the median);
//! - where the source only gives a range, its midpoint is used;
//! - OS costs (syscalls, copies, context switches, fork) come from the local
//!   measurement for every profile: no public per-machine figures exist (no
//!   lmbench lat_ctx/lat_pipe table for a current server CPU with identified
//!   hardware was found), so OS costs do not vary across presets.
//!
//! No figure here is chosen to make any benchmark come out a certain way.

use crate::Nanos;
use serde::Serialize;
use topology::Distance;

mod fields;
pub mod kernel_objects;
mod presets;

use fields::cost_fields;

/// One idle state of a CPU (cpuidle), as the intel_idle tables give them.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct IdleState {
    /// Name as cpuidle shows it.
    pub name: &'static str,
    /// Exit latency in ns.
    pub exit_latency_ns: Nanos,
    /// Target residency in ns: the governor only enters the state when it
    /// predicts at least this much idle time.
    pub target_residency_ns: Nanos,
}

impl IdleState {
    /// A polling state (cpuidle's POLL, POWER's snooze): the CPU spins with
    /// TIF_POLLING set, so a waker needs no IPI.
    pub fn polls(&self) -> bool {
        matches!(self.name, "POLL" | "snooze")
    }
}

/// The numbers of other switches on a CPU between two runs of a task at
/// which the refill tables (`refill_thread_ns`, `refill_process_ns`) are
/// measured: pipe rings of 4, 8, 16, 32 and 64 tasks.
pub const REFILL_OTHERS: [u64; 5] = [3, 7, 15, 31, 63];

/// Where the built-in profiles' refill tables and channel line counts come
/// from: `schedlab calibrate` (the pipe rings and the channels used in
/// turn) on the third development machine, an Intel Sapphire-Rapids-class
/// KVM guest (2 vCPUs, Linux 6.18), 2026-12-01. Not the machine the other
/// OS costs come from, which was gone when these were added; like them,
/// they are taken for every preset (what a task's kernel working set and a
/// channel's kernel state span is the kernel's, not the machine's).
pub const REFILL_SOURCE: &str = "schedlab calibrate on an Intel Sapphire-Rapids-class KVM guest (2 vCPUs, Linux 6.18), 2026-12-01: pipe rings per hop 940, 1358, 1382, 1384, 1446, 1470 ns (threads) and 1016, 1583, 2062, 2084, 2136, 2279 ns (processes) for N = 2..64, about 1.4 switches per hop from N = 4; per switch = (hop - 2 x 145 ns - pipe_rotation_ns at 2N - 2 calls, 1, 2, 3, 7, 13, 15 ns) / switches, minus N = 2";
const REFILL_THREAD_NS: [Nanos; 5] = [120, 137, 131, 175, 198];
const REFILL_PROCESS_NS: [Nanos; 5] = [197, 518, 535, 577, 728];
/// Channel line counts, the same measurement (see `REFILL_SOURCE`).
pub const CHANNEL_LINES_SOURCE: &str = "schedlab calibrate on the same guest: 100 B write+read on CPUs 0 and 1 in turn, one shared channel against one each: pipe 863.2 - 503.3 = 360.0 ns, unix socketpair 1240.2 - 795.2 = 445.0 ns, over their c2c 62.3 ns: 6 and 7 lines";
const PIPE_LINES: u32 = 6;
const UNIX_LINES: u32 = 7;
/// Where the built-in profiles' `tcp_lines` comes from.
pub const TCP_LINES_SOURCE: &str = "not measured: one line, as before the figure existed. `schedlab calibrate` measures it on a host (a loopback TCP connection used from two CPUs in turn against one each, as for pipes and unix sockets); on this project's 2-vCPU guest on 2026-12-07 three runs gave 303.3, 487.0 and 316.0 ns more per turn at c2c 99.5, 29.1 and 30.3 ns (3, 17 and 10 lines), while the same runs put a pipe at 1, 1 and 0 lines against the 6 measured on 2026-12-01 (pipe_lines' source): the guest's CPUs were not placed as on that day, so no figure is taken from them";
const TCP_LINES: u32 = 1;

/// Where the built-in profiles' shared-file-table and depth figures come
/// from (`pipe_shared_fd_ns`, `unix_shared_fd_ns`, `pipe_depth_ns`,
/// `unix_depth_ns`).
pub const CHANNEL_CALL_SOURCE: &str = "schedlab calibrate on an Intel Sapphire-Rapids-class KVM guest (2 vCPUs, Linux 6.18, the other builds stopped), 2026-12-01: a 100 B write+read pair with a second thread alive against alone, pipe 340.5 - 271.5 ns, unix socketpair 594.9 - 533.2 ns, halved: 34 and 31 ns per call; 160 channels with k = 1, 16, 64, 128, 200 messages of 100 B queued on each, ns per call, pipes 175.4, 144.2, 144.6, 148.7, 149.7 (no point above k = 1: 0), unix socketpairs 329.4, 371.3, 401.1, 402.0, 405.7: 42, 72, 73, 76 ns over k = 1, plus the rotation table's last point (41 ns, which k = 1 paid on every call and k on one call in k) x (1 - 1/k): 80, 112, 113, 117 ns (pipes stay 0)";
const PIPE_SHARED_FD_NS: Nanos = 34;
const UNIX_SHARED_FD_NS: Nanos = 31;
const PIPE_DEPTH_NS: [Nanos; 4] = [0; 4];
const UNIX_DEPTH_NS: [Nanos; 4] = [80, 112, 113, 117];

/// Where the built-in profiles' rotation figures come from
/// (`pipe_rotation_ns`, `unix_rotation_ns`).
pub const CHANNEL_ROTATION_SOURCE: &str = "schedlab calibrate on the same guest, 2026-12-01: N channels on one CPU, one 100 B message written to each in turn then each read back, ns per call for N = 1, 4, 16, 64, 160: pipes 159.3, 161.2, 163.0, 173.0, 175.8, unix socketpairs 285.3, 298.3, 306.5, 319.5, 326.1; each N > 1 minus N = 1";
const PIPE_ROTATION_NS: [Nanos; 4] = [2, 4, 14, 17];
const UNIX_ROTATION_NS: [Nanos; 4] = [13, 21, 34, 41];

/// Reuse distances at which the rotation tables (`pipe_rotation_ns`,
/// `unix_rotation_ns`) are measured: calls on the CPU to other channels
/// between two calls on one channel (N - 1 for N channels of one kind used
/// in turn); distance 0 costs nothing extra.
pub const ROTATION_CALLS: [u64; 4] = [3, 15, 63, 159];

/// Payload bytes buffered per CPU at which the depth tables
/// (`pipe_depth_ns`, `unix_depth_ns`) are measured: 160 channels with 16,
/// 64, 128 and 200 messages of 100 B queued on each; the base point, 1
/// message on each (16,000 B), costs nothing extra.
pub const DEPTH_BYTES: [u64; 4] = [256_000, 1_024_000, 2_048_000, 3_200_000];
/// The depth tables' base point, bytes.
pub const DEPTH_BASE_BYTES: u64 = 16_000;

/// `v` at `x` on the piecewise-linear curve through (`x0`, 0) and
/// (`xs[i]`, `vs[i]`): 0 up to `x0`, the last value beyond the last point.
/// The points rise; the values may fall. Inlined: two calls per pipe or
/// socket call (1,038 -> 1,010 instructions per event on hackbench).
#[inline(always)]
pub(crate) fn piecewise(x0: u64, xs: &[u64], vs: &[Nanos], x: u64) -> Nanos {
    if x <= x0 {
        return 0;
    }
    let (mut k0, mut v0) = (x0, 0u64);
    for (&k1, &v1) in xs.iter().zip(vs) {
        if x <= k1 {
            // v0 + (v1 - v0) (x - k0) / (k1 - k0), either sign; u64 is
            // enough (spans of a few million, values of microseconds) and
            // keeps u128 division off the switch path
            let (span, at) = (k1 - k0, x - k0);
            return if v1 == v0 {
                // a flat piece (an all-zero table): no division
                v0
            } else if v1 > v0 {
                v0 + (v1 - v0) * at / span
            } else {
                v0 - (v0 - v1) * at / span
            };
        }
        (k0, v0) = (k1, v1);
    }
    v0
}

/// Kunpeng 920's OS-cost factor (see `MachineCosts::for_machine`), fitted
/// to the one-cluster hackbench time (crates/sim/tests/kunpeng.rs,
/// `refit_kunpeng`).
pub const KUNPENG_OS_SCALE_MILLI: u32 = 1443;

/// Kunpeng 920: a line fetched from a CPU of another cluster of the die
/// while that CPU runs a task, ns, fitted to the four-cluster hackbench time
/// (crates/sim/tests/kunpeng.rs, `refit_kunpeng`; the method and figure are
/// in `MachineCosts::for_machine`'s Kunpeng entry and docs/costs.md).
pub const KUNPENG_BUSY_CROSS_CLUSTER_NS: Nanos = 71;

const fn us(v: u64) -> Nanos {
    v * 1000
}

cost_fields! {
    /// All costs the simulator charges for one machine. Each field is
    /// declared with its meaning in one line (`=> "..."`, the comment above
    /// its key in a profile file: [`MachineCosts::MEANINGS`]); the fields'
    /// order is the profile file's key order.
    #[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
    pub struct MachineCosts {
        /// Preset this profile belongs to.
        pub machine: String => "the machine this profile describes (a label only)",
        /// One-way cache-line transfer (c2c) by distance class, ns, indexed by
        /// `Distance as usize` (SameCpu, Smt, Cluster, Llc, Package, Remote).
        pub c2c_ns: [Nanos; 6] =>
            "one-way cache-line transfer by distance class [same CPU, SMT, cluster, LLC, package, remote], ns",
        /// A read of a line another CPU already holds clean (no transfer), ns.
        pub clean_read_ns: Nanos =>
            "a read of a line another CPU already holds clean (no transfer), ns",
        /// IPI delivery to another CPU, ns.
        pub ipi_ns: Nanos => "IPI delivery to another CPU, ns",
        /// Idle states, shallowest first.
        pub idle_states: Vec<IdleState> =>
            "cpuidle states, shallowest first: name, exit latency and target residency, ns",
        /// Total throughput of a core with k busy threads, in 1/1000 of one
        /// thread alone; index k-1. Per-thread speed = table[k-1]/k.
        pub smt_throughput_milli: Vec<u32> =>
            "core throughput with k busy hardware threads, 1/1000 of one thread alone; entry k-1",
        /// One pipe read or write syscall (entry, fd lookup, pipe lock, exit), ns.
        pub pipe_syscall_ns: Nanos => "one pipe read or write syscall, ns",
        /// One unix stream send or receive syscall (includes skb handling), ns.
        pub unix_syscall_ns: Nanos => "one unix stream socket send or receive syscall, ns",
        /// Cache lines of a pipe's kernel state (lock, indices, wait queues,
        /// buffer page, file counts) that a write or read pulls over when the
        /// pipe was last used on another CPU: the channel's modelled line
        /// moves this many lines at each transfer.
        pub pipe_lines: u32 =>
            "cache lines a pipe write or read pulls over when the pipe was last used on another CPU",
        /// The same for a unix stream socket (both ends' state and the skb).
        pub unix_lines: u32 =>
            "cache lines a unix stream send or receive pulls over when the socket was last used on another CPU",
        /// The same for a loopback TCP connection (both sockets' state,
        /// the skb, the loopback softirq's work on the receiving socket).
        pub tcp_lines: u32 =>
            "cache lines a loopback TCP send or receive pulls over when the connection was last used on another CPU",
        /// Plain syscall round trip (poll, wait, ...), ns.
        pub syscall_ns: Nanos => "a plain syscall round trip (getppid), ns",
        /// One loopback TCP send syscall (TCP_NODELAY): the whole stack down and,
        /// in the same call, up the loopback device to the receiver's queue, ns.
        pub tcp_send_ns: Nanos => "one loopback TCP send syscall (TCP_NODELAY), ns",
        /// One loopback TCP receive syscall, ns.
        pub tcp_recv_ns: Nanos => "one loopback TCP receive syscall, ns",
        /// Per byte on each side of a loopback TCP transfer, in 1/1000 ns.
        pub tcp_ps_per_byte: u64 => "per byte on each side of a loopback TCP transfer, 1/1000 ns",
        /// gettimeofday / clock_gettime through the vDSO, ns.
        pub gettimeofday_ns: Nanos => "gettimeofday / clock_gettime through the vDSO, ns",
        /// FUTEX_WAKE_PRIVATE syscall, without the wake-up itself, ns.
        pub futex_wake_ns: Nanos => "FUTEX_WAKE_PRIVATE syscall without the wake-up itself, ns",
        /// FUTEX_WAIT_PRIVATE syscall entry until the task sleeps, ns.
        pub futex_wait_ns: Nanos => "FUTEX_WAIT_PRIVATE syscall entry until the task sleeps, ns",
        /// An uncontended atomic compare-and-swap on an owned line, ns.
        pub atomic_ns: Nanos => "an uncontended compare-and-swap on an owned line, ns",
        /// One multiply-add of schbench's naive matrix multiply (unsigned long,
        /// i-j-k loops), in 1/1000 ns, with the matrices in cache.
        pub matmul_madd_ps: u64 =>
            "one multiply-add of schbench's naive matrix multiply, in cache, 1/1000 ns",
        /// Copy cost per byte between user and kernel, in 1/1000 ns.
        pub copy_ps_per_byte: u64 => "user/kernel copy per byte, 1/1000 ns",
        /// Voluntary context switch between threads of one process, ns.
        pub ctx_switch_ns: Nanos => "voluntary context switch between threads of one process, ns",
        /// Extra cost when the switch changes address space (mm), ns.
        pub mm_switch_extra_ns: Nanos => "extra cost when a switch changes address space, ns",
        /// Cache refill a task pays when it runs again on a CPU after other
        /// tasks ran there, ns, for `REFILL_OTHERS` (3, 7, 15, 31, 63) other
        /// switches in between, threads of one process: lmbench lat_ctx's
        /// method, a pipe ring of N = 4 ... 64 tasks on one CPU, per hop, minus
        /// the ring of 2 (whose switch is `ctx_switch_ns`). A task that comes
        /// back after one other task pays nothing extra; past 63 the last value.
        pub refill_thread_ns: [Nanos; 5] =>
            "cache refill of a task run again on a CPU after 3, 7, 15, 31, 63 other switches there (threads of one process), ns; 0 after one other; a migrated task pays the last value",
        /// The same for a ring of processes (every switch changes mm, so it
        /// includes the TLB refill), minus the ring of 2 processes.
        pub refill_process_ns: [Nanos; 5] =>
            "the same when the switch changes address space (processes: TLB refill included), ns",
        /// Extra per pipe call by a thread whose process has other live
        /// threads: the file table is shared, so the call takes and drops a
        /// reference on its file (fs/file.c `__fget_light`), ns.
        pub pipe_shared_fd_ns: Nanos =>
            "extra per pipe call by a thread whose process has other live threads (a shared file table), ns",
        /// The same for a unix stream socket call, ns.
        pub unix_shared_fd_ns: Nanos => "the same for a unix stream socket call, ns",
        /// Extra per pipe call with `DEPTH_BYTES` payload bytes buffered in the
        /// run's pipes per CPU in use (data that no longer fits the caches),
        /// against 16,000 bytes, ns.
        pub pipe_depth_ns: [Nanos; 4] =>
            "extra per pipe call with 256000, 1024000, 2048000, 3200000 payload bytes buffered in the run's pipes per CPU in use, against 16000, ns",
        /// The same for unix stream sockets (whose skbs take about 768 B per
        /// 100 B message), ns.
        pub unix_depth_ns: [Nanos; 4] => "the same for unix stream sockets, ns",
        /// Extra per pipe call made after `ROTATION_CALLS` calls on the CPU to
        /// other pipes since this pipe's last call there (its kernel state and
        /// page evicted by theirs), against none, ns.
        pub pipe_rotation_ns: [Nanos; 4] =>
            "extra per pipe call made after 3, 15, 63, 159 calls on the CPU to other pipes or sockets since this pipe's last call there, against none, ns",
        /// The same for unix stream sockets, ns.
        pub unix_rotation_ns: [Nanos; 4] => "the same for unix stream sockets, ns",
        /// Creating a thread (clone until the thread runs), ns.
        pub thread_create_ns: Nanos => "creating a thread, clone until it runs, ns",
        /// Creating a process (fork until the child runs), ns.
        pub fork_ns: Nanos => "creating a process, fork until the child runs, ns",
        /// A thread's exit until it is joined, ns (charged at its exit).
        pub thread_exit_ns: Nanos => "a thread's exit until it is joined, ns",
        /// A process's exit (mm teardown) until it is reaped, ns.
        pub process_exit_ns: Nanos => "a process's exit until it is reaped, ns",
        /// Scheduler tick frequency.
        pub hz: u64 => "scheduler tick frequency, Hz",
        /// Idle-state exit latencies delay the woken CPU (false under
        /// `--costs off`; the states themselves stay, so policies that read a
        /// CPU's idle depth, like find_idlest_group_cpu, decide the same way).
        pub charge_idle_exit: bool =>
            "idle-state exit latencies delay a woken CPU (false only in --costs off profiles)",
        /// How the wake-up latency of an idle CPU (IPI plus idle exit) varies
        /// from one wake-up to the next: the latency relative to its median, in
        /// 1/1000, at the quantiles 0, 0.25, 0.5, 0.99 and 1 (linear between).
        pub wake_latency_spread_milli: [u32; 5] =>
            "an idle CPU's wake-up latency (IPI + exit) relative to its median at quantiles 0, 0.25, 0.5, 0.99, 1, in 1/1000",
        /// A line transfer that finds the line still moving (contended), ns by
        /// distance class as `c2c_ns`. Equal to `c2c_ns` where no contended
        /// measurement exists.
        pub c2c_contended_ns: [Nanos; 6] =>
            "a line transfer that finds the line still moving (contended), by distance class as c2c_ns, ns",
        /// A line fetched from a CPU that is running a task, no transfer of
        /// it in flight, ns by distance class as `c2c_ns`: the hand-off
        /// when the holder's caches are busy with its own work. Equal to
        /// `c2c_ns` where nothing says otherwise.
        pub c2c_busy_ns: [Nanos; 6] =>
            "a line fetched from a CPU that is running a task (none of its transfers in flight), by distance class as c2c_ns, ns",
        /// A dummy cost charged to the waker's CPU at every try_to_wake_up,
        /// after placement, ns: CPU time spent on nothing the model decides
        /// from. Zero in every profile; the A/A check of the model's
        /// sensitivity sets it (see `sim::run::SimOptions::dummy_wakeup_ns`).
        pub dummy_wakeup_ns: Nanos =>
            "diagnostic only: CPU time charged to the waker at every wake-up, ns (0 except in the A/A check)",
        /// The factor, in 1/1000, applied to the OS costs measured on the
        /// development machine (syscalls, pipe/socket/TCP calls, copies, context
        /// switches, task creation and exit, futex calls) for this machine: 1000
        /// where they are taken as they are; a value fitted to one published
        /// whole-benchmark figure where the machine's own are unknown.
        pub os_scale_milli: u32 =>
            "the factor (1/1000) already applied to the development machine's OS costs for this machine (a record; 1000: as measured)",
        /// DRAM traffic of one thread streaming from its own node, in 1/1000 ns
        /// per byte; a page on another node costs this times the SLIT distance
        /// over 10 (`Op::ComputeMem`).
        pub mem_ps_per_byte: u64 =>
            "one thread streaming DRAM on its own node, 1/1000 ns per byte (a remote page: times SLIT distance / 10)",
        /// One PTE made PROT_NONE by the NUMA scanner (change_prot_numa), ns.
        pub numa_pte_update_ns: Nanos => "one PTE made PROT_NONE by the NUMA scanner, ns",
        /// One NUMA hinting fault (trap, do_numa_page, PTE restore), ns.
        pub numa_hint_fault_ns: Nanos => "one NUMA hinting fault, ns",
        /// Migrating one base page on a hinting fault (allocate on the target,
        /// unmap, copy, remap), ns.
        pub numa_migrate_page_ns: Nanos => "migrating one 4 KiB page on a hinting fault, ns",
        /// DRAM bandwidth of one NUMA node, MB/s, shared by the segments
        /// streaming from it (0: not limited).
        pub node_mem_mb_s: u64 =>
            "peak DRAM bandwidth of one NUMA node, MB/s, shared by the segments streaming from it (0: not limited)",
    }
}

impl MachineCosts {
    /// c2c transfer at a distance.
    #[inline]
    pub fn c2c(&self, d: Distance) -> Nanos {
        self.c2c_ns[d as usize]
    }

    /// The wake-up latency `median_ns` varied as the spread says, for a
    /// uniform draw `u` in [0, 2^64).
    #[inline]
    pub fn spread_wake_latency(&self, median_ns: Nanos, u: u64) -> Nanos {
        const Q: [u64; 5] = [0, 250, 500, 990, 1000];
        let q = ((u as u128 * 1000) >> 64) as u64; // 0..1000
        let s = &self.wake_latency_spread_milli;
        let i = (1..5).find(|&i| q < Q[i]).unwrap_or(4);
        let (q0, q1) = (Q[i - 1], Q[i]);
        let (v0, v1) = (s[i - 1] as u64, s[i] as u64);
        let milli = v0 + (v1.max(v0) - v0) * (q - q0) / (q1 - q0).max(1);
        median_ns * milli / 1000
    }

    /// The cache refill of a task switched in on a CPU where `others`
    /// other switches happened since it last ran there (`mm_changed`: the
    /// switch changes address space): linear between the measured ring
    /// sizes, 0 for one other task (the ring of two is the plain switch),
    /// the last value beyond. A task new to the CPU (migrated) is charged
    /// `others = u64::MAX`: none of its working set is in this CPU's
    /// private caches.
    #[inline]
    pub fn switch_refill(&self, others: u64, mm_changed: bool) -> Nanos {
        let t = if mm_changed {
            &self.refill_process_ns
        } else {
            &self.refill_thread_ns
        };
        piecewise(1, &REFILL_OTHERS, t, others)
    }

    /// What a task (or host thread) pays to switch in on `cpu` beyond the
    /// plain switch: the mm switch when the CPU last ran another address
    /// space (`mm_changed`), and the cache refill: by reuse distance when
    /// it last ran on `cpu` (`seq`, the CPU's switch count including this
    /// one, against `ran_at_switch`, the count at its last switch-in
    /// there: one other task in between is 2 - 1), the full refill when it
    /// last ran elsewhere (none of its working set is in this CPU's private
    /// caches), nothing on its first run.
    #[inline]
    pub fn switch_in_extra(
        &self,
        last_ran: Option<usize>,
        cpu: usize,
        seq: u64,
        ran_at_switch: u64,
        mm_changed: bool,
    ) -> Nanos {
        let mm = if mm_changed {
            self.mm_switch_extra_ns
        } else {
            0
        };
        mm + match last_ran {
            Some(from) if from == cpu => self.switch_refill(seq - 1 - ran_at_switch, mm_changed),
            Some(_) => self.switch_refill(u64::MAX, mm_changed),
            None => 0,
        }
    }

    /// A line transfer from a CPU running a task, at a distance.
    #[inline]
    pub fn c2c_busy(&self, d: Distance) -> Nanos {
        self.c2c_busy_ns[d as usize]
    }

    /// A contended line transfer at a distance.
    #[inline]
    pub fn c2c_contended(&self, d: Distance) -> Nanos {
        self.c2c_contended_ns[d as usize]
    }

    /// Per-thread speed in 1/1024 when `busy` threads of a core run.
    #[inline]
    pub fn smt_speed_1024(&self, busy: usize) -> u64 {
        if busy <= 1 || self.smt_throughput_milli.is_empty() {
            return 1024;
        }
        let k = busy.min(self.smt_throughput_milli.len());
        (self.smt_throughput_milli[k - 1] as u64 * 1024) / (1000 * busy as u64)
    }

    /// Copy cost of `bytes` bytes.
    #[inline]
    pub fn copy_ns(&self, bytes: u64) -> Nanos {
        (bytes * self.copy_ps_per_byte) / 1000
    }

    /// The profile with its OS costs multiplied by `milli`/1000 (and
    /// `os_scale_milli` recording it).
    pub fn with_os_scale(mut self, milli: u32) -> MachineCosts {
        let k = milli as u64;
        for v in [
            &mut self.pipe_syscall_ns,
            &mut self.unix_syscall_ns,
            &mut self.syscall_ns,
            &mut self.tcp_send_ns,
            &mut self.tcp_recv_ns,
            &mut self.tcp_ps_per_byte,
            &mut self.gettimeofday_ns,
            &mut self.futex_wake_ns,
            &mut self.futex_wait_ns,
            &mut self.copy_ps_per_byte,
            &mut self.ctx_switch_ns,
            &mut self.mm_switch_extra_ns,
            &mut self.thread_create_ns,
            &mut self.fork_ns,
            &mut self.thread_exit_ns,
            &mut self.process_exit_ns,
            &mut self.pipe_shared_fd_ns,
            &mut self.unix_shared_fd_ns,
        ] {
            *v = *v * k / 1000;
        }
        for v in self
            .refill_thread_ns
            .iter_mut()
            .chain(self.refill_process_ns.iter_mut())
            .chain(self.pipe_depth_ns.iter_mut())
            .chain(self.unix_depth_ns.iter_mut())
            .chain(self.pipe_rotation_ns.iter_mut())
            .chain(self.unix_rotation_ns.iter_mut())
        {
            *v = *v * k / 1000;
        }
        self.os_scale_milli = (self.os_scale_milli as u64 * k / 1000) as u32;
        self
    }

    /// The same profile with every modelled cost set to zero (`--costs off`):
    /// decisions can then be compared without cost feedback.
    pub fn zeroed(&self) -> MachineCosts {
        MachineCosts {
            idle_states: self.idle_states.clone(),
            hz: self.hz,
            charge_idle_exit: false,
            ..MachineCosts::blank(&self.machine)
        }
    }

    /// A profile with every cost zero and no idle states (the starting
    /// point of the presets and of `zeroed`).
    fn blank(machine: &str) -> MachineCosts {
        MachineCosts {
            machine: machine.to_string(),
            c2c_ns: [0; 6],
            clean_read_ns: 0,
            ipi_ns: 0,
            idle_states: Vec::new(),
            smt_throughput_milli: Vec::new(),
            pipe_syscall_ns: 0,
            unix_syscall_ns: 0,
            pipe_lines: 1,
            unix_lines: 1,
            tcp_lines: 1,
            syscall_ns: 0,
            tcp_send_ns: 0,
            tcp_recv_ns: 0,
            tcp_ps_per_byte: 0,
            gettimeofday_ns: 0,
            futex_wake_ns: 0,
            futex_wait_ns: 0,
            atomic_ns: 0,
            matmul_madd_ps: 0,
            copy_ps_per_byte: 0,
            ctx_switch_ns: 0,
            mm_switch_extra_ns: 0,
            refill_thread_ns: [0; 5],
            refill_process_ns: [0; 5],
            pipe_shared_fd_ns: 0,
            unix_shared_fd_ns: 0,
            pipe_depth_ns: [0; 4],
            unix_depth_ns: [0; 4],
            pipe_rotation_ns: [0; 4],
            unix_rotation_ns: [0; 4],
            thread_create_ns: 0,
            fork_ns: 0,
            thread_exit_ns: 0,
            process_exit_ns: 0,
            hz: 0,
            charge_idle_exit: true,
            c2c_contended_ns: [0; 6],
            c2c_busy_ns: [0; 6],
            wake_latency_spread_milli: [1000; 5],
            dummy_wakeup_ns: 0,
            os_scale_milli: 1000,
            mem_ps_per_byte: 0,
            numa_pte_update_ns: 0,
            numa_hint_fault_ns: 0,
            numa_migrate_page_ns: 0,
            node_mem_mb_s: 0,
        }
    }

    /// The shallowest state that halts (does not poll): where
    /// `default_idle_call()` and haltpoll's halt step go.
    pub fn halt_state(&self) -> usize {
        self.idle_states
            .iter()
            .position(|s| !s.polls())
            .unwrap_or(0)
    }

    /// The deepest idle state whose target residency fits `predicted_ns`
    /// (the menu governor's rule, simplified: no latency constraint).
    pub fn pick_idle_state(&self, predicted_ns: Nanos) -> usize {
        let mut best = 0;
        for (i, s) in self.idle_states.iter().enumerate() {
            if s.target_residency_ns <= predicted_ns {
                best = i;
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refill_curve_is_unchanged_by_the_shared_interpolation() {
        let mut m = MachineCosts::for_machine("generic");
        m.refill_thread_ns = [100, 200, 150, 300, 400];
        let r = |k| m.switch_refill(k, false);
        assert_eq!((r(0), r(1), r(2), r(3)), (0, 0, 50, 100));
        assert_eq!((r(5), r(7), r(11), r(15)), (150, 200, 175, 150));
        assert_eq!((r(63), r(64), r(u64::MAX)), (400, 400, 400));
    }

    #[test]
    fn smt_speed_is_per_thread_share() {
        let m = MachineCosts::for_machine("xeon-12c24t");
        assert_eq!(m.smt_speed_1024(1), 1024);
        assert_eq!(m.smt_speed_1024(2), 1300 * 1024 / 2000);
        let k = MachineCosts::for_machine("kunpeng920");
        assert_eq!(k.smt_speed_1024(2), 1024);
    }

    #[test]
    fn governor_picks_deepest_fitting_state() {
        let m = MachineCosts::for_machine("xeon-12c24t");
        assert_eq!(m.pick_idle_state(0), 0);
        assert_eq!(m.pick_idle_state(us(25)), 1);
        assert_eq!(m.pick_idle_state(us(10_000)), 3);
    }

    #[test]
    fn zeroed_has_no_cost() {
        let z = MachineCosts::for_machine("kunpeng920").zeroed();
        assert_eq!(z.c2c_ns, [0; 6]);
        assert_eq!(
            z.ctx_switch_ns + z.pipe_syscall_ns + z.ipi_ns + z.clean_read_ns,
            0
        );
        assert_eq!(z.smt_speed_1024(2), 1024);
        assert!(!z.charge_idle_exit);
        assert_eq!(z.idle_states.len(), 1);
    }
}
