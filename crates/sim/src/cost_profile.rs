//! Cost profiles as files: a [`MachineCosts`] written as TOML with the
//! meaning and the source of every value in comments, and read back.
//!
//! `schedlab costs show PRESET --toml` writes a preset's profile,
//! `schedlab calibrate` writes one measured on the host, and
//! `--cost-profile FILE` (or `cost_profile = "FILE"` in an experiment) makes
//! a simulation use it instead of the machine preset's own. The file holds
//! one key per field of [`MachineCosts`], every one required; comments are
//! ignored when it is loaded, so what a profile says about its sources is
//! for the reader only. A missing, unknown or malformed key is an error
//! naming the file and the key.
//!
//! What each key means is declared once, beside its field of
//! [`MachineCosts`] ([`MachineCosts::MEANINGS`], read through [`meaning`]).
//! Where each figure of a built-in profile comes from is per machine, so it
//! is kept here, as data ([`preset_sources`]): it restates what the comments
//! of [`MachineCosts::for_machine`] (costs/presets.rs) say.

use crate::costs::{
    IdleState, MachineCosts, CHANNEL_CALL_SOURCE, CHANNEL_LINES_SOURCE, CHANNEL_ROTATION_SOURCE,
    KUNPENG_BUSY_CROSS_CLUSTER_NS, KUNPENG_OS_SCALE_MILLI, REFILL_SOURCE, TCP_LINES_SOURCE,
};
use serde::{Deserialize, Deserializer};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Mutex;

/// A cost profile that cannot be used: names the file and the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct ProfileError {
    /// The file (or `origin` given to [`from_toml`]).
    pub file: String,
    /// The key (`pipe_syscall_ns`, `idle_states[1].name`), or `(file)` for
    /// a problem with the file as a whole.
    pub key: String,
    /// What is wrong, in a few words.
    pub message: String,
}

impl ProfileError {
    fn new(file: &str, key: impl Into<String>, message: impl std::fmt::Display) -> Self {
        ProfileError {
            file: file.to_string(),
            key: key.into(),
            message: message.to_string().trim().replace('\n', " "),
        }
    }
}

/// The one-line meaning of a profile key, if it has one: as declared
/// beside its field ([`MachineCosts::MEANINGS`]).
pub fn meaning(key: &str) -> Option<&'static str> {
    MachineCosts::meaning(key)
}

/// The keys of a profile file, in the order [`MachineCosts`] declares them.
pub fn keys() -> Vec<String> {
    table_of(&MachineCosts::for_machine("generic"))
        .keys()
        .cloned()
        .collect()
}

fn table_of(costs: &MachineCosts) -> toml::Table {
    match toml::Value::try_from(costs).expect("a cost profile serialises") {
        toml::Value::Table(t) => t,
        _ => unreachable!("a struct serialises to a table"),
    }
}

