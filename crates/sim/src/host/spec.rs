//! Machine descriptions of the host layer: a host (its CPUs, kernel, KVM
//! halt polling and virtualisation costs), the guests it runs (each a
//! machine of vCPUs with libvirt-style affinities) and any other host load
//! (noisy neighbours). Built-in presets name the setups of the vCPU-preempted
//! patch (Linux 4.18, commits 247f2f6f3c70 and 943d355d7fee); a TOML file
//! describes any other (docs/vm.md has the format).

use crate::Nanos;
use serde::Deserialize;
use std::path::Path;
use topology::CpuMask;

/// A bad machine description: the file (or preset), the key, and what is
/// wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {key}: {msg}")]
pub struct HostError {
    /// The file or `--host` value.
    pub origin: String,
    /// The key (`guest[1].pin[3]`, `host.machine`, `(file)`).
    pub key: String,
    /// What is wrong.
    pub msg: String,
}

impl HostError {
    fn new(origin: &str, key: impl Into<String>, msg: impl Into<String>) -> Self {
        HostError {
            origin: origin.into(),
            key: key.into(),
            msg: msg.into(),
        }
    }
}

/// The host's architecture: decides KVM's default halt-polling window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    /// x86-64 (KVM_HALT_POLL_NS_DEFAULT 200000, arch/x86/include/asm/kvm_host.h).
    X86,
    /// arm64 (KVM_HALT_POLL_NS_DEFAULT 500000, arch/arm64/include/asm/kvm_host.h).
    Arm64,
}

impl Arch {
    /// KVM_HALT_POLL_NS_DEFAULT of the architecture: the most a halted
    /// vCPU's thread polls before it sleeps (virt/kvm/kvm_main.c
    /// `halt_poll_ns`).
    pub fn halt_poll_ns_default(self) -> Nanos {
        match self {
            Arch::X86 => 200_000,
            Arch::Arm64 => 500_000,
        }
    }
}

/// How a guest's idle loop leaves the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GuestIdle {
    /// The guest halts (HLT / WFI exits to the host), the default of KVM
    /// guests without `idle=`.
    Halt,
    /// The guest boots with `idle=poll` (cpu_idle_poll, kernel/sched/idle.c):
    /// an idle vCPU spins in guest code and never exits, so its thread stays
    /// runnable on the host and can be pre-empted while idle.
    Poll,
}

/// One guest: a machine of vCPUs, each a host thread with an affinity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestSpec {
    /// Name in reports.
    pub name: String,
    /// The guest machine (a `schedlab` machine name: preset or `smp:`).
    pub machine: String,
    /// Each vCPU's allowed host CPUs (a single CPU: pinned 1:1 as libvirt's
    /// `<vcpupin>`; several: floating over a set, `<vcpu cpuset=...>`).
    pub affinity: Vec<CpuMask>,
    /// The guest's idle loop.
    pub idle: GuestIdle,
}

/// Other host load: always-runnable compute threads (a "noisy neighbour").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoisySpec {
    /// Threads.
    pub tasks: u32,
    /// Host CPUs they may use; thread i starts on the i-th CPU of the set.
    pub cpus: CpuMask,
    /// Pinned: thread i may run on the i-th CPU of the set only.
    pub pinned: bool,
    /// Every thread starts on this host CPU (None: thread i on the i-th
    /// CPU of the set), as the threads of a process created there before
    /// any balancing: only the host's load balancer spreads them.
    pub start: Option<usize>,
}

/// A host and its guests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostSpec {
    /// Where it came from (preset name or file path).
    pub origin: String,
    /// The host machine (a `schedlab` machine name).
    pub machine: String,
    /// The host kernel profile (its EEVDF base slice).
    pub kernel: String,
    /// The host's architecture.
    pub arch: Arch,
    /// KVM's `halt_poll_ns` (the most a halted vCPU polls).
    pub halt_poll_ns: Nanos,
    /// One VM exit plus re-entry, ns (charged when a vCPU resumes).
    pub exit_entry_ns: Nanos,
    /// A guest CPU's idle entry path before its HLT exit, ns: guest code
    /// (do_idle, the governor, stopping the tick, whose timer write is
    /// itself a VM exit) that the host can pre-empt like any other.
    pub guest_idle_entry_ns: Nanos,
    /// Charge the host's costs (its switches, idle wake-ups, VM exits and
    /// entries); false: the host layer is free, so a guest alone on its
    /// host runs exactly as on bare metal.
    pub host_costs: bool,
    /// The guests.
    pub guests: Vec<GuestSpec>,
    /// Other host load.
    pub noisy: Vec<NoisySpec>,
}

