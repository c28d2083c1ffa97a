//! `schedlab kernel ...`: the scenario list, the guest-side runner on this
//! host, the host-side trace and domain readers, and `kernel run`'s error
//! paths, which must end in one line, exit status 2 and no qemu left
//! running. The tests that need qemu, a static busybox or a kernel image
//! are ignored where the build did not find those (build.rs), the reason
//! naming what they need, and fail saying what is missing when asked for
//! anyway (`--ignored`): .ci/run
//! installs qemu and busybox-static, downloads a Debian cloud kernel and
//! sets SCHEDLAB_TEST_KERNEL and SCHEDLAB_TEST_GUEST (a static schedlab);
//! scripts/kernel-oracle.sh runs the full set.

mod common;
use common::{fails, run, schedlab};
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../oracle/fixtures")
        .join(rel)
}

fn have_qemu() -> bool {
    std::process::Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A static executable to stand in for busybox and the guest binary in
/// boots that never reach userspace.
fn static_binary() -> Option<PathBuf> {
    let p = PathBuf::from("/bin/busybox");
    let b = std::fs::read(&p).ok()?;
    oracle_static(&b).then_some(p)
}

fn oracle_static(elf: &[u8]) -> bool {
    // the same test as oracle::initramfs::is_static_elf: no PT_INTERP
    if elf.len() < 64 || &elf[..4] != b"\x7fELF" {
        return false;
    }
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let (phoff, sz, n) = (u64_at(32), u16_at(54), u16_at(56));
    (0..n).all(|i| {
        let o = phoff + i * sz;
        u32::from_le_bytes(elf[o..o + 4].try_into().unwrap()) != 3
    })
}

/// No process whose command line mentions `needle` is alive.
fn no_process_mentions(needle: &str) {
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        assert!(!cmd.contains(needle), "still running: {cmd}");
    }
}

/// A multiboot image (the Multiboot 0.6.96 header with load addresses, so
/// qemu's -kernel loads it raw) whose code halts forever: a kernel that
/// boots but never comes up.
fn hanging_kernel(dir: &Path) -> PathBuf {
    let magic: u32 = 0x1BAD_B002;
    let flags: u32 = 1 << 16;
    let base: u32 = 0x0010_0000;
    let mut img = Vec::new();
    for w in [
        magic,
        flags,
        0u32.wrapping_sub(magic.wrapping_add(flags)),
        base,      // header_addr
        base,      // load_addr
        0,         // load_end_addr: the whole file
        0,         // bss_end_addr
        base + 32, // entry_addr
    ] {
        img.extend_from_slice(&w.to_le_bytes());
    }
    img.extend_from_slice(&[0xFA, 0xF4, 0xEB, 0xFD]); // cli; hlt; jmp hlt
    let p = dir.join("hang-kernel.bin");
    std::fs::write(&p, img).unwrap();
    p
}

#[test]
fn scenarios_are_listed() {
    let out = run(&["kernel", "scenarios"]);
    for n in [
        "target-idle",
        "prev-idle",
        "recent-used",
        "idle-core",
        "idle-cpu-llc",
        "wake-affine-sync",
        "wake-affine-prev",
        "wake-wide",
        "fork",
    ] {
        assert!(out.lines().any(|l| l.starts_with(n)), "{n}: {out}");
    }
}

#[test]
fn scenario_runs_natively_here() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        eprintln!("skipped: needs 2 CPUs, this host has {cpus}");
        return;
    }
    let out = run(&[
        "kernel",
        "scenario",
        "target-idle",
        "--machine",
        "smp:cores=2",
        "--rounds",
        "3",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "scenario target-idle");
    assert_eq!(lines.len(), 4, "{out}");
    for l in &lines[1..] {
        assert!(
            l.starts_with("round ") && l.contains(" waker 0 prev 1 chosen "),
            "{l}"
        );
    }
}