/// Where each figure of a built-in profile comes from, by key.
pub fn preset_sources(machine: &str) -> BTreeMap<String, String> {
    let notes = "the project's calibration notes; original not recorded";
    let first_local =
        "OS costs measured on the development machine (an AMD EPYC Firecracker/KVM guest, \
         Linux 6.18) with the measurement that `schedlab calibrate` now makes, median of 7 batches";
    let second_local =
        "measured with the same method on an Intel Sapphire-Rapids-class Firecracker \
         guest (2 vCPUs, Linux 6.18), median of 5 runs of 7 batches";
    let mut s: BTreeMap<String, String> = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        s.insert(k.to_string(), v);
    };
    put("machine", "the preset's name".into());
    put(
        "clean_read_ns",
        format!("a probe of a shared-clean line, ~10-20 ns -> 15 ({notes})"),
    );
    put(
        "ipi_ns",
        format!(
            "~1 us ({notes}); below the 1.2 us minimum IPI wake, C1 exit included, of an MWAIT-idle \
             AMD Zen 3 CPU in Wyes Karny's LKML patch of 2022-04-05"
        ),
    );
    put(
        "pipe_syscall_ns",
        format!("{first_local}: pipe write+read of 100 B = 686 ns -> 343 ns per call (write 299, read 307 ns timed apart)"),
    );
    put(
        "unix_syscall_ns",
        format!("{first_local}: unix socketpair write+read of 100 B = 1771 ns -> 885 ns per call (write 878, read 929 ns timed apart)"),
    );
    put("syscall_ns", format!("{first_local}: getppid 169 ns"));
    put(
        "copy_ps_per_byte",
        format!(
            "{first_local}: pipe pair of 4000 B vs 100 B, (778 - 686) / (2 x 3900 B) = 0.0118 ns/B"
        ),
    );
    put(
        "ctx_switch_ns",
        format!("{first_local}: pipe ping-pong of two threads on one CPU, 5122 ns per round trip = 2 switches + 4 pipe calls -> (5122 - 4 x 343) / 2"),
    );
    put(
        "mm_switch_extra_ns",
        format!(
            "{first_local}: the same ping-pong between processes, 5375 ns -> (5375 - 5122) / 2"
        ),
    );
    put("pipe_lines", CHANNEL_LINES_SOURCE.to_string());
    put("unix_lines", CHANNEL_LINES_SOURCE.to_string());
    put("tcp_lines", TCP_LINES_SOURCE.to_string());
    put("refill_thread_ns", format!("{REFILL_SOURCE}, threads"));
    put("refill_process_ns", format!("{REFILL_SOURCE}, processes"));
    put("pipe_shared_fd_ns", format!("{CHANNEL_CALL_SOURCE}, pipes"));
    put(
        "unix_shared_fd_ns",
        format!("{CHANNEL_CALL_SOURCE}, unix socketpairs"),
    );
    put("pipe_depth_ns", format!("{CHANNEL_CALL_SOURCE}, pipes"));
    put(
        "unix_depth_ns",
        format!("{CHANNEL_CALL_SOURCE}, unix socketpairs"),
    );
    put(
        "pipe_rotation_ns",
        format!("{CHANNEL_ROTATION_SOURCE}, pipes"),
    );
    put(
        "unix_rotation_ns",
        format!("{CHANNEL_ROTATION_SOURCE}, unix socketpairs"),
    );
    put(
        "thread_create_ns",
        format!("{first_local}: pthread_create until the thread runs, 13 us"),
    );
    put(
        "thread_exit_ns",
        format!("{first_local}: a thread's exit until joined, 12 us (includes the parent's wake-up, which the engine also models)"),
    );
    put(
        "fork_ns",
        format!("{first_local}: fork until the child runs, 94 us"),
    );
    put(
        "process_exit_ns",
        format!("{first_local}: a child's exit until reaped, 65 us (includes the parent's wake-up, which the engine also models)"),
    );
    put(
        "tcp_send_ns",
        format!("{second_local}: loopback TCP write of 100 B 1101 ns; straight line through 100 B and 65536 B: 1098 ns + 0.033 ns/B"),
    );
    put(
        "tcp_recv_ns",
        format!(
            "{second_local}: loopback TCP read of 100 B 265 ns; straight line: 262 ns + 0.034 ns/B"
        ),
    );
    put(
        "tcp_ps_per_byte",
        format!("{second_local}: the write line's slope, 0.033 ns/B"),
    );
    put(
        "gettimeofday_ns",
        format!("{second_local}: gettimeofday through the vDSO (clocksource tsc), 17.6 ns"),
    );
    put(
        "futex_wake_ns",
        format!("{second_local}: FUTEX_WAKE_PRIVATE with no waiter, 96.9 ns"),
    );
    put(
        "futex_wait_ns",
        format!("{second_local}: FUTEX_WAIT_PRIVATE returning EAGAIN, 143 ns"),
    );
    put(
        "atomic_ns",
        format!("{second_local}: an uncontended __sync_bool_compare_and_swap, 4.84 ns"),
    );
    put(
        "matmul_madd_ps",
        format!("{second_local}: schbench's n = 104 multiply (its default 256 KB footprint), gcc -O2, 411.4 us = 0.366 ns per multiply-add"),
    );
    put(
        "hz",
        "HZ=250, the common distribution default (kernel/Kconfig.hz)".into(),
    );
    put(
        "charge_idle_exit",
        "on: a woken idle CPU pays its idle state's exit latency".into(),
    );
    let wfi = format!(
        "arm64 idles in WFI (cpu_do_idle), exit on the order of 1 us, no public measurement ({notes}): 1 us exit, entered whenever idle"
    );
    let no_smt = "no SMT: empty".to_string();
    let intel_smt = "Intel SMT: 0.65 per thread (plantegg's sysbench point-select on a Xeon 8269CY, 28208 -> 36754 QPS; Intel's \"How to Determine the Effectiveness of HT\": up to 1.30x)";
    let (c2c, idle, smt): (String, String, String) = match machine {
        "kunpeng920" | "kunpeng920-1s" | "kunpeng920-node" => (
            "github.com/nviennot/core-to-core-latency, Kunpeng 920-6426, 1 socket: cluster 34.5, same die other cluster 35.7, other die 80.5; cross socket not measured: midpoint of the 108-141 medians of nviennot's dual-socket Xeons from Sandy Bridge on, 125; the SMT class (8) is unused: no SMT".into(),
            wfi,
            no_smt,
        ),
        "power9-smt8" => (
            "github.com/KCORES/core-to-core-latency-plus, 2x POWER9 SMT4 16c: within the core pair <= 17, other core 483, cross socket 717".into(),
            "snooze (0 us), CEDE wake median 5.7 us (github.com/linuxppc/issues/issues/370), residency 10 us".into(),
            "IBM's POWER8 claim SMT2 = 1.6x (AnandTech POWER8 review), SMT8 ~ 2x ST (AnandTech, 7-zip; weak): 1.0, 1.6, 1.8 (interpolated), 2.0 for the 4-thread small core".into(),
        ),
        "xeon-12c24t" => (
            "github.com/nviennot/core-to-core-latency, dual X5650 Westmere: SMT 7.1, LLC 37.2, cross socket 73.7".into(),
            "drivers/idle/intel_idle.c nehalem_cstates".into(),
            intel_smt.into(),
        ),
        "broadwell-ep" => (
            "no c2c measurement of the E5-2699 v4 found: the project's suggested Intel defaults, SMT 8 (nviennot's Xeon SMT medians, 7.1-8.9), LLC and package 50 (the 45-55 ns of nviennot's and KCORES' monolithic Xeon medians), cross socket 125 (the midpoint of the 110-140 ns of nviennot's dual-socket Xeons from Sandy Bridge on)".into(),
            "drivers/idle/intel_idle.c bdw_cstates up to C6".into(),
            intel_smt.into(),
        ),
        "jacobsville" => (
            "no c2c data: cluster 35 (Kunpeng's 4-core cluster, nviennot 34.5); LLC and package 50, the middle of the 45-55 ns of nviennot's and KCORES' monolithic Xeon medians (Cascade Lake 46.6 to Sapphire Rapids 55.3); remote 125 as for kunpeng920; the SMT class (8) is unused: no SMT".into(),
            "drivers/idle/intel_idle.c snr_cstates".into(),
            no_smt,
        ),
        "epyc-zen3" | "epyc-zen3-2s" => (
            "github.com/nviennot/core-to-core-latency, 2x EPYC 7R13 Milan, socket 0: SMT 9.8, CCX 22.7, cross CCX 108, cross socket 197".into(),
            "MWAIT C1: IPI wake median 1.5 us in total (AMD Zen 3, 10k pinned samples; Wyes Karny, LKML 2022-04-05): 0.5 us exit after the 1 us IPI, residency 2 us".into(),
            "AMD 0.70-0.75 per thread (plantegg's sysbench on an EPYC 7H12: 0.73) -> 0.725".into(),
        ),
        "sapphire-rapids" => (
            "github.com/KCORES/core-to-core-latency-plus, w9-3475X mesh 55.3; SMT 8 (nviennot's Xeon SMT medians, 7.1-8.9); cross socket not measured for SPR: the nearest generation, 2x 8375C Ice Lake (nviennot), 108".into(),
            "drivers/idle/intel_idle.c spr_cstates".into(),
            intel_smt.into(),
        ),
        "altra" => (
            "github.com/KCORES/core-to-core-latency-plus, Altra Q80-30: 2-core cluster 83, other 158; the SMT class (8) is unused: no SMT".into(),
            wfi,
            no_smt,
        ),
        "kvm-8vcpu" => (
            "host c2c unknown; vCPUs float over an EPYC host: cross-CCX 108 (nviennot, 2x 7R13) for every class, remote 197".into(),
            "a halted vCPU's wake ~20 us one way (pinned pipe ping-pong on a 2-vCPU guest, 46-54 us round trip across vCPUs vs 7-8 us on one): 1 us IPI + 19 us HLT exit".into(),
            no_smt,
        ),
        _ => (
            "generic (machines without a preset): midpoints of the ranges the preset sources give: SMT 8, cluster 35, LLC 50, package 110, remote 125".into(),
            format!("generic: C1 2 us ({notes})"),
            "generic: SMT 1.30x (as Intel's)".into(),
        ),
    };
    put(
        "c2c_contended_ns",
        match machine {
            "kunpeng920" | "kunpeng920-1s" | "kunpeng920-node" => "Barry Song's false-sharing loop (RFC v3 of the cluster scheduler, linux-arm-kernel 2021-01-06): 0.832 s in one cluster, 1.133 s across two, a ratio of 0.734 applied to the uncontended cross-cluster hand-off (36 ns): cluster 26; other classes: no contended measurement, the uncontended figures".to_string(),
            _ => "no contended measurement: the uncontended figures (c2c_ns)".to_string(),
        },
    );
    put(
        "c2c_busy_ns",
        match machine {
            "kunpeng920" | "kunpeng920-1s" | "kunpeng920-node" => format!(
                "FITTED (one of the profile's two fitted parameters): between clusters of a die {} ns (KUNPENG_BUSY_CROSS_CLUSTER_NS; the idle hand-off is 36), fitted to the four-cluster time of `hackbench -p -T -l 20000 -g 1` on CPUs 0,4,8,12, 5.524 s (Barry Song, RFC v3 of the cluster scheduler, linux-arm-kernel 2021-01-06), by bisection of the model's mean over seeds 1-10 at -l 2000 x 10 under linux-5.11, after the OS factor was fitted to the one-cluster time (crates/sim/tests/kunpeng.rs, refit_kunpeng); other classes: the uncontended figures (c2c_ns)",
                KUNPENG_BUSY_CROSS_CLUSTER_NS
            ),
            _ => "no measurement: the uncontended figures (c2c_ns)".to_string(),
        },
    );
    put(
        "wake_latency_spread_milli",
        "IPI wake of an idle AMD Zen 3 CPU in HLT, 10k pinned samples (Lewis Caroll / Wyes Karny, LKML 2022-04-05): min 1.7, p25 1.9, median 2.0, p99 2.8 us -> 0.85, 0.95, 1, 1.40 of the median (maximum not given: p99); the only published per-wake-up distribution".to_string(),
    );
    put(
        "dummy_wakeup_ns",
        "diagnostic only; zero in every profile".to_string(),
    );
    put(
        "os_scale_milli",
        match machine {
            "kunpeng920" | "kunpeng920-1s" | "kunpeng920-node" => format!("FITTED (one of the profile's two fitted parameters): {KUNPENG_OS_SCALE_MILLI}, the one factor on the development machine's OS costs that makes `hackbench -p -T -l 20000 -g 1` on CPUs 0-3 (one cluster, where no line crosses clusters) take the measured 4.285 s (Barry Song, RFC v3 of the cluster scheduler, linux-arm-kernel 2021-01-06), by bisection of the model's mean over seeds 1-10 at -l 2000 x 10 under linux-5.11 (CFS) (crates/sim/tests/kunpeng.rs, refit_kunpeng); no per-call Kunpeng figures are published"),
            _ => "1000: the OS costs as measured".to_string(),
        },
    );
    let mem_local = "measured on the development machine (Intel Xeon KVM guest, 2 vCPUs, one node, Linux 6.18), gcc -O2, best of 5 over 256 MiB; methods and figures in docs/numa.md";
    put(
        "mem_ps_per_byte",
        format!("a 64-bit-word sum over a populated 256 MiB array, 8.6 GB/s = 116 ps/B ({mem_local}); remote pages scale by the SLIT distance / 10 (ACPI SLIT: relative memory latency, local = 10)"),
    );
    put(
        "numa_pte_update_ns",
        format!("mprotect(PROT_NONE) over populated 4 KiB pages, 28-32 ns per PTE ({mem_local})"),
    );
    put(
        "numa_hint_fault_ns",
        format!("a write fault per page of a fresh shared mapping of a populated /dev/shm file (no allocation, no fault-around), 761-782 ns ({mem_local})"),
    );
    put(
        "numa_migrate_page_ns",
        format!("first touch of anonymous 4 KiB pages (allocate, zero, map) 1226-1301 ns, taken for allocate+copy+remap, plus two PTE updates ({mem_local})"),
    );
    put(
        "node_mem_mb_s",
        match machine {
            "kunpeng920" | "kunpeng920-1s" | "kunpeng920-node" => "HiSilicon Kunpeng 920 product brief: 8 DDR4-2933 channels per socket, 4 per die (node): 4 x 2933 x 8 B (a peak)".to_string(),
            "xeon-12c24t" => "Intel ARK, Xeon X5650: 3 DDR3-1333 channels, max memory bandwidth 32 GB/s per socket (node): 3 x 1333 x 8 B (a peak)".to_string(),
            "epyc-zen3" | "epyc-zen3-2s" => "AMD EPYC 7763 product page: 8 DDR4-3200 channels per socket, NPS1 one node per socket: 8 x 3200 x 8 B (a peak)".to_string(),
            "sapphire-rapids" => "Intel ARK, Xeon Platinum 8480+: 8 DDR5-4800 channels per socket (node): 8 x 4800 x 8 B (a peak)".to_string(),
            "altra" => "Ampere Altra product brief: 8 DDR4-3200 channels, one node: 8 x 3200 x 8 B (a peak)".to_string(),
            "broadwell-ep" => "Intel ARK, Xeon E5-2699 v4: 4 DDR4-2400 channels, max memory bandwidth 76.8 GB/s per socket (node): 4 x 2400 x 8 B (a peak)".to_string(),
            _ => "0: no published figure for this machine's memory system in one number; not limited".to_string(),
        },
    );
    put("c2c_ns", c2c);
    put("idle_states", idle);
    put("smt_throughput_milli", smt);
    s
}

