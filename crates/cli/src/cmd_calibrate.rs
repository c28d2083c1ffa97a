//! `schedlab calibrate [-o FILE] [--quick]`: measure this host's costs
//! (`native::calibrate`) and write them as a cost profile for
//! `--cost-profile`, each value with how it was derived.

use anyhow::{Context, Result};
use clap::Args;
use native::calibrate::{
    CalibrateConfig, Measurements, DEPTH_CHANNELS, DEPTH_QUEUE, RING_SIZES, ROTATION_CHANNELS,
};
use sim::channel::ChanKind;
use sim::cost_profile;
use sim::costs::{IdleState, MachineCosts};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use topology::{Distance, Topology};

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Write the profile here (atomically) and print a summary; without it the profile goes to stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Fewer, shorter batches (a second or two): for a quick look or a test, not a profile to trust.
    #[arg(long)]
    pub quick: bool,
    /// Measure core-to-core latency on at most the first N allowed CPUs (all by default; N^2/2 pairs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    pub c2c_cpus: Option<u32>,
}

pub fn run(args: CalibrateArgs) -> Result<ExitCode> {
    if let Some(path) = &args.output {
        // Before measuring, not after: a typo must not cost the whole run.
        crate::output::check_writable(path).context("--output")?;
    }
    let topo = topology::preset("host").context("reading this host's topology from /sys")?;
    let cfg = CalibrateConfig {
        quick: args.quick,
        max_c2c_cpus: args.c2c_cpus.map(|n| n as usize),
    };
    let m = native::calibrate::measure(&cfg, &mut |what| eprintln!("calibrate: {what}"))?;
    let (costs, sources) = profile(
        &m,
        &topo,
        &host_idle_states(m.cpus.get(1).copied()),
        kernel_hz(),
    );
    let text = cost_profile::to_toml(&costs, &header(&m, &topo, args.quick), &sources);
    // what we write must load back
    cost_profile::from_toml(&text, "the calibrated profile")
        .context("internal: the calibrated profile does not load")?;
    match &args.output {
        None => print!("{text}"),
        Some(path) => {
            crate::output::write_atomic(path, text.as_bytes())?;
            print!("{}", summary(&costs, path));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn header(m: &Measurements, topo: &Topology, quick: bool) -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("cpu model"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let mut h = format!(
        "schedlab calibrate{}: this host ({model}, {} CPUs, Linux {kernel}); each figure the median of {} batches unless named\n",
        if quick { " --quick (a quick look, not a profile to trust)" } else { "" },
        topo.nr_cpus(),
        m.batches
    );
    let f = &m.memory;
    h += &format!(
        "memory over {} MiB of {} KiB pages, the fastest of {} runs by thread CPU time: word sum {:.1} ps/B; mprotect(PROT_NONE) {:.1} ns per PTE; shared-mapping write fault {:.1} ns per page ({:.2} faults per page); first touch {:.1} ns per page ({:.2} faults per page)\n",
        f.bytes >> 20,
        f.page_bytes / 1024,
        f.runs,
        f.sum_ps_per_byte,
        f.mprotect_pte_ns,
        f.shared_fault_ns,
        f.shared_faults_per_page,
        f.first_touch_ns,
        f.first_touch_faults_per_page
    );
    if !m.c2c.is_empty() {
        h += "core-to-core latency per CPU pair, ns one way (CAS ping-pong median; contended: both CPUs incrementing, per increment), distance class:\n";
        for p in &m.c2c {
            h += &format!(
                "  {}-{}: {:.1} (contended {:.1}), {}\n",
                p.a,
                p.b,
                p.uncontended_ns,
                p.contended_ns,
                class_name(topo.distance(p.a, p.b))
            );
        }
    }
    h
}

fn class_name(d: Distance) -> &'static str {
    match d {
        Distance::SameCpu => "same CPU",
        Distance::Smt => "SMT",
        Distance::Cluster => "cluster",
        Distance::Llc => "LLC",
        Distance::Package => "package",
        Distance::Remote => "remote",
    }
}

/// The host's cpuidle states of `cpu` (name, exit latency, target
/// residency, ns), shallowest first; empty without cpuidle.
fn host_idle_states(cpu: Option<usize>) -> Vec<(String, u64, u64)> {
    let Some(cpu) = cpu else { return Vec::new() };
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
    let mut out = Vec::new();
    for i in 0.. {
        let s = format!("{dir}/state{i}");
        let read = |f: &str| std::fs::read_to_string(format!("{s}/{f}")).ok();
        let (Some(name), Some(lat), Some(res)) = (read("name"), read("latency"), read("residency"))
        else {
            break;
        };
        let us = |v: String| v.trim().parse::<u64>().unwrap_or(0) * 1000;
        out.push((name.trim().to_string(), us(lat), us(res)));
    }
    out
}

/// CONFIG_HZ of the running kernel, from /boot/config-RELEASE or
/// /proc/config.gz (through `gzip -dc`), when either is there.
fn kernel_hz() -> Option<(u64, String)> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let boot = format!("/boot/config-{}", release.trim());
    let (text, from) = match std::fs::read_to_string(&boot) {
        Ok(t) => (t, boot),
        Err(_) => {
            let out = std::process::Command::new("gzip")
                .args(["-dc", "/proc/config.gz"])
                .output()
                .ok()?;
            (
                String::from_utf8(out.stdout).ok()?,
                "/proc/config.gz".into(),
            )
        }
    };
    let hz = text
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))?
        .trim()
        .parse()
        .ok()?;
    Some((hz, from))
}