#[test]
fn bad_scenarios_and_machines_are_one_line() {
    let e = fails(&["kernel", "scenario", "nope"]);
    assert!(e.contains("scenario \"nope\" is unknown"), "{e}");
    let e = fails(&["kernel", "scenario", "idle-core", "--machine", "kvm-8vcpu"]);
    assert!(e.contains("needs SMT"), "{e}");
    // altra: a 1-core LLC inside a 2-core cluster
    let e = fails(&[
        "kernel",
        "run",
        "--machine",
        "altra",
        "--kernel-image",
        "/nonexistent",
        "--",
        "scenario",
        "fork",
    ]);
    assert!(e.contains("qemu cannot express this topology"), "{e}");
    let e = fails(&[
        "kernel",
        "run",
        "--machine",
        "kvm-8vcpu",
        "--kernel-image",
        "/nonexistent",
        "--",
        "scenario",
        "fork",
    ]);
    assert!(e.contains("--kernel-image /nonexistent"), "{e}");
    let e = fails(&[
        "kernel",
        "run",
        "--machine",
        "kvm-8vcpu",
        "--kernel-image",
        "/nonexistent",
        "--",
        "ls",
    ]);
    assert!(e.contains("scenario NAME"), "{e}");
}

#[test]
fn a_dynamic_guest_binary_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("k");
    std::fs::write(&img, b"x").unwrap();
    let me = assert_cmd::cargo::cargo_bin("schedlab");
    if oracle_static(&std::fs::read(&me).unwrap()) {
        eprintln!("skipped: the schedlab under test is static");
        return;
    }
    let e = fails(&[
        "kernel",
        "run",
        "--machine",
        "kvm-8vcpu",
        "--kernel-image",
        img.to_str().unwrap(),
        "--",
        "scenario",
        "target-idle",
    ]);
    assert!(e.contains("not a statically linked executable"), "{e}");
}

#[test]
#[cfg_attr(
    not(has_busybox),
    ignore = "needs a static /bin/busybox (apt-get install busybox-static; .ci/run installs it), absent when this test was built"
)]
fn missing_qemu_is_one_line() {
    let bb = static_binary()
        .expect("this test needs a static /bin/busybox (apt-get install busybox-static)");
    let dir = tempfile::tempdir().unwrap();
    let img = hanging_kernel(dir.path());
    let bb = bb.to_str().unwrap();
    let e = fails(&[
        "kernel",
        "run",
        "--machine",
        "kvm-8vcpu",
        "--kernel-image",
        img.to_str().unwrap(),
        "--qemu",
        "/nonexistent/qemu",
        "--busybox",
        bb,
        "--guest-binary",
        bb,
        "--",
        "scenario",
        "target-idle",
    ]);
    assert!(e.contains("--qemu /nonexistent/qemu: cannot start"), "{e}");
}