/// The profile as a TOML file: a header, then per key its meaning and
/// source as comments and its value. `header` lines are written as
/// comments at the top.
pub fn to_toml(costs: &MachineCosts, header: &str, sources: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for line in header.lines() {
        out += &comment(line);
    }
    out += "# A cost profile for schedlab: `schedlab sim ... --cost-profile FILE`, or\n\
            # `cost_profile = \"FILE\"` in an experiment. Every key is required; comments are ignored.\n";
    for (key, value) in table_of(costs) {
        out += "\n";
        if let Some(m) = meaning(&key) {
            out += &comment(m);
        }
        if let Some(src) = sources.get(&key) {
            out += &comment(&format!("source: {src}"));
        }
        out += &format!("{key} = {}\n", value_text(&value));
    }
    out
}

/// A value as TOML, inline; arrays of tables one element per line.
pub fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::Array(a) if a.iter().any(|x| x.is_table()) => {
            let mut s = "[\n".to_string();
            for x in a {
                s += &format!("    {},\n", inline(x));
            }
            s + "]"
        }
        other => inline(other),
    }
}

fn inline(v: &toml::Value) -> String {
    match v {
        toml::Value::Table(t) => {
            let fields: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{k} = {}", inline(v)))
                .collect();
            format!("{{ {} }}", fields.join(", "))
        }
        toml::Value::Array(a) => {
            let xs: Vec<String> = a.iter().map(inline).collect();
            format!("[{}]", xs.join(", "))
        }
        other => other.to_string(),
    }
}

