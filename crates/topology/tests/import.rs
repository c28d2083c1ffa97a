//! Importers against the committed fixtures, and bad input.

use std::fs;
use std::path::{Path, PathBuf};
use topology::{
    from_hwloc_xml, from_sysfs, preset, write_sysfs, DomainOptions, SchedDomains, SmtNumbering,
    Topology, TopologyBuilder, TopologyError,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn assert_same(imported: &Topology, name: &str) {
    let p = preset(name).unwrap();
    assert!(
        imported.same_structure(&p),
        "{} differs from preset {name}",
        imported.name()
    );
    // And so the same sched domains.
    let (a, b) = (
        SchedDomains::build(imported, &DomainOptions::default()),
        SchedDomains::build(&p, &DomainOptions::default()),
    );
    assert_eq!(a, b, "{name}: domains differ");
}

#[test]
fn sysfs_fixtures_equal_presets() {
    for name in ["xeon-12c24t", "kunpeng920-1s"] {
        let t = from_sysfs(&fixtures().join("sysfs").join(name)).unwrap();
        assert_same(&t, name);
        assert_eq!(t.caches(), preset(name).unwrap().caches());
    }
}

#[test]
fn hwloc_fixtures_equal_presets() {
    for name in ["xeon-12c24t", "kunpeng920"] {
        let t = from_hwloc_xml(&fixtures().join("hwloc").join(format!("{name}.xml"))).unwrap();
        assert_same(&t, name);
    }
    let k = from_hwloc_xml(&fixtures().join("hwloc/kunpeng920.xml")).unwrap();
    let l3: Vec<_> = k.caches_of(30).map(|c| c.label()).collect();
    assert_eq!(l3, ["L1d 64K", "L1i 64K", "L2 512K", "L3 24M"]);
    assert_eq!(k.node_distance(1, 3), 24);
}

/// The two genuine dumps of the machine the fixtures were taken on (a
/// 2-vCPU KVM guest on AMD EPYC) agree with each other.
#[test]
fn genuine_host_dumps_agree() {
    let s = from_sysfs(&fixtures().join("sysfs/kvm-2vcpu-epyc-host")).unwrap();
    let h = from_hwloc_xml(&fixtures().join("hwloc/kvm-2vcpu-epyc-host.xml")).unwrap();
    assert_eq!(s.nr_cpus(), 2);
    assert!(s.same_structure(&h));
    assert_eq!(s.llc_mask(0).to_string(), "0-1");
    assert_eq!(s.smt_mask(1).to_string(), "1");
    let l3 = s.caches_of(0).last().unwrap();
    assert_eq!((l3.level, l3.size_kib), (3, Some(32 * 1024)));
}

#[test]
fn this_machine_imports() {
    let t = from_sysfs(Path::new("/")).unwrap();
    assert!(t.nr_cpus() >= 1);
    let sd = SchedDomains::build(&t, &DomainOptions::default());
    for cpu in 0..t.nr_cpus() {
        for d in sd.domains(cpu) {
            assert!(d.span.test(cpu));
        }
    }
    let host = preset("host").unwrap();
    assert!(host.same_structure(&t));
}

// ---------------------------------------------------------------- bad input

/// 2 packages x 2 cores x 2 threads, x86 numbering, node per package, L3 per
/// package: small enough to write quickly.
fn tiny() -> Topology {
    TopologyBuilder::new("tiny")
        .packages(2)
        .cores_per_package(2)
        .threads_per_core(2, SmtNumbering::Interleaved)
        .cache(
            3,
            topology::CacheKind::Unified,
            Some(4096),
            topology::CacheScope::Package,
        )
        .build()
        .unwrap()
}

/// A file below sys/devices/system and its new contents (None: delete it).
type Edit<'a> = (&'a str, Option<&'a str>);
/// A rewrite of the good XML fixture.
type XmlEdit = Box<dyn Fn(String) -> String>;

/// Write the tiny tree, apply `edit` (path relative to sys/devices/system,
/// new contents or None to delete), import, and return the error.
fn sysfs_err(edits: &[Edit]) -> (TopologyError, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    write_sysfs(&tiny(), dir.path()).unwrap();
    from_sysfs(dir.path()).expect("the unedited tree imports");
    for (rel, contents) in edits {
        let p = dir.path().join("sys/devices/system").join(rel);
        match contents {
            Some(c) => fs::write(&p, c).unwrap(),
            None => fs::remove_file(&p).unwrap(),
        }
    }
    (from_sysfs(dir.path()).unwrap_err(), dir)
}

fn check(e: &TopologyError, file_suffix: &str, needle: &str) {
    let s = e.to_string();
    assert!(!s.contains('\n'), "not one line: {s}");
    assert!(s.contains(file_suffix), "{s:?} does not name {file_suffix}");
    assert!(s.contains(needle), "{s:?} does not say {needle:?}");
}

#[test]
fn sysfs_bad_input() {
    let cases: &[(&[Edit], &str, &str)] = &[
        (&[("cpu/online", None)], "cpu/online", "missing file"),
        (&[("cpu/online", Some("0-x\n"))], "cpu/online", "\"0-x\""),
        (
            &[("cpu/online", Some("\n"))],
            "cpu/online",
            "no online CPUs",
        ),
        (&[("cpu/online", Some("0-5000\n"))], "cpu/online", "5000"),
        (
            &[("cpu/online", Some("0-2,4-7\n"))],
            "cpu/online",
            "without holes",
        ),
        // Overlapping cores: cpu1 claims 1-2, cpu2 says 2,6.
        (
            &[("cpu/cpu1/topology/core_cpus_list", Some("1-2\n"))],
            "topology/core_cpus_list",
            "overlaps",
        ),
        // A CPU in two LLCs: cpu4's L3 is 0,4-5 while cpu0's is 0-1,4-5.
        (
            &[("cpu/cpu4/cache/index0/shared_cpu_list", Some("0,4-5\n"))],
            "shared_cpu_list",
            "overlaps",
        ),
        (
            &[("cpu/cpu4/cache/index0/shared_cpu_list", Some("0-1\n"))],
            "shared_cpu_list",
            "does not contain cpu4",
        ),
        (
            &[("cpu/cpu3/cache/index0/type", Some("Weird\n"))],
            "index0/type",
            "unknown cache type",
        ),
        (
            &[("cpu/cpu3/cache/index0/size", Some("big\n"))],
            "index0/size",
            "not a valid cache size",
        ),
        (
            &[("cpu/cpu3/cache/index0/level", Some("\n"))],
            "index0/level",
            "not a valid cache level",
        ),
        (
            &[
                ("cpu/cpu2/topology/core_cpus_list", None),
                ("cpu/cpu2/topology/thread_siblings_list", None),
            ],
            "cpu2/topology/core_cpus_list",
            "missing file",
        ),
        (
            &[("node/node0/distance", Some("10 20 30\n"))],
            "node0/distance",
            "not square",
        ),
        (
            &[("node/node1/distance", Some("20 12\n"))],
            "node1/distance",
            "expected 10",
        ),
        (
            &[("node/node1/distance", Some("20 ten\n"))],
            "node1/distance",
            "\"ten\"",
        ),
        (
            &[("node/node1/cpulist", Some("0,2-3,6-7\n"))],
            "node1/cpulist",
            "cpu0 is also in node0",
        ),
        (
            &[("node/node1/cpulist", Some("2-3\n"))],
            "system/node",
            "cpu6 is in no node",
        ),
        // A core whose threads sit in two packages (caught by from_places).
        (
            &[
                ("cpu/cpu0/topology/package_cpus_list", Some("0-1,5\n")),
                ("cpu/cpu1/topology/package_cpus_list", Some("0-1,5\n")),
                ("cpu/cpu5/topology/package_cpus_list", Some("0-1,5\n")),
                ("cpu/cpu4/topology/package_cpus_list", Some("2-4,6-7\n")),
                ("cpu/cpu2/topology/package_cpus_list", Some("2-4,6-7\n")),
                ("cpu/cpu3/topology/package_cpus_list", Some("2-4,6-7\n")),
                ("cpu/cpu6/topology/package_cpus_list", Some("2-4,6-7\n")),
                ("cpu/cpu7/topology/package_cpus_list", Some("2-4,6-7\n")),
            ],
            "sys/devices/system",
            "core 0 spans two packages",
        ),
    ];
    for (edits, file, needle) in cases {
        let (e, _dir) = sysfs_err(edits);
        check(&e, file, needle);
    }
    let e = from_sysfs(Path::new("/nonexistent/root")).unwrap_err();
    check(
        &e,
        "/nonexistent/root/sys/devices/system/cpu",
        "not a directory",
    );
}

#[test]
fn sysfs_more_than_max_cpus_is_rejected() {
    // Only online matters before any per-CPU file is read.
    let dir = tempfile::tempdir().unwrap();
    let cpu = dir.path().join("sys/devices/system/cpu");
    fs::create_dir_all(&cpu).unwrap();
    fs::write(cpu.join("online"), "0-4096\n").unwrap();
    check(
        &from_sysfs(dir.path()).unwrap_err(),
        "cpu/online",
        "out of range",
    );
}

fn hwloc_err(edit: impl Fn(String) -> String) -> TopologyError {
    let good = fs::read_to_string(fixtures().join("hwloc/xeon-12c24t.xml")).unwrap();
    let bad = edit(good.clone());
    assert_ne!(bad, good, "edit did nothing");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.xml");
    fs::write(&p, bad).unwrap();
    from_hwloc_xml(&p).unwrap_err()
}

#[test]
fn hwloc_bad_input() {
    check(
        &from_hwloc_xml(Path::new("/nonexistent.xml")).unwrap_err(),
        "/nonexistent.xml",
        "missing file",
    );
    let cases: Vec<(XmlEdit, &str)> = vec![
        (
            Box::new(|s: String| s[..s.len() / 2].to_string()),
            "not valid XML",
        ),
        (
            Box::new(|s: String| {
                s.replace("<topology", "<tropology")
                    .replace("</topology>", "</tropology>")
            }),
            "expected <topology>",
        ),
        (
            Box::new(|s: String| s.replace("type=\"PU\"", "type=\"Misc\"")),
            "zero CPUs",
        ),
        (
            Box::new(|s: String| {
                s.replace("type=\"PU\" os_index=\"13\"", "type=\"PU\" os_index=\"12\"")
            }),
            "appears twice",
        ),
        (
            Box::new(|s: String| {
                s.replace(
                    "type=\"PU\" os_index=\"13\"",
                    "type=\"PU\" os_index=\"5000\"",
                )
            }),
            "beyond the maximum",
        ),
        (
            Box::new(|s: String| {
                s.replace("type=\"PU\" os_index=\"13\"", "type=\"PU\" os_index=\"30\"")
            }),
            "without holes",
        ),
        (
            Box::new(|s: String| s.replace("type=\"PU\" os_index=\"13\"", "type=\"PU\"")),
            "PU without os_index",
        ),
        (
            Box::new(|s: String| {
                s.replace("type=\"PU\" os_index=\"13\"", "type=\"PU\" os_index=\"x\"")
            }),
            "is not a number",
        ),
        (
            Box::new(|s: String| s.replace(">10 20 20 10 <", ">10 20 20 <")),
            "matrix not square",
        ),
        (
            Box::new(|s: String| s.replace(">10 20 20 10 <", ">10 20 20 11 <")),
            "expected 10",
        ),
        (
            Box::new(|s: String| s.replace(">0 1 </indexes>", ">0 7 </indexes>")),
            "no entry for NUMANode os_index 1",
        ),
    ];
    for (edit, needle) in cases {
        check(&hwloc_err(edit), "bad.xml", needle);
    }
}

#[test]
fn hwloc_absurd_nesting_is_an_error_not_a_stack_overflow() {
    let n = 100_000;
    let xml = format!(
        "<topology>{}<object type=\"PU\" os_index=\"0\"/>{}</topology>",
        "<object type=\"Group\">".repeat(n),
        "</object>".repeat(n)
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("deep.xml");
    fs::write(&p, xml).unwrap();
    check(
        &from_hwloc_xml(&p).unwrap_err(),
        "deep.xml",
        "nested deeper than 128",
    );
}
