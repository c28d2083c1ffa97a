//! Runs in mode `kernel`: a real Linux kernel booted under qemu on the
//! run's machine (crates/oracle: the topology as `-smp` and NUMA nodes, the
//! guest's initramfs, the boot that never leaves qemu behind), the workload
//! run inside it with the scheduler's trace events on, and a record with
//! the fields a simulated run of the same workload has, so that `compare`
//! can put the kernel beside the simulator.
//!
//! - `benchmark = "scenario"`: the guest runs `schedlab kernel scenario`
//!   on the guest's machine; the record is [`crate::scenario::kernel_record`]
//!   (locality of the wakee, migrations, and the agreement with the
//!   simulator's wake-up path for the same kernel profile).
//! - hackbench, schbench, tbench: the guest runs the native port with the
//!   run's parameters (`schedlab kernel guest-run SPEC`); the record is the
//!   port's, plus the trace's wake-up locality (`wake_locality_pct`, six
//!   classes; `placement.wake_locality`, the simulator's four) and its
//!   migrations (every sched_migrate_task of the run, kernel threads
//!   included).
//!
//! What to boot comes from the run or the environment:
//! `kernel_image` else `SCHEDLAB_KERNEL_IMAGE`; `guest` (a statically
//! linked schedlab) else `SCHEDLAB_GUEST_BINARY`, else this schedlab if it
//! is static. qemu is `qemu-system-x86_64` on the PATH, busybox
//! `/bin/busybox` (Debian's busybox-static). [`preflight`] checks all of
//! them before an experiment's first run, so that what is missing is one
//! line and nothing has run.
//!
//! The run's `kernel` says which kernel the variant is: `linux-X.Y` must
//! be the version the image boots (checked after the boot), and is the
//! simulator profile the agreement is computed with; `latest` (the
//! default) takes `linux-X.Y` of whatever boots.

use crate::outcome::RunError;
use crate::spec::{Mode, RunSpec, SpecError};
use crate::workload::WorkloadSpec;
use oracle::boot::{self, BootSpec};
use oracle::qemu::QemuShape;
use oracle::trace;
use oracle::OracleError;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use topology::Topology;

/// The environment variable naming the kernel image when the run does not.
pub const ENV_KERNEL_IMAGE: &str = "SCHEDLAB_KERNEL_IMAGE";
/// The environment variable naming the guest's static schedlab.
pub const ENV_GUEST_BINARY: &str = "SCHEDLAB_GUEST_BINARY";
/// The qemu binary, looked up on the PATH.
pub const QEMU: &str = "qemu-system-x86_64";
/// The static busybox the initramfs is built around.
pub const BUSYBOX: &str = "/bin/busybox";
/// qemu's CPU model (its cache leaves give an L2 per core and an L3 per die).
pub const CPU_MODEL: &str = "Skylake-Server";
/// Time for the guest to come up, as `schedlab kernel run`'s default.
pub const BOOT_TIMEOUT_S: u64 = 300;
/// Time for the whole boot and run, as `schedlab kernel run`'s default.
pub const RUN_TIMEOUT_S: u64 = 1800;

/// What a kernel run boots, found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inputs {
    /// The kernel image.
    pub kernel_image: PathBuf,
    /// The guest's static schedlab.
    pub guest: PathBuf,
    /// qemu.
    pub qemu: PathBuf,
    /// busybox.
    pub busybox: PathBuf,
}

fn oracle_spec_error(field: &str, e: OracleError) -> SpecError {
    match e {
        OracleError::Inexpressible { machine, why } => {
            SpecError::field(field, format!("qemu cannot express {machine}: {why}"))
        }
        OracleError::Arg { why, .. } => SpecError::field(field, why),
        other => SpecError::field(field, other),
    }
}

/// The qemu shape of the run's machine.
pub fn shape(spec: &RunSpec) -> Result<QemuShape, SpecError> {
    let topo = spec.topology()?;
    QemuShape::of(&topo).map_err(|e| oracle_spec_error("machine", e))
}

/// The `linux-X.Y` profile the run names (`None` for `latest`).
fn named_profile(spec: &RunSpec) -> Option<&str> {
    (spec.kernel != "latest").then_some(spec.kernel.as_str())
}