/// `text` as `# ` comment lines, wrapped at about 100 columns.
fn comment(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() > 1 && line.len() + 1 + word.len() > 100 {
            out += &line;
            out += "\n";
            line = String::from("#  ");
        }
        line.push(' ');
        line += word;
    }
    out += &line;
    out += "\n";
    out
}

/// The largest value any cost may have: one second (in ns, or ps per
/// byte or per multiply-add). Larger is surely a typing error, and would
/// overflow the engine's arithmetic.
pub const MAX_COST: u64 = 1_000_000_000;

/// Reads a profile from TOML text; `origin` names it in errors.
pub fn from_toml(text: &str, origin: &str) -> Result<MachineCosts, ProfileError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let key = line.map_or("(file)".to_string(), |l| format!("line {l}"));
        ProfileError::new(origin, key, e.message())
    })?;
    let known = keys();
    if let Some(k) = table.keys().find(|k| !known.contains(k)) {
        return Err(ProfileError::new(
            origin,
            k.clone(),
            "unknown key (the keys are those of `schedlab costs show PRESET --toml`)",
        ));
    }
    if let Some(k) = known.iter().find(|k| !table.contains_key(*k)) {
        return Err(ProfileError::new(
            origin,
            k.clone(),
            "missing (every key is required)",
        ));
    }
    let costs: MachineCosts =
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let key = e.path().to_string();
            ProfileError::new(origin, key, e.into_inner().message())
        })?;
    validate(&costs).map_err(|(k, m)| ProfileError::new(origin, k, m))?;
    Ok(costs)
}