/// qemu's own refusals, a kernel that is not one, and a kernel that never
/// comes up: one line each, and no qemu left behind.
#[test]
#[cfg_attr(
    not(all(has_qemu, has_busybox)),
    ignore = "needs qemu-system-x86_64 and a static /bin/busybox (apt-get install qemu-system-x86 busybox-static; .ci/run installs them), absent when this test was built"
)]
fn guests_that_fail_are_killed() {
    assert!(
        have_qemu(),
        "this test needs qemu-system-x86_64 (apt-get install qemu-system-x86)"
    );
    let bb = static_binary()
        .expect("this test needs a static /bin/busybox (apt-get install busybox-static)");
    let bb = bb.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hang = hanging_kernel(dir.path());
    let garbage = dir.path().join("garbage-kernel");
    std::fs::write(&garbage, vec![0x5au8; 4096]).unwrap();
    let base = |m: &str, k: &Path| -> Vec<String> {
        [
            "kernel",
            "run",
            "--machine",
            m,
            "--kernel-image",
            k.to_str().unwrap(),
            "--busybox",
            bb,
            "--guest-binary",
            bb,
            "--boot-timeout",
            "3",
            "--timeout",
            "20",
            "--",
            "scenario",
            "target-idle",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    // clusters: qemu 7.2 refuses them on x86
    let a = base("jacobsville", &hang);
    let e = fails(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(e.contains("qemu refused") && e.contains("clusters"), "{e}");
    // not a kernel
    let a = base("kvm-8vcpu", &garbage);
    let e = fails(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(e.contains("qemu refused"), "{e}");
    // a kernel that hangs: the boot time limit, then the kill
    let a = base("kvm-8vcpu", &hang);
    let e = fails(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(e.contains("did not come up within 3 s"), "{e}");
    no_process_mentions(dir.path().to_str().unwrap());
}

#[test]
fn trace_file_locality() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("trace.txt");
    std::fs::write(
        &f,
        "   a-1 [000] d..2. 1.000001: sched_waking: comm=b pid=2 prio=120 target_cpu=003\n\
            a-1 [000] d..2. 1.000002: sched_wakeup: comm=b pid=2 prio=120 target_cpu=001\n\
            a-1 [000] d..2. 1.000003: sched_waking: comm=c pid=3 prio=120 target_cpu=005\n\
            a-1 [000] d..2. 1.000004: sched_wakeup: comm=c pid=3 prio=120 target_cpu=005\n",
    )
    .unwrap();
    let out = run(&[
        "kernel",
        "trace",
        f.to_str().unwrap(),
        "--machine",
        "smp:sockets=2,cores=2,threads=2,nodes=2",
    ]);
    assert!(
        out.starts_with("Trace: 2 wake-ups (0 of new tasks), 0 migrations"),
        "{out}"
    );
    assert!(
        out.contains("same_core 1 (50.0%)") && out.contains("other_node 1 (50.0%)"),
        "{out}"
    );
    let e = fails(&["kernel", "trace", "/nonexistent", "--machine", "kvm-8vcpu"]);
    assert!(e.contains("trace /nonexistent"), "{e}");
}

/// The domains real guests built (captured by `kernel run --save-dir`)
/// against `topology show` for the same machine: see
/// crates/oracle/fixtures/README.md.
#[test]
fn saved_guest_domains_match() {
    let root = fixture("guest-domains");
    let mut n = 0;
    for kernel in std::fs::read_dir(&root).unwrap().flatten() {
        if !kernel.path().is_dir() {
            continue;
        }
        for m in std::fs::read_dir(kernel.path()).unwrap().flatten() {
            let machine = m.file_name().to_string_lossy().to_string();
            let out = run(&[
                "kernel",
                "domains",
                "--machine",
                &machine,
                "--dump",
                m.path().to_str().unwrap(),
            ]);
            assert!(out.contains("all equal"), "{machine}: {out}");
            n += 1;
        }
    }
    assert!(n >= 6, "three presets on two kernels, found {n}");
}

/// The kernel image and static guest binary of the real-kernel tests
/// (SCHEDLAB_TEST_KERNEL, SCHEDLAB_TEST_GUEST), with qemu there to boot
/// them; a test asked to run without them fails saying what is missing.
fn real_kernel() -> (String, String) {
    let (Ok(k), Ok(g)) = (
        std::env::var("SCHEDLAB_TEST_KERNEL"),
        std::env::var("SCHEDLAB_TEST_GUEST"),
    ) else {
        panic!("this test needs SCHEDLAB_TEST_KERNEL (a vmlinuz) and SCHEDLAB_TEST_GUEST (a static schedlab); .ci/run sets both");
    };
    assert!(
        have_qemu(),
        "this test needs qemu-system-x86_64 (apt-get install qemu-system-x86)"
    );
    (k, g)
}

/// The tests that boot the real kernel, one at a time: each checks that no
/// qemu of its kernel is left, and two TCG guests at once would only be slower.
static REAL_KERNEL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The whole path on a real kernel, when one is provided.
#[test]
#[cfg_attr(
    not(all(has_qemu, has_busybox, has_test_kernel)),
    ignore = "needs qemu-system-x86_64, a static busybox, a kernel image in SCHEDLAB_TEST_KERNEL and a static schedlab in SCHEDLAB_TEST_GUEST (.ci/run downloads and sets them), absent when this test was built"
)]
fn real_kernel_scenarios() {
    let _one = REAL_KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let (k, g) = real_kernel();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let out = schedlab()
        .args([
            "kernel",
            "run",
            "--machine",
            "smp:sockets=2,cores=3,threads=2,nodes=2",
            "--kernel-image",
            &k,
            "--guest-binary",
            &g,
            "--rounds",
            "3",
            "--json",
            j.to_str().unwrap(),
            "--",
            "scenario",
            "target-idle",
            "idle-core",
            "wake-affine-prev",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("all equal"), "{text}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    assert_eq!(v["domain_differences"], 0);
    let rows = v["agreement"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        assert_eq!(r["rounds"], 3, "{r}");
    }
    no_process_mentions(&k);
}

/// `compare builtin:kernel-agreement` without a kernel image: one line
/// naming what is missing, exit status 2, before anything runs (no log).
#[test]
fn kernel_agreement_without_a_kernel_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("k.runs.jsonl");
    let out = schedlab()
        .env_remove("SCHEDLAB_KERNEL_IMAGE")
        .args([
            "compare",
            "builtin:kernel-agreement",
            "--quick",
            // one guest at a time: two TCG guests sharing a 2-CPU machine
            // have stalled in early boot (a 6.1 guest stopped after 1.6 s
            // of its boot and never came up within the 300 s limit)
            "--jobs",
            "1",
            "--log",
            log.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("variant \"kernel-6.1\": kernel_image: missing")
            && err.contains("SCHEDLAB_KERNEL_IMAGE"),
        "{err}"
    );
    assert!(!log.exists(), "nothing runs, nothing is logged");
    // an image that is not there is named too
    let out = schedlab()
        .env("SCHEDLAB_KERNEL_IMAGE", "/nonexistent/vmlinuz")
        .args([
            "compare",
            "builtin:kernel-agreement",
            "--quick",
            "--log",
            log.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("kernel_image: /nonexistent/vmlinuz: not a regular file"),
        "{err}"
    );
}

/// `compare builtin:kernel-agreement --quick` on a real 6.1 kernel: the
/// simulator and the kernel side by side, the agreement for the kernel.
#[test]
#[cfg_attr(
    not(all(has_qemu, has_busybox, has_test_kernel)),
    ignore = "needs qemu-system-x86_64, a static busybox, a kernel image in SCHEDLAB_TEST_KERNEL and a static schedlab in SCHEDLAB_TEST_GUEST (.ci/run downloads and sets them), absent when this test was built"
)]
fn kernel_agreement_quick_on_a_real_kernel() {
    let (k, g) = real_kernel();
    let _one = REAL_KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    let out = schedlab()
        .env("SCHEDLAB_KERNEL_IMAGE", &k)
        .env("SCHEDLAB_GUEST_BINARY", &g)
        .args([
            "compare",
            "builtin:kernel-agreement",
            "--quick",
            "--log",
            dir.path().join("k.runs.jsonl").to_str().unwrap(),
            "--json",
            j.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("kernel: the run is linux-6.1, but") {
        eprintln!("skipped: the test kernel is not a 6.1 kernel ({err})");
        return;
    }
    assert!(out.status.success(), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    // the table's header splits a variant's name at its first '-'
    assert!(
        text.contains("linux-6.1") && text.contains("same-cpu-idle-core"),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    let v = &v["report"];
    let variants: Vec<&str> = v["spec"]["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(variants, ["sim-linux-6.1", "kernel-6.1"]);
    let metric = |name: &str| {
        v["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"]["name"] == name)
            .unwrap_or_else(|| panic!("no metric {name}"))
            .clone()
    };
    // the agreement exists for the kernel only, as a share
    for p in metric("same-cpu")["points"].as_array().unwrap() {
        let cells = p["cells"].as_array().unwrap();
        assert!(cells[0]["values"].as_array().unwrap().is_empty(), "{p}");
        let kv = cells[1]["values"].as_array().unwrap();
        assert_eq!(kv.len(), 1, "{p}");
        let x = kv[0].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&x), "{p}");
    }
    // every side's locality classes sum to 100 %
    for (vi, side) in ["sim", "kernel"].iter().enumerate() {
        for pi in 0..2 {
            let total: f64 = [
                "wake-same-cpu",
                "wake-same-core",
                "wake-same-cluster",
                "wake-same-llc",
                "wake-other-llc",
                "wake-other-node",
            ]
            .iter()
            .map(|m| {
                metric(m)["points"][pi]["cells"][vi]["values"][0]
                    .as_f64()
                    .unwrap()
            })
            .sum();
            assert!((total - 100.0).abs() < 1e-6, "{side} point {pi}: {total}");
        }
    }
    no_process_mentions(&k);
}