/// Check a kernel run without the environment: the machine has a qemu
/// shape, the kernel names one profile without overrides, no field only
/// the simulator reads is set, and the workload can run in the guest.
pub fn validate(spec: &RunSpec) -> Result<(), SpecError> {
    debug_assert_eq!(spec.mode, Mode::Kernel);
    if let Some(f) = spec
        .simulator_only_fields()
        .into_iter()
        .find(|f| !["machine", "kernel"].contains(f))
    {
        return Err(SpecError::field(
            f,
            "is simulator only; a kernel run boots a real kernel as it is",
        ));
    }
    if let Some(k) = named_profile(spec) {
        if k.contains('+') {
            return Err(SpecError::field(
                "kernel",
                format!(
                    "{k}: a booted kernel takes no feature overrides; name its version (linux-X.Y)"
                ),
            ));
        }
        sim::placement::linux::Features::kernel(k).map_err(|e| SpecError::field("kernel", e))?;
    }
    let guest = shape(spec)?.guest_topology();
    match &spec.workload {
        WorkloadSpec::Scenario(s) => {
            if spec.cpus.is_some() || spec.node.is_some() {
                return Err(SpecError::field(
                    if spec.cpus.is_some() { "cpus" } else { "node" },
                    "a placement scenario pins its own threads",
                ));
            }
            s.setup(&guest)?;
        }
        WorkloadSpec::Hackbench(_) | WorkloadSpec::Tbench(_) => {}
        WorkloadSpec::Schbench(s) => {
            s.native()?;
        }
        WorkloadSpec::Spin(_)
        | WorkloadSpec::Falseshare(_)
        | WorkloadSpec::Rtapp(_)
        | WorkloadSpec::Npb(_) => {
            return Err(SpecError::field(
                "benchmark",
                format!(
                    "{} cannot run in the guest (a kernel run takes scenario, hackbench, schbench or tbench)",
                    spec.workload.name()
                ),
            ))
        }
    }
    Ok(())
}

/// `name` on the PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn is_static(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| oracle::initramfs::is_static_elf(&b))
}

/// Find what a kernel run boots (the run's fields, else the environment),
/// or say in one line what is missing.
pub fn inputs(spec: &RunSpec) -> Result<Inputs, SpecError> {
    let from_env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let kernel_image = spec
        .kernel_image
        .clone()
        .or_else(|| from_env(ENV_KERNEL_IMAGE))
        .ok_or_else(|| {
            SpecError::field(
                "kernel_image",
                format!("missing: a kernel run needs a kernel image to boot; set kernel_image in the experiment or {ENV_KERNEL_IMAGE} (e.g. a Debian cloud kernel's vmlinuz: scripts/kernel-oracle.sh --install)"),
            )
        })?;
    if !kernel_image.is_file() {
        return Err(SpecError::field(
            "kernel_image",
            format!("{}: not a regular file", kernel_image.display()),
        ));
    }
    let guest = match spec
        .guest
        .clone()
        .or_else(|| from_env(ENV_GUEST_BINARY))
    {
        Some(g) => {
            if !g.is_file() {
                return Err(SpecError::field(
                    "guest",
                    format!("{}: not a regular file", g.display()),
                ));
            }
            if !is_static(&g) {
                return Err(SpecError::field(
                    "guest",
                    format!("{}: not a statically linked executable (RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --target x86_64-unknown-linux-gnu -p schedlab)", g.display()),
                ));
            }
            g
        }
        None => std::env::current_exe()
            .ok()
            .filter(|me| is_static(me))
            .ok_or_else(|| {
                SpecError::field(
                    "guest",
                    format!("missing: a kernel run needs a statically linked schedlab for the guest and this one is not; set guest in the experiment or {ENV_GUEST_BINARY} (RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --target x86_64-unknown-linux-gnu -p schedlab)"),
                )
            })?,
    };
    let qemu = on_path(QEMU).ok_or_else(|| {
        SpecError::field(
            "mode",
            format!("kernel: {QEMU} is not on the PATH (apt-get install qemu-system-x86)"),
        )
    })?;
    let busybox = PathBuf::from(BUSYBOX);
    if !is_static(&busybox) {
        return Err(SpecError::field(
            "mode",
            format!("kernel: {BUSYBOX} is missing or not statically linked (apt-get install busybox-static)"),
        ));
    }
    Ok(Inputs {
        kernel_image,
        guest,
        qemu,
        busybox,
    })
}

/// Check, before anything runs, that a kernel run can boot.
pub fn preflight(spec: &RunSpec) -> Result<(), RunError> {
    validate(spec)?;
    inputs(spec)?;
    Ok(())
}