/// The largest profile file [`load`] reads. A profile has one key per
/// field of [`MachineCosts`] and no per-CPU table: `costs show --toml` of the
/// largest preset is under 10 KiB with its comments, so 1 MiB leaves room
/// for any comments a user adds, while `/dev/zero` or a wrong, huge file
/// fails at once.
pub const MAX_PROFILE_BYTES: u64 = 1 << 20;

/// Reads a profile file: a regular file of at most [`MAX_PROFILE_BYTES`]
/// (a FIFO or a device is refused before it is opened).
pub fn load(path: &Path) -> Result<MachineCosts, ProfileError> {
    let origin = path.display().to_string();
    let bytes = topology::input::read_capped(path, MAX_PROFILE_BYTES)
        .map_err(|e| ProfileError::new(&origin, "(file)", e))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ProfileError::new(&origin, "(file)", "not UTF-8 text"))?;
    from_toml(&text, &origin)
}

/// Checks the values the types alone do not: every cost at most
/// [`MAX_COST`], a tick rate in 1..=10000 Hz, SMT throughputs above 0.
fn validate(c: &MachineCosts) -> Result<(), (String, String)> {
    fn walk(key: &str, v: &toml::Value) -> Result<(), (String, String)> {
        match v {
            toml::Value::Integer(i) if *i as u64 > MAX_COST => Err((
                key.to_string(),
                format!("{i} is too large (at most {MAX_COST})"),
            )),
            toml::Value::Array(a) => a
                .iter()
                .enumerate()
                .try_for_each(|(n, x)| walk(&format!("{key}[{n}]"), x)),
            toml::Value::Table(t) => t
                .iter()
                .try_for_each(|(k, x)| walk(&format!("{key}.{k}"), x)),
            _ => Ok(()),
        }
    }
    for (k, v) in table_of(c) {
        walk(&k, &v)?;
    }
    if !(1..=10_000).contains(&c.hz) {
        return Err(("hz".into(), format!("{} is not in 1..=10000", c.hz)));
    }
    if let Some(i) = c.smt_throughput_milli.iter().position(|&t| t == 0) {
        return Err((format!("smt_throughput_milli[{i}]"), "must be > 0".into()));
    }
    Ok(())
}