/// A measured table for a source line: "x: y" per point, one decimal,
/// joined by "; ".
fn measured_points(xs: &[impl std::fmt::Display], ys: &[f64]) -> String {
    xs.iter()
        .zip(ys)
        .map(|(x, y)| format!("{x}: {y:.1}"))
        .collect::<Vec<_>>()
        .join("; ")
}

fn ns(v: f64) -> u64 {
    v.max(0.0).round() as u64
}

/// The profile the measurements give, and each value's derivation. Costs
/// the calibration does not measure (clean reads, SMT throughput, and
/// whatever this host cannot show: c2c classes it has no CPU pair for, a
/// wake-up across CPUs on one CPU) keep the generic profile's values.
pub fn profile(
    m: &Measurements,
    topo: &Topology,
    idle: &[(String, u64, u64)],
    hz: Option<(u64, String)>,
) -> (MachineCosts, BTreeMap<String, String>) {
    let generic = MachineCosts::for_machine("host");
    let gsrc = cost_profile::preset_sources("host");
    let mut c = generic.clone();
    let mut s: BTreeMap<String, String> = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        s.insert(k.to_string(), v);
    };
    let measured = "measured by schedlab calibrate";
    c.machine = "host".into();
    put("machine", "this host".into());
    let pipe_call = m.pipe100_ns / 2.0;
    c.syscall_ns = ns(m.syscall_ns);
    put(
        "syscall_ns",
        format!("{measured}: getppid {:.1} ns", m.syscall_ns),
    );
    c.pipe_syscall_ns = ns(pipe_call);
    put(
        "pipe_syscall_ns",
        format!(
            "{measured}: pipe write+read of 100 B {:.1} ns / 2 (timed apart: write {:.1}, read {:.1})",
            m.pipe100_ns, m.pipe_write100_ns, m.pipe_read100_ns
        ),
    );
    c.unix_syscall_ns = ns(m.unix100_ns / 2.0);
    put(
        "unix_syscall_ns",
        format!(
            "{measured}: unix socketpair write+read of 100 B {:.1} ns / 2 (timed apart: write {:.1}, read {:.1})",
            m.unix100_ns, m.unix_write100_ns, m.unix_read100_ns
        ),
    );
    let copy = (m.pipe4000_ns - m.pipe100_ns) / (2.0 * 3900.0);
    c.copy_ps_per_byte = ns(copy * 1000.0);
    put(
        "copy_ps_per_byte",
        format!(
            "{measured}: pipe pair of 4000 B vs 100 B, ({:.1} - {:.1}) / (2 x 3900 B) = {copy:.4} ns/B",
            m.pipe4000_ns, m.pipe100_ns
        ),
    );
    c.ctx_switch_ns = ns((m.rtt_thread_same_cpu_ns - 4.0 * pipe_call) / 2.0);
    put(
        "ctx_switch_ns",
        format!(
            "{measured}: pipe ping-pong of two threads on one CPU {:.1} ns per round trip = 2 switches + 4 pipe calls -> ({:.1} - 4 x {pipe_call:.1}) / 2",
            m.rtt_thread_same_cpu_ns, m.rtt_thread_same_cpu_ns
        ),
    );
    c.mm_switch_extra_ns = ns((m.rtt_process_same_cpu_ns - m.rtt_thread_same_cpu_ns) / 2.0);
    put(
        "mm_switch_extra_ns",
        format!(
            "{measured}: the same ping-pong between processes {:.1} ns -> ({:.1} - {:.1}) / 2",
            m.rtt_process_same_cpu_ns, m.rtt_process_same_cpu_ns, m.rtt_thread_same_cpu_ns
        ),
    );
    // A channel used from two CPUs in turn: what a pair pays beyond the
    // same turns on channels of their own is its lines coming over, at the
    // pair's c2c latency.
    let ab_c2c = m
        .c2c
        .iter()
        .find(|p| m.cpus.len() >= 2 && p.a == m.cpus[0] && p.b == m.cpus[1])
        .map(|p| p.uncontended_ns);
    for (alt, own, field, key, what) in [
        (
            m.pipe_pair_alternating_ns,
            m.pipe_pair_alternating_own_ns,
            &mut c.pipe_lines,
            "pipe_lines",
            "pipe",
        ),
        (
            m.unix_pair_alternating_ns,
            m.unix_pair_alternating_own_ns,
            &mut c.unix_lines,
            "unix_lines",
            "unix socketpair",
        ),
        (
            m.tcp_pair_alternating_ns,
            m.tcp_pair_alternating_own_ns,
            &mut c.tcp_lines,
            "tcp_lines",
            "loopback TCP connection",
        ),
    ] {
        if let (Some(alt), Some(own), Some(c2c)) = (alt, own, ab_c2c) {
            let penalty = alt - own;
            *field = ((penalty / c2c.max(1.0)).round().max(1.0)) as u32;
            put(
                key,
                format!(
                    "{measured}: a 100 B {what} write+read, CPUs {} and {} in turn on one {what} {alt:.1} ns, each on its own {own:.1} ns: {penalty:.1} ns / their c2c {c2c:.1} ns",
                    m.cpus[0], m.cpus[1]
                ),
            );
        } else {
            put(
                key,
                format!(
                    "not measured (needs two CPUs and their c2c figure): the generic profile's {}",
                    *field
                ),
            );
        }
    }
    // Channels used in turn: each point minus the single channel.
    for (rot, table, key, what) in [
        (
            &m.pipe_rotation_ns,
            &mut c.pipe_rotation_ns,
            "pipe_rotation_ns",
            "pipes",
        ),
        (
            &m.unix_rotation_ns,
            &mut c.unix_rotation_ns,
            "unix_rotation_ns",
            "unix socketpairs",
        ),
    ] {
        if rot.len() == ROTATION_CHANNELS.len() {
            for (v, r) in table.iter_mut().zip(&rot[1..]) {
                *v = ns(r - rot[0]);
            }
        }
        put(
            key,
            format!(
                "{measured}: N {what} on one CPU, one 100 B message written to each in turn then each read back, ns per call (N: time) {}; each N > 1 minus N = 1 (at least 0)",
                measured_points(&ROTATION_CHANNELS, rot)
            ),
        );
    }
    // what the engine charges from the rotation tables just made, for the
    // two measurements below that contain it
    let ring_rotation: Vec<f64> = RING_SIZES
        .iter()
        .map(|&n| c.channel_rotation_ns(ChanKind::Pipe, 2 * n as u64 - 2) as f64)
        .collect();
    let depth_rotation = [ChanKind::Pipe, ChanKind::UnixStream]
        .map(|k| c.channel_rotation_ns(k, DEPTH_CHANNELS as u64 - 1) as f64);
    // Ring of N: per hop one pipe write, one read and `switches` switches;
    // per switch (N) minus per switch (2) is the refill after N - 1 others.
    // Of a hop's two calls the read finds its pipe just written (reuse 0),
    // the write finds it last used a round ago (2N - 2 calls to the other
    // pipes): that part is the rotation table's, which the engine charges
    // on its own, so it is taken out of the hop first.
    for (process, ring, sw, table, key) in [
        (
            false,
            &m.ring_thread_ns,
            &m.ring_thread_switches,
            &mut c.refill_thread_ns,
            "refill_thread_ns",
        ),
        (
            true,
            &m.ring_process_ns,
            &m.ring_process_switches,
            &mut c.refill_process_ns,
            "refill_process_ns",
        ),
    ] {
        let per_switch: Vec<f64> = ring
            .iter()
            .zip(sw)
            .zip(&ring_rotation)
            .map(|((hop, s), rotation)| (hop - 2.0 * pipe_call - rotation) / s.max(1.0))
            .collect();
        for (v, ps) in table.iter_mut().zip(&per_switch[1..]) {
            *v = ns(ps - per_switch[0]);
        }
        let points: Vec<String> = RING_SIZES
            .iter()
            .zip(ring.iter().zip(sw))
            .map(|(n, (h, s))| format!("{n}: {h:.0} ns, {s:.2} switches"))
            .collect();
        put(
            key,
            format!(
                "{measured}: a pipe ring of N {} on one CPU, per hop (N: time, switches) {}; per switch = (hop - 2 x {pipe_call:.1} ns pipe call - pipe_rotation_ns at 2N - 2 calls) / switches; each N > 2 minus N = 2",
                if process { "processes" } else { "threads" },
                points.join("; ")
            ),
        );
    }
    // A shared file table: the same pair with a second thread alive.
    for (shared, alone, field, key, what) in [
        (
            m.pipe100_shared_fd_ns,
            m.pipe100_ns,
            &mut c.pipe_shared_fd_ns,
            "pipe_shared_fd_ns",
            "pipe",
        ),
        (
            m.unix100_shared_fd_ns,
            m.unix100_ns,
            &mut c.unix_shared_fd_ns,
            "unix_shared_fd_ns",
            "unix socketpair",
        ),
    ] {
        *field = ns((shared - alone) / 2.0);
        put(
            key,
            format!(
                "{measured}: a {what} write+read of 100 B with a second thread alive {shared:.1} ns, alone {alone:.1} ns: the difference / 2 (at least 0)"
            ),
        );
    }
    // Data queued: each depth point minus the shallow one.
    for (depth, table, key, what) in [
        (
            &m.pipe_depth_ns,
            &mut c.pipe_depth_ns,
            "pipe_depth_ns",
            "pipes",
        ),
        (
            &m.unix_depth_ns,
            &mut c.unix_depth_ns,
            "unix_depth_ns",
            "unix socketpairs",
        ),
    ] {
        // the k = 1 base paid the rotation table's last point (159 calls
        // to the others) on every call, a depth of k on one call in k: the
        // engine charges that part from the rotation table, so it is added
        // back to each point (the two then sum to what was measured)
        let rotation = depth_rotation[usize::from(key != "pipe_depth_ns")];
        if depth.len() == DEPTH_QUEUE.len() {
            for ((v, d), k) in table.iter_mut().zip(&depth[1..]).zip(&DEPTH_QUEUE[1..]) {
                *v = ns(d - depth[0] + rotation * (1.0 - 1.0 / *k as f64));
            }
        }
        put(
            key,
            format!(
                "{measured}: {DEPTH_CHANNELS} {what} on one CPU, k messages of 100 B written to each in turn then read back, ns per call (k: time) {}; each k > 1 minus k = 1, plus the rotation table's last point x (1 - 1/k) (k = 1 paid it on every call, k on one call in k; at least 0)",
                measured_points(&DEPTH_QUEUE, depth)
            ),
        );
    }
    c.thread_create_ns = ns(m.thread_run_ns);
    put(
        "thread_create_ns",
        format!(
            "{measured}: pthread_create until the thread runs, {:.0} ns",
            m.thread_run_ns
        ),
    );
    c.thread_exit_ns = ns(m.thread_exit_ns);
    put(
        "thread_exit_ns",
        format!(
            "{measured}: from the thread running until pthread_join returns, {:.0} ns",
            m.thread_exit_ns
        ),
    );
    c.fork_ns = ns(m.fork_run_ns);
    put(
        "fork_ns",
        format!(
            "{measured}: fork until the child runs, {:.0} ns",
            m.fork_run_ns
        ),
    );
    c.process_exit_ns = ns(m.fork_exit_ns);
    put(
        "process_exit_ns",
        format!(
            "{measured}: from the child running until waitpid reaps it, {:.0} ns",
            m.fork_exit_ns
        ),
    );
    let pb_w = (m.tcp_write65536_ns - m.tcp_write100_ns) / 65436.0;
    let pb_r = (m.tcp_read65536_ns - m.tcp_read100_ns) / 65436.0;
    c.tcp_send_ns = ns(m.tcp_write100_ns - 100.0 * pb_w);
    c.tcp_recv_ns = ns(m.tcp_read100_ns - 100.0 * pb_r);
    c.tcp_ps_per_byte = ns((pb_w + pb_r) / 2.0 * 1000.0);
    let line = format!(
        "{measured}: loopback TCP, calls timed apart: write 100 B {:.1} ns, 65536 B {:.1} ns; read {:.1} / {:.1} ns; straight lines: write {:.1} ns + {pb_w:.4} ns/B, read {:.1} ns + {pb_r:.4} ns/B",
        m.tcp_write100_ns,
        m.tcp_write65536_ns,
        m.tcp_read100_ns,
        m.tcp_read65536_ns,
        m.tcp_write100_ns - 100.0 * pb_w,
        m.tcp_read100_ns - 100.0 * pb_r
    );
    put("tcp_send_ns", format!("{line}; the write line's intercept"));
    put("tcp_recv_ns", format!("{line}; the read line's intercept"));
    put(
        "tcp_ps_per_byte",
        format!("{line}; the mean of the two slopes"),
    );
    c.gettimeofday_ns = ns(m.gettimeofday_ns);
    put(
        "gettimeofday_ns",
        format!(
            "{measured}: gettimeofday through the vDSO, {:.1} ns",
            m.gettimeofday_ns
        ),
    );
    c.futex_wake_ns = ns(m.futex_wake_nowaiter_ns);
    put(
        "futex_wake_ns",
        format!(
            "{measured}: FUTEX_WAKE_PRIVATE with no waiter, {:.1} ns",
            m.futex_wake_nowaiter_ns
        ),
    );
    c.futex_wait_ns = ns(m.futex_wait_eagain_ns);
    put(
        "futex_wait_ns",
        format!(
            "{measured}: FUTEX_WAIT_PRIVATE returning EAGAIN, {:.1} ns",
            m.futex_wait_eagain_ns
        ),
    );
    c.atomic_ns = ns(m.cas_ns).max(1);
    put(
        "atomic_ns",
        format!(
            "{measured}: an uncontended compare-and-swap, {:.2} ns",
            m.cas_ns
        ),
    );
    c.matmul_madd_ps = ns(m.matmul_madd_ns * 1000.0);
    put(
        "matmul_madd_ps",
        format!(
            "{measured}: schbench's n = 104 multiply (256 KB footprint), {:.3} ns per multiply-add",
            m.matmul_madd_ns
        ),
    );
    // IPI and wake-up of an idle CPU
    match m.ipi_rtt_ns {
        Some(rtt) => {
            c.ipi_ns = ns(rtt / 2.0);
            put(
                "ipi_ns",
                format!("{measured}: expedited membarrier with a thread spinning on another CPU minus without, {rtt:.0} ns = an IPI round trip; one way = half"),
            );
        }
        None => put(
            "ipi_ns",
            format!(
                "not measured (no second CPU or no membarrier); generic: {}",
                gsrc["ipi_ns"]
            ),
        ),
    }
    match m.futex_rtt_two_cpu_ns {
        Some(two) => {
            let wake = (two - m.futex_rtt_same_cpu_ns) / 2.0;
            let exit = ns(wake - c.ipi_ns as f64);
            let how = format!(
                "{measured}: schbench's futex ping-pong, {two:.0} ns per round trip across CPUs vs {:.0} ns on one: a wake-up of an idle CPU costs ({two:.0} - {:.0}) / 2 = {wake:.0} ns = IPI ({} ns) + idle exit",
                m.futex_rtt_same_cpu_ns, m.futex_rtt_same_cpu_ns, c.ipi_ns
            );
            if idle.is_empty() {
                c.idle_states = vec![IdleState {
                    name: "idle",
                    exit_latency_ns: exit,
                    target_residency_ns: exit,
                }];
                put("idle_states", format!("{how}; no cpuidle states in sysfs: one state, target residency = its exit latency"));
            } else {
                let last = idle.len() - 1;
                c.idle_states = idle
                    .iter()
                    .enumerate()
                    .map(|(i, (name, lat, res))| IdleState {
                        name: cost_profile::intern(name),
                        exit_latency_ns: if i == last { exit } else { (*lat).min(exit) },
                        target_residency_ns: *res,
                    })
                    .collect();
                put(
                    "idle_states",
                    format!("{how}; names and target residencies from sysfs cpuidle, the deepest state's exit latency the measured one (the shallower keep sysfs's, at most that)"),
                );
            }
        }
        None => put(
            "idle_states",
            format!("not measured (one CPU); generic: {}", gsrc["idle_states"]),
        ),
    }
    // c2c: median per class
    let mut by_class: Vec<Vec<f64>> = vec![Vec::new(); 6];
    for p in &m.c2c {
        by_class[topo.distance(p.a, p.b) as usize].push(p.uncontended_ns);
    }
    let mut parts = Vec::new();
    let mut fallback = Vec::new();
    for d in Distance::ALL {
        let v = &mut by_class[d as usize];
        if d == Distance::SameCpu {
            c.c2c_ns[0] = 0;
            continue;
        }
        if v.is_empty() {
            fallback.push(format!("{} {}", class_name(d), generic.c2c(d)));
            continue;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let med = v[v.len() / 2];
        c.c2c_ns[d as usize] = ns(med);
        parts.push(format!("{} {med:.1} ({} pairs)", class_name(d), v.len()));
    }
    let mut c2c_src = format!(
        "{measured}: CAS ping-pong on one line between two pinned threads (the method of github.com/nviennot/core-to-core-latency), one way = round trip / 2, median per pair, then median over the pairs of each distance class: {}",
        if parts.is_empty() { "no pair measured".to_string() } else { parts.join(", ") }
    );
    if !fallback.is_empty() {
        c2c_src += &format!(
            "; no CPU pair of this host at the other classes, generic: {}",
            fallback.join(", ")
        );
    }
    put("c2c_ns", c2c_src);
    // The contended figures measured here are per increment with both
    // CPUs hammering the word (throughput), not the hand-off the line model
    // charges when a transfer finds the line in flight; they stay in the
    // header, and the contended hand-off takes the uncontended one.
    c.c2c_contended_ns = c.c2c_ns;
    c.c2c_busy_ns = c.c2c_ns;
    put(
        "wake_latency_spread_milli",
        format!(
            "not measured; generic: {}",
            gsrc["wake_latency_spread_milli"]
        ),
    );
    put("dummy_wakeup_ns", gsrc["dummy_wakeup_ns"].clone());
    c.os_scale_milli = 1000;
    put(
        "os_scale_milli",
        "1000: every OS cost is this host's own measurement".into(),
    );
    put(
        "c2c_contended_ns",
        "not measured as a hand-off: equal to c2c_ns (the per-increment contended figures are in the header)".into(),
    );
    put("c2c_busy_ns", "not measured: equal to c2c_ns".into());
    match hz {
        Some((hz, from)) => {
            c.hz = hz;
            put(
                "hz",
                format!("CONFIG_HZ={hz} of the running kernel ({from})"),
            );
        }
        None => put(
            "hz",
            format!("the kernel config is not readable; generic: {}", gsrc["hz"]),
        ),
    }
    for k in [
        "clean_read_ns",
        "smt_throughput_milli",
        "charge_idle_exit",
        "node_mem_mb_s",
    ] {
        put(k, format!("not measured; generic: {}", gsrc[k]));
    }
    memory_costs(&m.memory, &mut c, &mut put);
    (c, s)
}

