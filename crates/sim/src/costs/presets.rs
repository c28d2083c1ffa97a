//! The cost profiles of the machine presets: every figure with its
//! source, beside the machine it is for (the charge functions that use
//! them are in the parent module).

use super::*;

impl MachineCosts {
    /// The cost profile of a topology preset. Unknown machines (imported from
    /// sysfs or hwloc) get the generic profile.
    pub fn for_machine(machine: &str) -> MachineCosts {
        let scale = match machine {
            "kunpeng920" | "kunpeng920-1s" | "kunpeng920-node" => KUNPENG_OS_SCALE_MILLI,
            _ => 1000,
        };
        Self::for_machine_at_os_scale(machine, scale)
    }

    /// A preset's profile with its OS costs scaled by `os_scale_milli`
    /// instead of the preset's own factor: how a factor is fitted (see
    /// crates/sim/tests/kunpeng.rs, `refit_kunpeng_os_scale`).
    pub fn for_machine_at_os_scale(machine: &str, os_scale_milli: u32) -> MachineCosts {
        Self::unscaled(machine).with_os_scale(os_scale_milli)
    }

    fn unscaled(machine: &str) -> MachineCosts {
        // OS costs, local measurement (the method of `schedlab calibrate`, median of
        // 7 batches): pipe write+read of 100 B = 686 ns -> 343 ns per call;
        // unix socketpair write+read 100 B = 1771 ns -> 885 ns per call (timed
        // apart in batches, write and read differ by under 6%: unix 878 / 929,
        // pipe 299 / 307 ns, so one figure per call kind);
        // getppid 169 ns; 4000 B vs 100 B pipe pair: (778-686)/(2*3900 B)
        // = 0.0118 ns/B; pipe ping-pong on one CPU: threads 5122 ns, processes
        // 5375 ns per round trip = 2 switches + 4 pipe calls, so a thread
        // switch = (5122 - 4*343)/2 = 1875 ns and an mm switch adds
        // (5375-5122)/2 = 126 ns. Task lifetime, split (second run of the
        // script): fork until the child runs 94 us, its exit until reaped
        // 65 us; pthread_create until the thread runs 13 us, its exit until
        // joined 12 us. (The exit figures include the parent's wake-up, which
        // the engine also models: a few us counted twice.)
        let os = |mut m: MachineCosts| {
            m.pipe_syscall_ns = 343;
            m.unix_syscall_ns = 885;
            // Measured later with the same script on another machine (an
            // Intel Sapphire-Rapids-class Firecracker guest, 2 vCPUs, kernel
            // 6.18; median of 5 clean runs of 7 batches each). Its figures
            // for the costs above differ (syscall 78 ns, pipe call 143 ns,
            // unix call 287 ns, thread switch ~810 ns), so the two sets are
            // not one machine; the ones above are kept until the cost-profile
            // issue measures one set per machine.
            // - loopback TCP, 100 B, write and read timed apart in groups of
            //   200: write 1101 ns, read 265 ns; a straight line through
            //   100 B and 65536 B gives 1098 ns + 0.033 ns/B per write and
            //   262 ns + 0.034 ns/B per read;
            m.tcp_send_ns = 1098;
            m.tcp_recv_ns = 262;
            m.tcp_ps_per_byte = 33;
            // - gettimeofday through the vDSO (clocksource tsc): 17.6 ns;
            m.gettimeofday_ns = 18;
            // - FUTEX_WAKE_PRIVATE with no waiter 96.9 ns (the syscall; the
            //   wake-up itself is modelled by the engine), FUTEX_WAIT_PRIVATE
            //   returning EAGAIN 143 ns (entry, word check, exit);
            m.futex_wake_ns = 97;
            m.futex_wait_ns = 143;
            // - an uncontended __sync_bool_compare_and_swap: 4.84 ns (line
            //   transfers are added by the cache-line model);
            m.atomic_ns = 5;
            // - schbench's naive n x n unsigned-long matrix multiply (i-j-k,
            //   storing to C on every k), gcc -O2: n = 104 (its default 256 KB
            //   footprint) 411.4 us = 0.366 ns per multiply-add (n = 52:
            //   0.430 ns).
            m.matmul_madd_ps = 366;
            m.syscall_ns = 169;
            m.copy_ps_per_byte = 12;
            m.ctx_switch_ns = 1875;
            m.mm_switch_extra_ns = 126;
            // Refill after other tasks ran (see REFILL_SOURCE).
            m.refill_thread_ns = REFILL_THREAD_NS;
            m.refill_process_ns = REFILL_PROCESS_NS;
            m.pipe_lines = PIPE_LINES;
            m.unix_lines = UNIX_LINES;
            m.tcp_lines = TCP_LINES;
            // Colder channel calls (see CHANNEL_CALL_SOURCE).
            m.pipe_shared_fd_ns = PIPE_SHARED_FD_NS;
            m.unix_shared_fd_ns = UNIX_SHARED_FD_NS;
            m.pipe_depth_ns = PIPE_DEPTH_NS;
            m.unix_depth_ns = UNIX_DEPTH_NS;
            m.pipe_rotation_ns = PIPE_ROTATION_NS;
            m.unix_rotation_ns = UNIX_ROTATION_NS;
            m.thread_create_ns = us(13);
            m.fork_ns = us(94);
            m.thread_exit_ns = us(12);
            m.process_exit_ns = us(65);
            // HZ=250, the common distribution default (kernel/Kconfig.hz:
            // `default HZ_250` among 100/250/300/1000).
            m.hz = 250;
            // Memory and NUMA-balancing costs, measured on the development
            // machine (Intel Xeon KVM guest, 2 vCPUs, one node, Linux 6.18,
            // THP madvise; gcc -O2, best of 5 over 256 MiB; the methods are
            // in docs/numa.md):
            // - a 64-bit-word sum over a populated 256 MiB array: 8.6 GB/s,
            //   0.116 ns per byte, one thread's local streaming cost;
            m.mem_ps_per_byte = 116;
            // - mprotect(PROT_NONE) over the populated 256 MiB: 28-32 ns
            //   per 4 KiB PTE (change_protection, as change_prot_numa);
            m.numa_pte_update_ns = 30;
            // - a write to each page of a fresh shared mapping of a
            //   populated /dev/shm file (one minor fault per page, no
            //   allocation, no fault-around): 761-782 ns; taken for the
            //   hinting fault, which also only restores a mapping;
            m.numa_hint_fault_ns = 760;
            // - first touch of anonymous 4 KiB pages (allocate, zero, map):
            //   1226-1301 ns; a migration allocates, copies instead of
            //   zeroing and remaps: taken as that plus two PTE updates.
            m.numa_migrate_page_ns = 1300;
            m
        };
        let base =
            |machine: &str, c2c: [Nanos; 6], ipi: Nanos, idle: Vec<IdleState>, smt: Vec<u32>| {
                os(MachineCosts {
                    c2c_ns: c2c,
                    c2c_contended_ns: c2c,
                    c2c_busy_ns: c2c,
                    // IPI wake of an idle CPU, AMD Zen 3 in HLT, 10k pinned
                    // samples (Lewis Caroll / Wyes Karny, LKML 2022-04-05,
                    // the patch making MWAIT the default idle on Zen): min
                    // 1.7, p25 1.9, median 2.0, p99 2.8 us, so relative to
                    // the median 0.85, 0.95, 1, 1.40 (the maximum is not
                    // given: taken as p99). The only per-wake-up distribution
                    // published, so every profile takes its shape around its
                    // own IPI and exit figures.
                    wake_latency_spread_milli: [850, 950, 1000, 1400, 1400],
                    // A probe of a shared-clean line, ~10-20 ns -> 15 (source:
                    // the project's calibration notes; original not recorded).
                    clean_read_ns: 15,
                    ipi_ns: ipi,
                    idle_states: idle,
                    smt_throughput_milli: smt,
                    ..MachineCosts::blank(machine)
                })
            };
        let st = |name, exit_us: u64, res_us: u64| IdleState {
            name,
            exit_latency_ns: us(exit_us),
            target_residency_ns: us(res_us),
        };
        // IPI delivery ~1 us (source: the project's calibration notes;
        // original not recorded; it sits below the 1.2 us minimum IPI wake of
        // an MWAIT-idle AMD Zen 3 CPU in Lewis Caroll / Wyes Karny's LKML
        // patch of 2022-04-05, which includes the C1 exit).
        let ipi = us(1);
        // Kunpeng and Altra idle in WFI (arm64 `cpu_do_idle()`), exit on the
        // order of 1 us; no public measurement (source: the project's
        // calibration notes; original not recorded): 1 us exit latency,
        // entered whenever idle.
        let wfi = vec![st("WFI", 1, 1)];
        let mut m = match machine {
            // c2c: Kunpeng 920-6426, 1 socket (nviennot): cluster 34.5,
            // same die other cluster 35.7, other die 80.5; cross socket not
            // measured: midpoint of the project's suggested 110-140, the
            // spread of nviennot's dual-socket Xeon medians from Sandy Bridge
            // on (108-141), = 125.
            //
            // Contended transfers: Barry Song's false-sharing loop (one
            // reader and one writer on one line, 0xfffffff iterations; RFC v3
            // of the cluster scheduler, linux-arm-kernel 2021-01-06) took
            // 0.832 s on CPUs 0,1 (one cluster) and 1.133 s on CPUs 0,4 (two
            // clusters of one die). The absolute per-iteration times (3.1 and
            // 4.2 ns) include what the store buffer batches, so only their
            // ratio is used: a contended hand-off inside a cluster costs
            // 0.832/1.133 = 0.734 of one between clusters, which is anchored
            // at the uncontended cross-cluster hand-off (36 ns): 26 ns. No
            // contended figure is published across dies or sockets, so those
            // stay at the uncontended ones.
            //
            // OS costs: no per-call figures are published for Kunpeng 920,
            // so the development machine's are scaled by one factor fitted
            // to one published whole-benchmark time: `hackbench -p -T -l
            // 20000 -g 1` on CPUs 0-3 (one cluster) takes 4.285 s (Barry
            // Song, RFC v3 of the cluster scheduler, 2021-01-06). Fitted once
            // (KUNPENG_OS_SCALE_MILLI); the other time of the same message,
            // over four clusters, is left to the model.
            "kunpeng920" | "kunpeng920-1s" | "kunpeng920-node" => MachineCosts {
                c2c_contended_ns: [0, 8, 26, 36, 81, 125],
                c2c_busy_ns: [0, 8, 35, KUNPENG_BUSY_CROSS_CLUSTER_NS, 81, 125],
                ..base(machine, [0, 8, 35, 36, 81, 125], ipi, wfi, vec![])
            },
            // POWER9 (KCORES, 2x POWER9 SMT4 16c file): within the core pair
            // <= 17, other core 483, cross socket 717. CEDE wake: measured
            // median 5.7 us (github.com/linuxppc/issues/issues/370).
            // SMT: IBM's POWER8 claim SMT2 = 1.6x (AnandTech POWER8 review),
            // SMT8 ~ 2x ST (AnandTech show/9567 p.9, 7-zip; weak); for
            // the 4-thread small core take 1.0, 1.6, 1.8 (interpolated), 2.0.
            "power9-smt8" => base(
                machine,
                [0, 17, 17, 17, 483, 717],
                ipi,
                vec![
                    st("snooze", 0, 0),
                    IdleState {
                        name: "CEDE",
                        exit_latency_ns: 5700,
                        target_residency_ns: us(10),
                    },
                ],
                vec![1000, 1600, 1800, 2000],
            ),
            // Dual X5650 Westmere (nviennot): SMT 7.1, LLC 37.2, cross
            // socket 73.7. intel_idle `nehalem_cstates`. SMT: Intel 0.65 per
            // thread (plantegg's sysbench point-select on a Xeon 8269CY,
            // 28208 -> 36754 QPS, plantegg/plantegg.github.io; Intel's "How
            // to Determine the Effectiveness of HT": up to 1.30x).
            "xeon-12c24t" => base(
                machine,
                [0, 7, 37, 37, 74, 74],
                ipi,
                vec![
                    st("C1", 3, 6),
                    st("C1E", 10, 20),
                    st("C3", 20, 80),
                    st("C6", 200, 800),
                ],
                vec![1000, 1300],
            ),
            // Dual E5-2699 v4 Broadwell-EP: no published c2c measurement
            // of this part was found; the project's suggested defaults for
            // its classes (calibration notes): SMT 8 (nviennot's Xeon SMT
            // medians, 7.1-8.9), a monolithic Intel LLC 50 (45-55 ns, the
            // nviennot/KCORES Xeon medians from Cascade Lake 46.6 to SPR
            // 55.3; Broadwell's ring is the predecessor), cross socket 125
            // (the midpoint of the 110-140 of nviennot's dual-socket Xeons
            // from Sandy Bridge on). intel_idle `bdw_cstates` up to C6 (the
            // server part's deepest core state): C1 2/2, C1E 10/20, C3
            // 40/100, C6 133/400 us. SMT 0.65 per thread (as the X5650).
            "broadwell-ep" => base(
                machine,
                [0, 8, 50, 50, 50, 125],
                ipi,
                vec![
                    st("C1", 2, 2),
                    st("C1E", 10, 20),
                    st("C3", 40, 100),
                    st("C6", 133, 400),
                ],
                vec![1000, 1300],
            ),
            // Jacobsville: no c2c data; the project's suggested defaults:
            // cluster 35 (Kunpeng's 4-core cluster, nviennot 34.5) and Intel
            // monolithic LLC 45-55 (nviennot/KCORES Xeon medians, Cascade
            // Lake 46.6 to SPR 55.3) -> 50. intel_idle `snr_cstates`.
            "jacobsville" => base(
                machine,
                [0, 8, 35, 50, 50, 125],
                ipi,
                vec![st("C1", 2, 2), st("C1E", 15, 25), st("C6", 130, 500)],
                vec![],
            ),
            // EPYC 7R13 Milan (nviennot, 2x 7R13, socket 0): SMT 9.8, CCX
            // 22.7, cross CCX 108, cross socket 197. Idle: MWAIT C1, IPI wake
            // median 1.5 us in total (AMD Zen 3, 10k pinned samples; Lewis
            // Caroll / Wyes Karny, LKML 2022-04-05). SMT: AMD 0.70-0.75 per
            // thread (plantegg's sysbench on an EPYC 7H12: 0.73) -> 0.725.
            // The two-socket preset is two of the same parts: the same
            // measurement, whose cross-socket figure (197) is this box's.
            "epyc-zen3" | "epyc-zen3-2s" => base(
                machine,
                [0, 10, 23, 23, 108, 197],
                ipi,
                vec![IdleState {
                    name: "C1",
                    exit_latency_ns: 500,
                    target_residency_ns: us(2),
                }],
                vec![1000, 1450],
            ),
            // SPR: w9-3475X mesh 55.3 (KCORES); SMT: suggested 8 (nviennot's
            // Xeon SMT medians, 7.1-8.9); cross socket not measured for SPR:
            // nearest generation, 2x 8375C Ice Lake (nviennot), 108. intel_idle
            // `spr_cstates`. SMT 0.65 (as for the X5650 above).
            "sapphire-rapids" => base(
                machine,
                [0, 8, 55, 55, 55, 108],
                ipi,
                vec![st("C1", 1, 1), st("C1E", 2, 4), st("C6", 290, 800)],
                vec![1000, 1300],
            ),
            // Altra Q80-30 (KCORES): 2-core cluster 83, other 158.
            "altra" => base(machine, [0, 8, 83, 83, 158, 158], ipi, wfi, vec![]),
            // KVM guest, 8 vCPUs: host c2c unknown, vCPUs float over an EPYC
            // host -> cross-CCX 108 (nviennot, 2x 7R13). Wake of a halted vCPU
            // ~20 us one way [local: pinned pipe ping-pong on the 2-vCPU
            // guest, 46-54 us round trip across vCPUs vs 7-8 us on one]: IPI
            // 1 us + 19 us HLT exit.
            "kvm-8vcpu" => base(
                machine,
                [0, 108, 108, 108, 108, 197],
                ipi,
                vec![st("HLT", 19, 10)],
                vec![],
            ),
            // Generic (imported machines): the project's suggested defaults
            // (midpoints of the ranges the sources above give; source: the
            // project's calibration notes), C1 2 us.
            _ => base(
                machine,
                [0, 8, 35, 50, 110, 125],
                ipi,
                vec![st("C1", 2, 2)],
                vec![1000, 1300],
            ),
        };
        m.node_mem_mb_s = node_mem_mb_s(machine);
        m
    }
}