/// The native run the guest does for a benchmark: the workload and its
/// CPU restriction, nothing of the simulator's or the kernel run's.
fn guest_spec(spec: &RunSpec) -> RunSpec {
    RunSpec {
        mode: Mode::Native,
        cpus: spec.cpus.clone(),
        node: spec.node,
        seed: spec.seed,
        ..RunSpec::new(spec.workload.clone())
    }
}

/// The command line the guest runs.
fn guest_args(spec: &RunSpec, guest_machine: &str) -> Vec<String> {
    match &spec.workload {
        WorkloadSpec::Scenario(s) => vec![
            "kernel".into(),
            "scenario".into(),
            "--machine".into(),
            guest_machine.into(),
            "--rounds".into(),
            s.rounds.to_string(),
            s.scenario.clone(),
        ],
        _ => vec![
            "kernel".into(),
            "guest-run".into(),
            serde_json::to_string(&guest_spec(spec)).expect("plain data serialises"),
        ],
    }
}

fn report_err(why: impl Into<String>) -> RunError {
    OracleError::Report(why.into()).into()
}

/// Boot the run's kernel, run its workload inside, and return the record.
pub fn run(spec: &RunSpec) -> Result<Value, RunError> {
    validate(spec)?;
    let inp = inputs(spec)?;
    let shape = shape(spec)?;
    let guest = shape.guest_topology();
    let args = guest_args(spec, &shape.guest_spec);
    let trace_kb = oracle::qemu::trace_kb(shape.nr_cpus());
    let initrd = oracle::initramfs::build(&inp.busybox, &inp.guest, &args, trace_kb)?;
    let boot_spec = BootSpec {
        qemu: inp.qemu.clone(),
        kernel: inp.kernel_image.clone(),
        machine_args: shape.args(),
        cpu_model: CPU_MODEL.into(),
        kvm: spec.kvm,
        boot_timeout: Duration::from_secs(BOOT_TIMEOUT_S),
        run_timeout: Duration::from_secs(RUN_TIMEOUT_S),
    };
    let out = boot::boot(&boot_spec, &initrd)?;
    let r = &out.reports;
    let uname = r.require("uname")?.trim().to_string();
    match r.status {
        Some(0) => {}
        Some(n) => {
            return Err(report_err(format!(
                "the command in the guest failed (exit status {n}): {}",
                r.section("stderr").lines().next().unwrap_or("(no message)")
            )))
        }
        None => return Err(report_err("no exit status")),
    }
    let ver = oracle::domains_dump::kernel_version(&uname)
        .ok_or_else(|| report_err(format!("cannot read the kernel version from {uname:?}")))?;
    let booted = format!("linux-{}.{}", ver.0, ver.1);
    let sim_kernel = match named_profile(spec) {
        Some(k) if k != booted => {
            return Err(SpecError::field(
                "kernel",
                format!(
                    "the run is {k}, but {} booted {uname}",
                    inp.kernel_image.display()
                ),
            )
            .into())
        }
        Some(k) => k.to_string(),
        None => booted,
    };
    let domain_differences = domain_differences(&guest, ver, r);
    let tr = trace::analyse(r.section("trace"));
    let mut rec = match &spec.workload {
        WorkloadSpec::Scenario(sc) => {
            let setup = sc.setup(&guest)?;
            let rounds = oracle::runner::parse_output(r.section("output"))
                .into_iter()
                .find(|(n, _)| *n == sc.scenario)
                .map(|(_, rounds)| rounds)
                .ok_or_else(|| report_err(format!("no rounds for scenario {}", sc.scenario)))?;
            let f = sim::placement::linux::Features::kernel(&sim_kernel)
                .map_err(|e| SpecError::field("kernel", e))?;
            let d = oracle::probe::decide_with(&guest, &setup, f);
            crate::scenario::kernel_record(&guest, &setup, &rounds, d, &sim_kernel)
        }
        _ => {
            let mut v: Value = serde_json::from_str(r.section("output").trim()).map_err(|e| {
                report_err(format!("the guest's benchmark record is not JSON: {e}"))
            })?;
            bench_locality(&guest, &tr, &mut v);
            v["migrations"] = tr.migrations.into();
            v
        }
    };
    rec["mode"] = "kernel".into();
    rec["booted"] = json!({
        "kernel": uname,
        "image": inp.kernel_image.display().to_string(),
        "guest_machine": shape.guest_spec,
        "accel": if spec.kvm { "kvm" } else { "tcg" },
        "domain_differences": domain_differences,
    });
    rec["trace"] = json!({
        "wakeups": tr.wakeups.len(),
        "migrations": tr.migrations,
        "wakeup_migrations": tr.wakeup_migrations,
        "switches": tr.switches,
    });
    Ok(rec)
}