/// The memory and NUMA-balancing keys from `native::calibrate::mem`'s
/// figures: the streaming cost as measured, a scanner's PTE update as an
/// mprotect one, a hinting fault as a fault that only installs a PTE, and a
/// page migration as a first touch (allocate, zero, map; a migration
/// allocates, copies and remaps) plus two PTE updates (unmap, remap).
fn memory_costs(
    f: &native::calibrate::mem::MemoryFigures,
    c: &mut MachineCosts,
    put: &mut impl FnMut(&str, String),
) {
    let over = format!(
        "over {} MiB of {} KiB pages (MADV_NOHUGEPAGE), the fastest of {} runs by the thread's CPU time",
        f.bytes >> 20,
        f.page_bytes / 1024,
        f.runs
    );
    let measured = "measured by schedlab calibrate";
    c.mem_ps_per_byte = ns(f.sum_ps_per_byte);
    put(
        "mem_ps_per_byte",
        format!(
            "{measured}: one thread summing the 64-bit words of a populated anonymous mapping {over}: {:.1} ps/B ({:.2} GB/s); remote pages scale by the SLIT distance / 10",
            f.sum_ps_per_byte,
            1000.0 / f.sum_ps_per_byte.max(1e-9)
        ),
    );
    c.numa_pte_update_ns = ns(f.mprotect_pte_ns);
    put(
        "numa_pte_update_ns",
        format!(
            "{measured}: mprotect(PROT_NONE) over the populated mapping {over}: {:.1} ns per PTE (change_protection, the walk change_prot_numa makes)",
            f.mprotect_pte_ns
        ),
    );
    c.numa_hint_fault_ns = ns(f.shared_fault_ns);
    put(
        "numa_hint_fault_ns",
        format!(
            "{measured}: a write to each page of a fresh MAP_SHARED, MADV_RANDOM mapping of a populated memfd {over}: {:.1} ns per page, {:.2} minor faults per page (no allocation, no fault-around: only the PTE is installed, as a hinting fault only restores one)",
            f.shared_fault_ns, f.shared_faults_per_page
        ),
    );
    let migrate = f.first_touch_ns + 2.0 * f.mprotect_pte_ns;
    c.numa_migrate_page_ns = ns(migrate);
    put(
        "numa_migrate_page_ns",
        format!(
            "{measured}: first touch of fresh anonymous pages {over} (allocate, zero, map): {:.1} ns per page, {:.2} minor faults per page; a migration allocates, copies instead of zeroing and remaps: that plus two PTE updates, {:.1} + 2 x {:.1} = {migrate:.1} ns",
            f.first_touch_ns, f.first_touch_faults_per_page, f.first_touch_ns, f.mprotect_pte_ns
        ),
    );
}

