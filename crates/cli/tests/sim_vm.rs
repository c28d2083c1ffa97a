//! `schedlab sim ... --host`: workloads in the guests of a host.

mod common;
use common::{json, run, schedlab};

#[test]
fn two_guests_report_each_and_the_json_carries_steal_and_preemptions() {
    let args = [
        "sim", "spin", "-n", "8", "-w", "50", "--host", "vm2x8", "--check",
    ];
    let text = run(&args);
    assert!(text.starts_with("[vm1]\n"), "{text}");
    assert!(text.contains("\n[vm2]\n"), "{text}");
    assert!(text.contains("vm2: steal "), "{text}");
    assert_eq!(text, run(&args), "deterministic");
    let v = json(&args);
    let guests = v["vm"]["guests"].as_array().unwrap();
    assert_eq!(guests.len(), 2);
    for g in guests {
        let vcpus = g["vcpus"].as_array().unwrap();
        assert_eq!(vcpus.len(), 8);
        for c in vcpus {
            let (run, steal, halted) = (
                c["run_ns"].as_u64().unwrap(),
                c["steal_ns"].as_u64().unwrap(),
                c["halted_ns"].as_u64().unwrap(),
            );
            assert!(steal > 0 && run > 0, "{c}");
            let _ = halted;
        }
        assert!(g["vcpu_preemptions"].as_u64().unwrap() > 0);
        assert!(g.get("wakeups_on_preempted").is_some());
        assert!(g.get("wait_on_preempted_ns").is_some());
    }
    assert_eq!(v["run"]["host"], "vm2x8");
    assert!(v["vm"]["host"]["preemption_ns"]["p50"].as_u64().unwrap() > 0);
}

#[test]
fn guests_copies_the_first_guest() {
    let v = json(&[
        "sim",
        "hackbench",
        "-g",
        "1",
        "-l",
        "10",
        "--host",
        "vm1x8",
        "--guests",
        "3",
    ]);
    assert_eq!(v["vm"]["guests"].as_array().unwrap().len(), 3);
    assert_eq!(v["vm"]["guests"][2]["name"], "vm3");
}

fn fails_with(args: &[&str], line: &str) {
    let out = schedlab().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(line), "{err}");
}

#[test]
fn bad_machine_files_exit_2_naming_the_field() {
    let dir = std::env::temp_dir().join(format!("schedlab-vm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let host = "[host]\nmachine = \"smp:sockets=1,cores=4,threads=1,cost=xeon-12c24t\"\n";
    let g2 = "machine = \"smp:sockets=1,cores=2,threads=1,cost=kvm-8vcpu\"\n";
    let cases = [
        (
            format!("{host}[[guest]]\n{g2}pin = [0, 4]\n"),
            "guest[0].pin[1]: host CPU 4 is outside the host",
        ),
        (
            format!("{host}[[guest]]\n{g2}pin = []\n"),
            "guest[0].pin: a guest with no vCPUs",
        ),
        (
            format!("{host}[[guest]]\n{g2}cpus = \"2-5\"\n"),
            "guest[0].cpus: host CPU 4 is outside the host",
        ),
        (host.to_string(), "guest: no [[guest]]"),
        (
            format!("{host}[[guest]]\n{g2}pin = [0, 1]\n[[noisy]]\ntasks = 2\ncpus = \"2-3\"\nstart = 1\n"),
            "noisy[0].start: host CPU 1 is not in cpus",
        ),
        (
            format!("{host}[[guest]]\n{g2}pin = [0, 1]\n[[noisy]]\ntasks = 2\ncpus = \"2-3\"\npinned = true\nstart = 2\n"),
            "noisy[0].start: pinned threads start on their own CPUs",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let f = dir.join(format!("h{i}.toml"));
        std::fs::write(&f, text).unwrap();
        fails_with(&["sim", "hackbench", "--host", f.to_str().unwrap()], want);
    }
    fails_with(
        &["sim", "hackbench", "--host", "vm3x9"],
        "vm3x9: preset: unknown preset",
    );
    fails_with(
        &["sim", "hackbench", "--host", "vm1x8", "--guests", "0"],
        "--guests",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_timed_run_on_two_guests_combines_their_samples() {
    // both guests run to the stop time (a guest whose vCPUs wait for the
    // host is not over before it), and --check holds throughout
    let v = json(&[
        "sim",
        "schbench",
        "--version",
        "old",
        "-m",
        "2",
        "-t",
        "1",
        "-r",
        "2",
        "--host",
        "vm2x8",
        "--check",
    ]);
    let samples = |p: &str| v.pointer(p).and_then(|x| x.as_u64()).unwrap();
    let a = samples("/vm/guests/0/workload/wakeup_latency_us/samples");
    let b = samples("/vm/guests/1/workload/wakeup_latency_us/samples");
    assert!(a > 0 && b > 0, "{a} {b}");
    assert_eq!(samples("/vm/combined/wakeup_latency_us/samples"), a + b);
    assert_eq!(samples("/vm/guests/1/sim_ns"), 2_000_000_000);
}

#[test]
fn rtapp_workloads_are_refused_in_guests() {
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/rtapp/periodic.json"
    );
    let out = schedlab()
        .args(["sim", "rtapp", root, "--host", "vm1x8"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--host") && err.contains("rt-app"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn the_host_balances_and_places_floating_threads() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("h.toml");
    std::fs::write(
        &f,
        "[host]\nmachine = \"smp:sockets=1,cores=4,threads=1,cost=xeon-12c24t\"\n\
         [[guest]]\nmachine = \"smp:sockets=1,cores=2,threads=1,cost=kvm-8vcpu\"\ncpus = \"0-3\"\n\
         [[noisy]]\ntasks = 2\ncpus = \"0-3\"\nstart = 0\n",
    )
    .unwrap();
    let args = [
        "sim",
        "hackbench",
        "-g",
        "1",
        "-l",
        "100",
        "--host",
        f.to_str().unwrap(),
        "--check",
    ];
    let text = run(&args);
    assert!(
        text.contains("threads moved by its load balancer"),
        "{text}"
    );
    let v = json(&args);
    let h = &v["vm"]["host"];
    assert!(h["balance"]["moved"].as_u64().unwrap() >= 1, "{h}");
    let noisy = h["noisy_cpus"].as_array().unwrap();
    assert_ne!(noisy[0], noisy[1], "{h}");
    // the floating vCPUs were placed by the host's wake-up path
    let placed: u64 = h["wakeup_stages"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert!(placed > 0, "{h}");
    for c in v["vm"]["guests"][0]["vcpus"].as_array().unwrap() {
        assert!(c["host_cpu"].as_u64().unwrap() < 4, "{c}");
        assert!(c["host_migrations"].is_u64(), "{c}");
    }
}

/// schbench's per-CPU lock in guests: a spinner whose vCPU the host has
/// paused when the lock is released retries when the vCPU runs again, not
/// at once (which ran a guest CPU whose thread was off: `--check` failed on
/// these seeds once delayed dequeue made the interleaving common).
#[test]
fn a_spinner_on_a_paused_vcpu_retries_when_it_runs_again() {
    for seed in ["1", "3", "4", "6", "7"] {
        let text = run(&[
            "sim", "schbench", "-r", "2", "--seed", seed, "--host", "vm2x8", "--check",
        ]);
        assert!(text.contains("[vm2]"), "{text}");
    }
}