/// The guest's domains against the model's for the booted version: the
/// number of differing lines (`None` when the dump cannot be read).
fn domain_differences(
    guest: &Topology,
    ver: (u32, u32),
    r: &oracle::guest::Reports,
) -> Option<usize> {
    let kernel = oracle::domains_dump::parse(r.section("domains"), r.section("dmesg")).ok()?;
    let ours = oracle::domains_dump::model_lines(guest, ver);
    Some(oracle::domains_dump::differences(&kernel, &ours).len())
}

/// The trace's task wake-ups by locality: six classes as shares, and the
/// simulator's four buckets as counts (`placement.wake_locality`).
fn bench_locality(guest: &Topology, tr: &trace::TraceSummary, v: &mut Value) {
    let c = trace::locality_counts(guest, &tr.wakeups, false);
    v["wake_locality_pct"] = crate::scenario::shares(&c);
    if !v["placement"].is_object() {
        v["placement"] = json!({});
    }
    v["placement"]["wake_locality"] = crate::scenario::sim_buckets(&c);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::ScenarioSpec;

    fn scenario(name: &str) -> RunSpec {
        RunSpec {
            mode: Mode::Kernel,
            machine: "xeon-12c24t".into(),
            kernel: "linux-6.1".into(),
            ..RunSpec::new(WorkloadSpec::Scenario(ScenarioSpec {
                scenario: name.into(),
                rounds: 3,
            }))
        }
    }

    #[test]
    fn kernel_runs_are_checked_without_booting() {
        assert!(validate(&scenario("idle-core")).is_ok());
        // altra: a one-core LLC inside a two-core cluster
        let e = validate(&RunSpec {
            machine: "altra".into(),
            ..scenario("idle-core")
        })
        .unwrap_err();
        assert_eq!(e.field, "machine");
        assert!(e.message.starts_with("qemu cannot express"), "{e}");
        let e = validate(&RunSpec {
            kernel: "linux-6.1+sis_util=off".into(),
            ..scenario("idle-core")
        })
        .unwrap_err();
        assert!(e.message.contains("no feature overrides"), "{e}");
        let e = validate(&RunSpec {
            costs: false,
            ..scenario("idle-core")
        })
        .unwrap_err();
        assert_eq!(e.field, "costs");
        let e = validate(&scenario("nope")).unwrap_err();
        assert!(e.message.contains("unknown scenario"), "{e}");
        let e = validate(&RunSpec {
            workload: WorkloadSpec::Spin(Default::default()),
            ..scenario("idle-core")
        })
        .unwrap_err();
        assert!(e.message.contains("cannot run in the guest"), "{e}");
    }

    #[test]
    fn the_guest_runs_the_scenario_on_the_guests_machine() {
        let s = scenario("fork");
        let sh = shape(&s).unwrap();
        let a = guest_args(&s, &sh.guest_spec);
        assert_eq!(&a[..3], ["kernel", "scenario", "--machine"]);
        assert!(a[3].starts_with("smp:sockets=2"), "{a:?}");
        assert_eq!(&a[4..], ["--rounds", "3", "fork"]);
        // a benchmark: the native run's spec, without the kernel run's fields
        let b = RunSpec {
            workload: WorkloadSpec::Hackbench(Default::default()),
            kernel_image: Some("/k".into()),
            ..scenario("fork")
        };
        let a = guest_args(&b, &sh.guest_spec);
        let g: RunSpec = serde_json::from_str(&a[2]).unwrap();
        assert_eq!(g.mode, Mode::Native);
        assert!(g.validate().is_ok(), "{g:?}");
    }

    #[test]
    fn a_missing_kernel_image_is_named() {
        if std::env::var_os(ENV_KERNEL_IMAGE).is_some() {
            eprintln!("skipped: {ENV_KERNEL_IMAGE} is set");
            return;
        }
        let e = inputs(&scenario("fork")).unwrap_err();
        assert_eq!(e.field, "kernel_image");
        assert!(e.message.contains(ENV_KERNEL_IMAGE), "{e}");
        let e = inputs(&RunSpec {
            kernel_image: Some("/nonexistent/vmlinuz".into()),
            ..scenario("fork")
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "kernel_image: /nonexistent/vmlinuz: not a regular file"
        );
    }
}