fn summary(c: &MachineCosts, path: &Path) -> String {
    let g = MachineCosts::for_machine("host");
    let mut out = format!(
        "wrote {} (load it with --cost-profile {})\n{:<22} {:>16} {:>16}\n",
        path.display(),
        path.display(),
        "cost",
        "this host",
        "preset figure"
    );
    let (ct, gt) = (table(c), table(&g));
    for (k, v) in ct {
        if k == "machine" {
            continue;
        }
        let gv = gt.get(&k).map(cost_profile::value_text).unwrap_or_default();
        let v = cost_profile::value_text(&v);
        if v.contains('\n') || v.len() > 16 || gv.len() > 16 {
            out += &format!(
                "{k:<22}\n  this host:     {}\n  preset figure: {}\n",
                v.replace('\n', " "),
                gv.replace('\n', " ")
            );
        } else {
            out += &format!("{k:<22} {v:>16} {gv:>16}\n");
        }
    }
    out
}

fn table(c: &MachineCosts) -> toml::Table {
    match toml::Value::try_from(c).expect("a cost profile serialises") {
        toml::Value::Table(t) => t,
        _ => unreachable!(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_derives_as_documented_and_loads_back() {
        let topo = topology::preset("kunpeng920-node").unwrap();
        let m = Measurements {
            batches: 7,
            cpus: vec![0, 1, 4],
            syscall_ns: 100.0,
            pipe100_ns: 600.0,
            pipe4000_ns: 678.0,
            unix100_ns: 1000.0,
            rtt_thread_same_cpu_ns: 5200.0,
            rtt_process_same_cpu_ns: 5400.0,
            // per switch: threads 2000 at N = 2, then 2100 ... 2500 at 1.4
            // switches per hop; processes 2100, then 3100 ... 7100 at 2
            ring_thread_ns: [2600.0, 3540.0, 3680.0, 3820.0, 3960.0, 4100.0].to_vec(),
            ring_thread_switches: [1.0, 1.4, 1.4, 1.4, 1.4, 1.4].to_vec(),
            ring_process_ns: [2700.0, 6800.0, 8800.0, 10800.0, 12800.0, 14800.0].to_vec(),
            ring_process_switches: [1.0, 2.0, 2.0, 2.0, 2.0, 2.0].to_vec(),
            // (1000 - 820) / 30 ns = 6 lines; (1400 - 1190) / 30 = 7
            pipe_pair_alternating_ns: Some(1000.0),
            pipe_pair_alternating_own_ns: Some(820.0),
            unix_pair_alternating_ns: Some(1400.0),
            unix_pair_alternating_own_ns: Some(1190.0),
            tcp_pair_alternating_ns: Some(3700.0),
            tcp_pair_alternating_own_ns: Some(3000.0),
            fork_run_ns: 90_000.0,
            fork_exit_ns: 60_000.0,
            thread_run_ns: 12_000.0,
            thread_exit_ns: 11_000.0,
            gettimeofday_ns: 17.6,
            futex_wake_nowaiter_ns: 97.0,
            futex_wait_eagain_ns: 143.0,
            futex_rtt_same_cpu_ns: 4000.0,
            futex_rtt_two_cpu_ns: Some(44_000.0),
            ipi_rtt_ns: Some(3000.0),
            tcp_write100_ns: 1100.0,
            tcp_read100_ns: 265.0,
            tcp_write65536_ns: 1100.0 + 65436.0 * 0.033,
            tcp_read65536_ns: 265.0 + 65436.0 * 0.035,
            cas_ns: 4.84,
            matmul_madd_ns: 0.366,
            c2c: vec![
                native::calibrate::C2cPair {
                    a: 0,
                    b: 1,
                    uncontended_ns: 30.0,
                    contended_ns: 50.0,
                },
                native::calibrate::C2cPair {
                    a: 0,
                    b: 4,
                    uncontended_ns: 40.0,
                    contended_ns: 60.0,
                },
                native::calibrate::C2cPair {
                    a: 1,
                    b: 4,
                    uncontended_ns: 44.0,
                    contended_ns: 70.0,
                },
            ],
            // pipe 600 alone, 660 shared; unix 1000 alone, 990 shared
            pipe100_shared_fd_ns: 660.0,
            unix100_shared_fd_ns: 990.0,
            pipe_depth_ns: vec![150.0, 140.0, 150.0, 170.0, 175.0],
            unix_depth_ns: vec![300.0, 340.0, 370.0, 400.0, 450.0],
            pipe_rotation_ns: vec![160.0, 159.0, 163.0, 173.0, 176.0],
            unix_rotation_ns: vec![285.0, 298.0, 306.4, 319.6, 326.0],
            memory: native::calibrate::mem::MemoryFigures {
                bytes: 256 << 20,
                page_bytes: 4096,
                runs: 5,
                sum_ps_per_byte: 116.4,
                mprotect_pte_ns: 30.2,
                shared_fault_ns: 761.0,
                shared_faults_per_page: 1.0,
                first_touch_ns: 1240.0,
                first_touch_faults_per_page: 1.0,
            },
            ..Default::default()
        };
        let idle = vec![("POLL".to_string(), 0, 0), ("C1".to_string(), 2000, 2000)];
        let (c, s) = profile(&m, &topo, &idle, Some((1000, "x".into())));
        assert_eq!(
            (c.pipe_syscall_ns, c.unix_syscall_ns, c.syscall_ns),
            (300, 500, 100)
        );
        assert_eq!(c.copy_ps_per_byte, 10);
        assert_eq!((c.ctx_switch_ns, c.mm_switch_extra_ns), (2000, 100));
        // less the pipe rotation table ([0, 3, 13, 16] below) at 2N - 2
        // calls per hop, 0, 0, 2, 6, 12 and 14 ns for N = 2 .. 64: threads
        // (3680 - 600 - 2) / 1.4 - 2000 = 198.6 at N = 8, ...
        assert_eq!(c.refill_thread_ns, [100, 199, 296, 391, 490]);
        assert_eq!(c.refill_process_ns, [1000, 1999, 2997, 3994, 4993]);
        // (3700 - 3000) / 30 = 23.3 for TCP
        assert_eq!((c.pipe_lines, c.unix_lines, c.tcp_lines), (6, 7, 23));
        // half the shared-table difference, never negative
        assert_eq!((c.pipe_shared_fd_ns, c.unix_shared_fd_ns), (30, 0));
        // each rotation point minus the single channel, never negative
        assert_eq!(c.pipe_rotation_ns, [0, 3, 13, 16]);
        assert_eq!(c.unix_rotation_ns, [13, 21, 35, 41]);
        // each depth point minus the shallow one, plus the rotation table's
        // last point x (1 - 1/k), never negative: pipes -10 + 16 x 15/16 at
        // k = 16, ...; sockets 40 + 41 x 15/16, ...
        assert_eq!(c.pipe_depth_ns, [5, 16, 36, 41]);
        assert_eq!(c.unix_depth_ns, [78, 110, 141, 191]);
        assert_eq!(
            (c.tcp_send_ns, c.tcp_recv_ns, c.tcp_ps_per_byte),
            (1097, 262, 34)
        );
        assert_eq!(c.ipi_ns, 1500);
        // wake (44000 - 4000) / 2 = 20000 = 1500 IPI + 18500 exit
        assert_eq!(c.idle_states[1].exit_latency_ns, 18_500);
        assert_eq!(c.idle_states[0].name, "POLL");
        // 0-1 same cluster (30), 0-4 and 1-4 other clusters of the LLC: median of (40, 44)
        assert_eq!(c.c2c_ns[Distance::Cluster as usize], 30);
        assert_eq!(c.c2c_ns[Distance::Llc as usize], 44);
        assert_eq!(
            c.c2c_ns[Distance::Remote as usize],
            MachineCosts::for_machine("host").c2c_ns[5]
        );
        assert_eq!((c.hz, c.matmul_madd_ps, c.atomic_ns), (1000, 366, 5));
        // memory: as measured; a migration is a first touch plus two PTE
        // updates, 1240 + 2 x 30.2 = 1300.4
        assert_eq!(
            (
                c.mem_ps_per_byte,
                c.numa_pte_update_ns,
                c.numa_hint_fault_ns,
                c.numa_migrate_page_ns
            ),
            (116, 30, 761, 1300)
        );
        for k in [
            "mem_ps_per_byte",
            "numa_pte_update_ns",
            "numa_hint_fault_ns",
            "numa_migrate_page_ns",
        ] {
            assert!(
                s[k].starts_with("measured by schedlab calibrate"),
                "{k}: {}",
                s[k]
            );
        }
        assert!(s["numa_migrate_page_ns"].contains("1240.0 + 2 x 30.2 = 1300.4"));
        assert!(s["mem_ps_per_byte"].contains("over 256 MiB of 4 KiB pages"));
        let h = header(&m, &topo, false);
        assert!(
            h.contains("word sum 116.4 ps/B; mprotect(PROT_NONE) 30.2 ns per PTE"),
            "{h}"
        );
        for k in cost_profile::keys() {
            assert!(s.contains_key(&k), "{k}");
        }
        let text = cost_profile::to_toml(&c, "t", &s);
        assert_eq!(cost_profile::from_toml(&text, "t").unwrap(), c);
    }
}