/// Peak DRAM bandwidth of one NUMA node of a preset, MB/s: the vendor's
/// memory channels per node x transfer rate x 8 bytes (a peak: sustained
/// STREAM figures are lower; no factor is applied). 0 where the part's
/// memory system is not published in a form that gives one figure.
fn node_mem_mb_s(machine: &str) -> u64 {
    let ddr = |channels: u64, mt_s: u64| channels * mt_s * 8;
    match machine {
        // Kunpeng 920-4826: 8 DDR4-2933 channels per socket, 4 per die
        // (= node) (HiSilicon Kunpeng 920 product brief)
        "kunpeng920" | "kunpeng920-1s" | "kunpeng920-node" => ddr(4, 2933),
        // Xeon X5650: 3 DDR3-1333 channels per socket = node (Intel ARK:
        // "Max Memory Bandwidth 32 GB/s")
        "xeon-12c24t" => ddr(3, 1333),
        // EPYC 7763: 8 DDR4-3200 channels, NPS1: one node (AMD product page)
        "epyc-zen3" | "epyc-zen3-2s" => ddr(8, 3200),
        // Xeon 8480+: 8 DDR5-4800 channels per socket = node (Intel ARK)
        "sapphire-rapids" => ddr(8, 4800),
        // Altra Q80-30: 8 DDR4-3200 channels, one node (Ampere product brief)
        "altra" => ddr(8, 3200),
        // Xeon E5-2699 v4: 4 DDR4-2400 channels per socket = node (Intel
        // ARK: "Max Memory Bandwidth 76.8 GB/s")
        "broadwell-ep" => ddr(4, 2400),
        // POWER9 (buffered memory), Atom P5900 and KVM guests: none given
        _ => 0,
    }
}