/// VM exit plus re-entry, ns: "vmexit + hypervisor overhead + vmenter ...
/// up to 5 microseconds", Arjan van de Ven's figure for a KVM guest's HLT
/// round trip (the rationale of intel_idle's guest C1 exit latency of 5 us,
/// LKML 2020). An upper bound, used as the cost of every round trip.
pub const EXIT_ENTRY_NS: Nanos = 5_000;

/// A KVM guest's idle entry path, from its switch to the idle task to its
/// HLT, ns: measured on a KVM guest (Firecracker, AMD EPYC host, Linux
/// 6.18 guest with the haltpoll driver, whose second pass halts) with the
/// tracepoints `sched:sched_switch` (to the idle task) and
/// `power:cpu_idle` (state 1, the halt), 5,077 idle entries of a task
/// sleeping 1 ms in a loop on one CPU: median 4.5 us (p25 3.3, p75 7.9;
/// 4.6 us for the 4,580 entries that stopped the tick). docs/vm.md has the
/// method. The tick stop's timer write is one VM exit of its own.
pub const GUEST_IDLE_ENTRY_NS: Nanos = 4_500;

/// The host machine of the presets: 8 host CPUs, one socket, no SMT,
/// charged as the Xeon preset (the patch's authors ran x86 KVM hosts).
pub const PRESET_HOST_MACHINE: &str = "smp:sockets=1,cores=8,threads=1,cost=xeon-12c24t";

/// The built-in machine descriptions: (name, what it is).
pub const PRESETS: &[(&str, &str)] = &[
    (
        "vm1x8",
        "one 8-vCPU guest alone on 8 host CPUs, vCPU i pinned to host CPU i (the first setup of the 4.18 vCPU-preempted change's authors)",
    ),
    (
        "vm2x8",
        "two 8-vCPU guests on the same 8 host CPUs, vCPU i of each pinned to host CPU i (setup b)",
    ),
    (
        "vm1x8-noisy",
        "one 8-vCPU guest pinned 1:1 on 8 host CPUs, with 8 host compute threads pinned the same way",
    ),
    (
        "ccx-2vm-overlap",
        "one Zen 3 CCX (8 cores x SMT2) hosting two 12-vCPU guests pinned to cores 0-5 and 2-7 (4 cores shared): the fidelity corpus' cpus.unavailable setup",
    ),
    (
        "power9-lpar-dedicated",
        "a 128-vCPU guest pinned 1:1 on 128 POWER9 host CPUs, no other load: the fidelity corpus' dedicated-processor LPAR",
    ),
    (
        "power-shared-lpar",
        "a 90-vCPU guest floating over 94 POWER host cores beside 64 always-runnable host threads: the fidelity corpus' shared-processor LPAR pair",
    ),
];

fn pinned(n: usize) -> Vec<CpuMask> {
    (0..n).map(|i| CpuMask::from_cpus([i])).collect()
}

fn guest(name: &str) -> GuestSpec {
    GuestSpec {
        name: name.into(),
        machine: "kvm-8vcpu".into(),
        affinity: pinned(8),
        idle: GuestIdle::Halt,
    }
}