/// Idle-state names live as `&'static str` in [`IdleState`]; names read
/// from files are kept here, each distinct one allocated once.
static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

/// An idle-state name as [`IdleState`] holds it: each distinct name is
/// allocated once and kept for the life of the process.
pub fn intern(name: &str) -> &'static str {
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(n);
    n
}

impl<'de> Deserialize<'de> for IdleState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Owned {
            name: String,
            exit_latency_ns: u64,
            target_residency_ns: u64,
        }
        let o = Owned::deserialize(d)?;
        Ok(IdleState {
            name: intern(&o.name),
            exit_latency_ns: o.exit_latency_ns,
            target_residency_ns: o.target_residency_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_round_trips() {
        for (name, _) in topology::presets() {
            let c = MachineCosts::for_machine(name);
            let text = to_toml(&c, "test", &preset_sources(name));
            assert_eq!(from_toml(&text, "x").unwrap(), c, "{name}");
            let z = c.zeroed();
            assert_eq!(
                from_toml(&to_toml(&z, "", &BTreeMap::new()), "x").unwrap(),
                z
            );
        }
    }

    #[test]
    fn every_key_has_a_meaning_and_a_source() {
        for (name, _) in topology::presets() {
            let s = preset_sources(name);
            for k in keys() {
                assert!(meaning(&k).is_some(), "{k}");
                assert!(s.contains_key(&k), "{name}: {k}");
            }
        }
    }

    #[test]
    fn the_meanings_are_the_keys_in_file_order() {
        let declared: Vec<&str> = MachineCosts::MEANINGS.iter().map(|(k, _)| *k).collect();
        assert_eq!(declared, keys());
        for (k, m) in MachineCosts::MEANINGS {
            assert!(!m.is_empty() && !m.contains('\n'), "{k}");
        }
    }

    fn edit(from: &str, to: &str) -> Result<MachineCosts, ProfileError> {
        let text = to_toml(
            &MachineCosts::for_machine("kunpeng920"),
            "",
            &BTreeMap::new(),
        );
        assert!(text.contains(from), "{from}");
        from_toml(&text.replacen(from, to, 1), "p.toml")
    }

    #[test]
    fn errors_name_the_key() {
        let e = |from: &str, to: &str| edit(from, to).unwrap_err().to_string();
        // the values as the profile writes them (Kunpeng's scale with its
        // fitted factor)
        let k = MachineCosts::for_machine("kunpeng920");
        let pipe = format!("pipe_syscall_ns = {}", k.pipe_syscall_ns);
        let fork = format!("fork_ns = {}", k.fork_ns);
        assert_eq!(
            e(&pipe, "pipe_syscall_ns = \"x\""),
            "p.toml: pipe_syscall_ns: invalid type: string \"x\", expected u64"
        );
        assert_eq!(
            e(&format!("{pipe}\n"), ""),
            "p.toml: pipe_syscall_ns: missing (every key is required)"
        );
        assert!(e("hz = 250", "hz = 250\npipe_ns = 3").starts_with("p.toml: pipe_ns: unknown key"));
        assert_eq!(e("hz = 250", "hz = 0"), "p.toml: hz: 0 is not in 1..=10000");
        assert!(e(&fork, "fork_ns = -1").starts_with("p.toml: fork_ns: invalid value"));
        assert_eq!(
            e("ipi_ns = 1000", "ipi_ns = 10000000000"),
            "p.toml: ipi_ns: 10000000000 is too large (at most 1000000000)"
        );
        assert!(e("c2c_ns = [0, ", "c2c_ns = [").starts_with("p.toml: c2c_ns: invalid length 5"));
        assert!(
            e("name = \"WFI\", ", "").starts_with("p.toml: idle_states[0]: missing field `name`")
        );
        assert!(e("hz = 250", "hz = ").starts_with("p.toml: line "));
    }

    #[test]
    fn edited_values_load() {
        let c = edit("ipi_ns = 1000", "ipi_ns = 2500").unwrap();
        assert_eq!(c.ipi_ns, 2500);
        let c = edit("name = \"WFI\"", "name = \"deep\"").unwrap();
        assert_eq!(c.idle_states[0].name, "deep");
    }
}