/// A built-in machine description.
pub fn preset(name: &str) -> Result<HostSpec, HostError> {
    let base = |guests: Vec<GuestSpec>, noisy: Vec<NoisySpec>| HostSpec {
        origin: name.into(),
        machine: PRESET_HOST_MACHINE.into(),
        kernel: "latest".into(),
        arch: Arch::X86,
        halt_poll_ns: Arch::X86.halt_poll_ns_default(),
        exit_entry_ns: EXIT_ENTRY_NS,
        guest_idle_entry_ns: GUEST_IDLE_ENTRY_NS,
        host_costs: true,
        guests,
        noisy,
    };
    match name {
        "vm1x8" => Ok(base(vec![guest("vm1")], vec![])),
        "vm2x8" => Ok(base(vec![guest("vm1"), guest("vm2")], vec![])),
        "vm1x8-noisy" => Ok(base(
            vec![guest("vm1")],
            vec![NoisySpec {
                tasks: 8,
                cpus: CpuMask::from_cpus(0..8),
                pinned: true,
                start: None,
            }],
        )),
        // The fidelity corpus' guests (crates/lab/src/fidelity/): shapes
        // that stand for published setups, each entry's note says how.
        // Two guests of 6 SMT2 cores on one 8-core CCX (K Prateek Nayak's
        // cpus.unavailable test, LKML 2025-12-08): guests have no SMT
        // here, so each is 12 vCPUs pinned to the threads of its 6 cores;
        // six-core guests on 8 cores share 4 of them.
        "ccx-2vm-overlap" => {
            let threads = |cores: std::ops::Range<usize>| -> Vec<CpuMask> {
                cores
                    .flat_map(|c| [c, c + 8])
                    .map(|t| CpuMask::from_cpus([t]))
                    .collect()
            };
            let g = |name: &str, cores| GuestSpec {
                name: name.into(),
                machine: "smp:sockets=1,cores=12,threads=1,cost=kvm-8vcpu".into(),
                affinity: threads(cores),
                idle: GuestIdle::Halt,
            };
            Ok(HostSpec {
                machine: "smp:sockets=1,cores=8,threads=2,cost=epyc-zen3".into(),
                guests: vec![g("vm1", 0..6), g("vm2", 2..8)],
                ..base(vec![], vec![])
            })
        }
        // A dedicated-processor PowerVM LPAR of 128 CPUs (Srikar
        // Dronamraju's test of 14c73bd344da): vCPU i on host CPU i, the
        // host otherwise idle. PowerVM is not KVM: no halt polling.
        "power9-lpar-dedicated" => {
            let shape = "smp:sockets=2,cores=64,threads=1,nodes=2,cost=power9-smt8";
            Ok(HostSpec {
                machine: shape.into(),
                halt_poll_ns: 0,
                // not KVM: no measured idle entry path of a PowerVM LPAR
                guest_idle_entry_ns: 0,
                guests: vec![GuestSpec {
                    name: "lpar".into(),
                    machine: shape.into(),
                    affinity: pinned(128),
                    idle: GuestIdle::Halt,
                }],
                ..base(vec![], vec![])
            })
        }
        // Two shared-processor LPARs on 94 POWER cores (Shrikanth Hegde's
        // paravirt-CPU RFC, 2025-09-10): LPAR1's 90 virtual processors
        // float over the shared pool; LPAR2's 64 run stress-ng, here 64
        // always-runnable host threads (its idle half-minutes are not
        // modelled). One vCPU per core: PowerVM dispatches whole cores.
        "power-shared-lpar" => {
            let pool = CpuMask::from_cpus(0..94);
            Ok(HostSpec {
                machine: "smp:sockets=1,cores=94,threads=1,cost=power9-smt8".into(),
                halt_poll_ns: 0,
                // not KVM: no measured idle entry path of a PowerVM LPAR
                guest_idle_entry_ns: 0,
                guests: vec![GuestSpec {
                    name: "lpar1".into(),
                    machine: "smp:sockets=1,cores=90,threads=1,cost=power9-smt8".into(),
                    affinity: (0..90).map(|_| pool.clone()).collect(),
                    idle: GuestIdle::Halt,
                }],
                noisy: vec![NoisySpec {
                    tasks: 64,
                    cpus: pool.clone(),
                    pinned: false,
                    start: None,
                }],
                ..base(vec![], vec![])
            })
        }
        _ => Err(HostError::new(
            name,
            "preset",
            format!(
                "unknown preset (the presets: {}; or a TOML file)",
                PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// The largest machine file [`load`] reads (1 MiB).
pub const MAX_HOST_FILE_BYTES: u64 = 1 << 20;

/// `--host FILE|PRESET`: a file when the path exists or names a `.toml`,
/// else a preset.
pub fn resolve(arg: &str) -> Result<HostSpec, HostError> {
    let p = Path::new(arg);
    if arg.ends_with(".toml") || p.exists() {
        load(p)
    } else {
        preset(arg)
    }
}

/// Reads a machine file (a regular file of at most [`MAX_HOST_FILE_BYTES`]).
pub fn load(path: &Path) -> Result<HostSpec, HostError> {
    let origin = path.display().to_string();
    let bytes = topology::input::read_capped(path, MAX_HOST_FILE_BYTES)
        .map_err(|e| HostError::new(&origin, "(file)", e))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| HostError::new(&origin, "(file)", "not UTF-8 text"))?;
    from_toml(&text, &origin)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHost {
    machine: String,
    #[serde(default = "latest")]
    kernel: String,
    #[serde(default)]
    arch: Option<Arch>,
    halt_poll_ns: Option<u64>,
    exit_entry_ns: Option<u64>,
    guest_idle_entry_ns: Option<u64>,
    #[serde(default = "yes")]
    costs: bool,
}

fn yes() -> bool {
    true
}

fn latest() -> String {
    "latest".into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileGuest {
    name: Option<String>,
    #[serde(default = "kvm8")]
    machine: String,
    /// vCPU i pinned to host CPU pin[i].
    pin: Option<Vec<i64>>,
    /// Every vCPU floats over this host CPU list.
    cpus: Option<String>,
    #[serde(default = "halt")]
    idle: GuestIdle,
}

fn kvm8() -> String {
    "kvm-8vcpu".into()
}

fn halt() -> GuestIdle {
    GuestIdle::Halt
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileNoisy {
    tasks: u32,
    cpus: String,
    #[serde(default)]
    pinned: bool,
    start: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    host: FileHost,
    #[serde(default)]
    guest: Vec<FileGuest>,
    #[serde(default)]
    noisy: Vec<FileNoisy>,
}

/// Reads a machine description from TOML text; `origin` names it in errors.
/// Host CPU numbers are checked against the host machine, which is built
/// here for that.
pub fn from_toml(text: &str, origin: &str) -> Result<HostSpec, HostError> {
    let de = toml::Deserializer::parse(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        HostError::new(
            origin,
            line.map_or("(file)".to_string(), |l| format!("line {l}")),
            e.message(),
        )
    })?;
    let f: File = serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let key = if key == "." { "(file)".into() } else { key };
        HostError::new(origin, key, e.into_inner().message().trim_end())
    })?;
    let arch = f.host.arch.unwrap_or(Arch::X86);
    let mut spec = HostSpec {
        origin: origin.into(),
        machine: f.host.machine,
        kernel: f.host.kernel,
        arch,
        halt_poll_ns: f.host.halt_poll_ns.unwrap_or(arch.halt_poll_ns_default()),
        exit_entry_ns: f.host.exit_entry_ns.unwrap_or(EXIT_ENTRY_NS),
        guest_idle_entry_ns: f.host.guest_idle_entry_ns.unwrap_or(GUEST_IDLE_ENTRY_NS),
        host_costs: f.host.costs,
        guests: Vec::new(),
        noisy: Vec::new(),
    };
    if let Err(e) = crate::placement::linux::Features::kernel(&spec.kernel) {
        return Err(HostError::new(origin, "host.kernel", e.to_string()));
    }
    let host = topology::machine(&spec.machine)
        .map_err(|e| HostError::new(origin, "host.machine", e.to_string()))?;
    let n = host.nr_cpus();
    if spec.halt_poll_ns > 1_000_000_000 {
        return Err(HostError::new(
            origin,
            "host.halt_poll_ns",
            "at most 1000000000",
        ));
    }
    for (key, v) in [
        ("host.exit_entry_ns", spec.exit_entry_ns),
        ("host.guest_idle_entry_ns", spec.guest_idle_entry_ns),
    ] {
        if v > 1_000_000_000 {
            return Err(HostError::new(origin, key, "at most 1000000000"));
        }
    }
    let list = |key: &str, s: &str| -> Result<CpuMask, HostError> {
        let m = CpuMask::parse_list(s).map_err(|e| HostError::new(origin, key, e.to_string()))?;
        if m.is_empty() {
            return Err(HostError::new(origin, key, "the CPU list is empty"));
        }
        if let Some(bad) = m.iter().find(|&c| c >= n) {
            return Err(HostError::new(
                origin,
                key,
                format!("host CPU {bad} is outside the host (CPUs 0-{})", n - 1),
            ));
        }
        Ok(m)
    };
    if f.guest.is_empty() {
        return Err(HostError::new(
            origin,
            "guest",
            "no [[guest]]: a host needs at least one guest",
        ));
    }
    for (g, fg) in f.guest.into_iter().enumerate() {
        let key = |k: &str| format!("guest[{g}].{k}");
        let gt = topology::machine(&fg.machine)
            .map_err(|e| HostError::new(origin, key("machine"), e.to_string()))?;
        let vcpus = gt.nr_cpus();
        let affinity = match (fg.pin, fg.cpus) {
            (Some(_), Some(_)) => {
                return Err(HostError::new(
                    origin,
                    key("pin"),
                    "give pin or cpus, not both",
                ))
            }
            (None, None) => {
                return Err(HostError::new(
                    origin,
                    key("pin"),
                    "missing: pin = [host CPU of each vCPU] or cpus = \"LIST\"",
                ))
            }
            (Some(pin), None) => {
                if pin.is_empty() {
                    return Err(HostError::new(origin, key("pin"), "a guest with no vCPUs"));
                }
                if pin.len() != vcpus {
                    return Err(HostError::new(
                        origin,
                        key("pin"),
                        format!(
                            "{} entries for the {vcpus} vCPUs of machine {}",
                            pin.len(),
                            fg.machine
                        ),
                    ));
                }
                let mut a = Vec::new();
                for (i, &c) in pin.iter().enumerate() {
                    if c < 0 || c as usize >= n {
                        return Err(HostError::new(
                            origin,
                            format!("guest[{g}].pin[{i}]"),
                            format!("host CPU {c} is outside the host (CPUs 0-{})", n - 1),
                        ));
                    }
                    a.push(CpuMask::from_cpus([c as usize]));
                }
                a
            }
            (None, Some(s)) => {
                let m = list(&key("cpus"), &s)?;
                vec![m; vcpus]
            }
        };
        if gt.threads_per_core() > 1 {
            return Err(HostError::new(
                origin,
                key("machine"),
                "guests with SMT threads are not modelled (give a machine with threads=1)",
            ));
        }
        spec.guests.push(GuestSpec {
            name: fg.name.unwrap_or_else(|| format!("vm{}", g + 1)),
            machine: fg.machine,
            affinity,
            idle: fg.idle,
        });
    }
    for (i, fn_) in f.noisy.into_iter().enumerate() {
        let key = |k: &str| format!("noisy[{i}].{k}");
        let cpus = list(&key("cpus"), &fn_.cpus)?;
        if fn_.tasks == 0 || fn_.tasks > 4096 {
            return Err(HostError::new(origin, key("tasks"), "must be 1 to 4096"));
        }
        if fn_.pinned && fn_.tasks as usize > cpus.weight() {
            return Err(HostError::new(
                origin,
                key("tasks"),
                "pinned threads need a CPU each in cpus",
            ));
        }
        if let Some(c) = fn_.start {
            if fn_.pinned {
                return Err(HostError::new(
                    origin,
                    key("start"),
                    "pinned threads start on their own CPUs",
                ));
            }
            if !cpus.test(c) {
                return Err(HostError::new(
                    origin,
                    key("start"),
                    format!("host CPU {c} is not in cpus ({cpus})"),
                ));
            }
        }
        spec.noisy.push(NoisySpec {
            tasks: fn_.tasks,
            cpus,
            pinned: fn_.pinned,
            start: fn_.start,
        });
    }
    Ok(spec)
}

impl HostSpec {
    /// The same host with `n` copies of its first guest (`--guests N`).
    pub fn with_guests(&self, n: usize) -> HostSpec {
        let mut s = self.clone();
        let first = s.guests[0].clone();
        s.guests = (0..n)
            .map(|i| GuestSpec {
                name: format!("vm{}", i + 1),
                ..first.clone()
            })
            .collect();
        s
    }

    /// The same host running host kernel profile `kernel` (`--host-kernel`).
    pub fn with_kernel(&self, kernel: &str) -> Result<HostSpec, HostError> {
        if let Err(e) = crate::placement::linux::Features::kernel(kernel) {
            return Err(HostError::new(&self.origin, "host.kernel", e.to_string()));
        }
        Ok(HostSpec {
            kernel: kernel.to_string(),
            ..self.clone()
        })
    }

    /// The description as a TOML file would give it (for `--json`'s run).
    pub fn describe(&self) -> String {
        let g: Vec<String> = self
            .guests
            .iter()
            .map(|g| {
                let aff: Vec<String> = g.affinity.iter().map(|m| m.to_string()).collect();
                format!("{}:{}[{}]", g.name, g.machine, aff.join(" "))
            })
            .collect();
        format!("{} on {} ({})", self.origin, self.machine, g.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_build_and_unknown_is_named() {
        for (p, _) in PRESETS {
            let s = preset(p).unwrap();
            assert!(!s.guests.is_empty());
            let host = topology::machine(&s.machine).unwrap().nr_cpus();
            for g in &s.guests {
                // one affinity per vCPU, each within the host
                let vcpus = topology::machine(&g.machine).unwrap().nr_cpus();
                assert_eq!(g.affinity.len(), vcpus, "{p}");
                assert!(g.affinity.iter().all(|m| m.iter().all(|c| c < host)), "{p}");
            }
        }
        // the corpus' two guests on one CCX share 4 of its 8 cores (8 of
        // its 16 threads)
        let c = preset("ccx-2vm-overlap").unwrap();
        let set = |g: &GuestSpec| {
            g.affinity
                .iter()
                .flat_map(|m| m.iter())
                .collect::<std::collections::BTreeSet<usize>>()
        };
        let (a, b) = (set(&c.guests[0]), set(&c.guests[1]));
        assert_eq!(a.intersection(&b).count(), 8);
        assert_eq!(a.union(&b).count(), 16);
        let e = preset("vm9").unwrap_err();
        assert_eq!(e.key, "preset");
        assert!(
            e.to_string().starts_with("vm9: preset: unknown preset"),
            "{e}"
        );
    }

    const HOST: &str = "[host]\nmachine = \"smp:sockets=1,cores=4,threads=1,cost=xeon-12c24t\"\n";

    #[test]
    fn file_with_pinned_and_floating_guests() {
        let t = format!(
            "{HOST}[[guest]]\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=kvm-8vcpu\"\npin = [2, 3]\n\
             [[guest]]\nname = \"b\"\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=kvm-8vcpu\"\ncpus = \"0-3\"\nidle = \"poll\"\n\
             [[noisy]]\ntasks = 2\ncpus = \"0,1\"\npinned = true\n"
        );
        let s = from_toml(&t, "f.toml").unwrap();
        assert_eq!(s.guests.len(), 2);
        assert_eq!(s.guests[0].affinity[1].iter().collect::<Vec<_>>(), vec![3]);
        assert_eq!(s.guests[1].affinity[0].weight(), 4);
        assert_eq!(s.guests[1].idle, GuestIdle::Poll);
        assert_eq!(s.halt_poll_ns, 200_000);
        assert_eq!(s.noisy[0].tasks, 2);
    }

    #[test]
    fn bad_files_name_the_field() {
        let cases = [
            (
                format!("{HOST}[[guest]]\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=kvm-8vcpu\"\npin = [0, 4]\n"),
                "guest[0].pin[1]",
            ),
            (HOST.to_string(), "guest"),
            (
                format!("{HOST}[[guest]]\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=kvm-8vcpu\"\npin = []\n"),
                "guest[0].pin",
            ),
            (
                format!("{HOST}[[guest]]\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=kvm-8vcpu\"\ncpus = \"1-9\"\n"),
                "guest[0].cpus",
            ),
            (
                format!("{HOST}[[guest]]\nmachine = \"nonesuch\"\npin = [0]\n"),
                "guest[0].machine",
            ),
            (
                "[host]\nmachine = \"nonesuch\"\n".to_string(),
                "host.machine",
            ),
            (
                format!("{HOST}bogus = 1\n[[guest]]\npin = [0]\n"),
                "host.bogus",
            ),
        ];
        for (text, key) in cases {
            let e = from_toml(&text, "f.toml").unwrap_err();
            assert_eq!(e.key, key, "{e}");
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }
}
