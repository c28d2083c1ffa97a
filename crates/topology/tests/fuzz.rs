//! Byte fuzzing of the readers of outside input, on the stable toolchain:
//! proptest mutates real inputs (the fixtures) and generates fresh ones,
//! and every reader must return `Ok` or an error of one line, never panic.
//!
//! Targets: `CpuMask::parse_list`, `from_smp` (mutated `smp:` specs),
//! `from_hwloc_xml` (the bytes go to a temporary file) and `from_sysfs` (a
//! tree whose files are mutated, replaced or removed).
//!
//! The suite runs a few cases of each; `SCHEDLAB_FUZZ_CASES=N` runs N cases
//! of each target instead, e.g. for a long run:
//! `SCHEDLAB_FUZZ_CASES=200000 cargo test -p topology --test fuzz --release -- --nocapture`.
//! A failing input is shrunk and its seed kept in
//! `fuzz.proptest-regressions` beside this file, so every later run tries
//! it first.
//!
//! Found and fixed: an hwloc file with an XML syntax error gave a two-line
//! error, because roxmltree's message shows the unexpected character as it
//! is (a newline included); `hwloc_syntax_error_is_one_line` keeps it.

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use topology::{CpuMask, Topology, TopologyError};

/// The cases per target: `SCHEDLAB_FUZZ_CASES`, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("SCHEDLAB_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn config(default: u32) -> Config {
    Config {
        cases: cases(default),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        // Only the input matters, not how often a strategy rejected one.
        max_global_rejects: u32::MAX,
        ..Config::default()
    }
}

/// The property: a reader returns `Ok`, or an error that prints as one
/// non-empty line (the CLI prints it as it is).
fn one_line<T>(r: &Result<T, TopologyError>) -> Result<(), TestCaseError> {
    if let Err(e) = r {
        let msg = e.to_string();
        prop_assert!(!msg.trim().is_empty(), "empty error: {e:?}");
        prop_assert!(
            !msg.contains('\n') && !msg.contains('\r'),
            "error of more than one line: {msg:?}"
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// A byte mutator: edits drawn by proptest, applied to a seed input.

#[derive(Clone, Debug)]
enum Edit {
    /// Flip one bit.
    Flip(usize, u8),
    /// Overwrite one byte.
    Set(usize, u8),
    /// Insert bytes (a dictionary token or random bytes).
    Insert(usize, Vec<u8>),
    /// Remove up to `len` bytes.
    Remove(usize, usize),
    /// Copy up to `len` bytes from one place to another.
    Copy(usize, usize, usize),
    /// Cut the input here.
    Truncate(usize),
}

fn edit(dict: &'static [&'static str]) -> impl Strategy<Value = Edit> {
    let token = prop_oneof![
        3 => prop::sample::select(dict).prop_map(|t| t.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>(), 1..8),
    ];
    prop_oneof![
        2 => (any::<usize>(), 0u8..8).prop_map(|(p, b)| Edit::Flip(p, b)),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Edit::Set(p, b)),
        4 => (any::<usize>(), token).prop_map(|(p, t)| Edit::Insert(p, t)),
        2 => (any::<usize>(), 1usize..64).prop_map(|(p, n)| Edit::Remove(p, n)),
        1 => (any::<usize>(), 1usize..256, any::<usize>()).prop_map(|(a, n, b)| Edit::Copy(a, n, b)),
        1 => any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn edits(dict: &'static [&'static str], max: usize) -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(edit(dict), 1..max)
}

fn mutate(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for e in edits {
        let at = |p: usize, v: &Vec<u8>| p % (v.len() + 1);
        match e {
            Edit::Flip(p, b) if !v.is_empty() => {
                let i = p % v.len();
                v[i] ^= 1 << b;
            }
            Edit::Set(p, b) if !v.is_empty() => {
                let i = p % v.len();
                v[i] = *b;
            }
            Edit::Insert(p, t) => {
                let i = at(*p, &v);
                v.splice(i..i, t.iter().copied());
            }
            Edit::Remove(p, n) => {
                let i = at(*p, &v);
                let j = (i + n).min(v.len());
                v.drain(i..j);
            }
            Edit::Copy(a, n, b) if !v.is_empty() => {
                let i = a % v.len();
                let piece = v[i..(i + n).min(v.len())].to_vec();
                let j = at(*b, &v);
                v.splice(j..j, piece);
            }
            Edit::Truncate(p) => {
                let i = at(*p, &v);
                v.truncate(i);
            }
            _ => {}
        }
    }
    v
}

// ---------------------------------------------------------------------------
// CPU lists

/// Pieces of CPU lists, sysfs values and numbers at the edges.
const LIST_DICT: &[&str] = &[
    "0",
    "1",
    "7",
    "0-1",
    "0-3",
    "2-5",
    "0-7:2",
    "1-9:3",
    ",",
    "-",
    ":",
    " ",
    "\n",
    "\t",
    "4095",
    "4096",
    "4094-4095",
    "0-4095",
    "0-4095:4095",
    "65536",
    "18446744073709551615",
    "99999999999999999999999",
    "-1",
    "3-1",
    "0x1",
    "+1",
    "１",
    "é",
    "\0",
    ":0",
    "0-",
    "-0",
];

fn fresh_list() -> impl Strategy<Value = String> {
    prop_oneof![
        // well-formed-ish lists
        "[0-9]{1,5}((-[0-9]{1,5})?(:[0-9]{1,4})?)(,[0-9]{1,5}(-[0-9]{1,5})?(:[0-9]{1,4})?){0,6}",
        // any mix of the list alphabet
        "[0-9,: \\-\n\t]{0,40}",
        // any string
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn cpu_list_parse_never_panics(
        s in prop_oneof![
            fresh_list(),
            (fresh_list(), edits(LIST_DICT, 6)).prop_map(|(s, e)| {
                String::from_utf8_lossy(&mutate(s.as_bytes(), &e)).into_owned()
            }),
        ]
    ) {
        let r = CpuMask::parse_list(&s);
        one_line(&r)?;
        if let Ok(m) = r {
            // what a mask prints parses back to the same mask
            let back = CpuMask::parse_list(&m.to_string());
            prop_assert_eq!(back.as_ref().ok(), Some(&m), "{:?} printed {}", s, m);
        }
    }
}

// ---------------------------------------------------------------------------
// smp: machine specs

const SMP_SEEDS: &[&str] = &[
    "smp:sockets=4,dies=2,cores=32,threads=2,nodes=8",
    "smp:8",
    "smp:cpus=16,sockets=2,threads=2,numbering=interleaved",
    "smp:sockets=2,dies=2,clusters=6,cores=4,nodes=4,l2=cluster,llc=die,distance=local:10,die:11,socket:12,remote:32,cost=kunpeng920",
    "smp:sockets=2,nodes=2,slit=10:20/20:10",
];

const SMP_DICT: &[&str] = &[
    "smp:",
    ",",
    "=",
    ":",
    "/",
    "cpus",
    "sockets",
    "dies",
    "clusters",
    "cores",
    "threads",
    "nodes",
    "numbering",
    "l2",
    "llc",
    "distance",
    "slit",
    "cost",
    "local",
    "die",
    "socket",
    "remote",
    "core",
    "cluster",
    "contiguous",
    "interleaved",
    "0",
    "1",
    "2",
    "3",
    "8",
    "10",
    "64",
    "255",
    "1024",
    "4096",
    "4097",
    "99999999999999999999",
    "-1",
    " ",
    "é",
];

proptest! {
    #![proptest_config(config(500))]

    #[test]
    fn smp_spec_never_panics(
        s in (prop::sample::select(SMP_SEEDS), edits(SMP_DICT, 6)).prop_map(|(seed, e)| {
            String::from_utf8_lossy(&mutate(seed.as_bytes(), &e)).into_owned()
        })
    ) {
        let r = topology::from_smp(&s);
        one_line(&r)?;
        if let Ok(t) = r {
            if t.nr_cpus() <= 256 {
                topology::SchedDomains::build(&t, &topology::DomainOptions::default());
            }
        }
    }
}

// ---------------------------------------------------------------------------
// hwloc XML

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// hwloc XML the mutations start from: the genuine 2-vCPU guest and the
/// Xeon's synthetic export (the Kunpeng one is large and adds little).
fn hwloc_seeds() -> &'static [Vec<u8>] {
    static SEEDS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(|| {
        ["hwloc/kvm-2vcpu-epyc-host.xml", "hwloc/xeon-12c24t.xml"]
            .iter()
            .map(|f| std::fs::read(fixture(f)).expect("fixture"))
            .collect()
    })
}

/// Pieces of hwloc XML: elements, attributes and values at the edges.
const XML_DICT: &[&str] = &[
    "<object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\"/>",
    "<object type=\"Core\" os_index=\"1\" cpuset=\"0x00000003\">",
    "<object type=\"NUMANode\" os_index=\"1\" cpuset=\"0x000000f0\" local_memory=\"1\"/>",
    "<object type=\"L3Cache\" cpuset=\"0xffffffff\" cache_size=\"33554432\" depth=\"3\" cache_type=\"0\">",
    "<object type=\"Group\" cpuset=\"0x0\">",
    "<object type=\"Package\">",
    "</object>",
    "<distances2 type=\"NUMANode\" nbobjs=\"2\" kind=\"5\" indexing=\"os\">",
    "<indexes length=\"3\">0 1</indexes>",
    "<u64values length=\"4\">10 20 20 10</u64values>",
    "</distances2>",
    "<topology version=\"2.0\">",
    "</topology>",
    "cpuset=\"",
    "complete_cpuset=\"",
    "os_index=\"",
    "0xffffffff,",
    "0x00000000,0x00000001",
    ",0xffffffff,0xffffffff",
    "4294967295",
    "18446744073709551615",
    "-1",
    "\"",
    "<",
    ">",
    "/>",
    "&amp;",
    "&#0;",
    "<!-- x -->",
    "<![CDATA[x]]>",
    "<!DOCTYPE topology [<!ENTITY e \"0x1\">]>",
    "&e;",
    "\u{feff}",
];

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn hwloc_reader_never_panics(
        seed in 0usize..2,
        e in edits(XML_DICT, 12),
        fresh in prop::option::weighted(0.1, prop::collection::vec(any::<u8>(), 0..256)),
    ) {
        let bytes = match fresh {
            Some(b) => b,
            None => mutate(&hwloc_seeds()[seed], &e),
        };
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("machine.xml");
        std::fs::write(&file, &bytes).unwrap();
        let r = topology::from_hwloc_xml(&file);
        one_line(&r)?;
        if let Ok(t) = r {
            sane(&t)?;
        }
    }
}

/// A topology that a reader accepted is usable: its CPUs, nodes and
/// distances agree.
fn sane(t: &Topology) -> Result<(), TestCaseError> {
    let n = t.nr_cpus();
    prop_assert!(n > 0);
    prop_assert_eq!(t.all_cpus().weight(), n);
    for node in 0..t.nr_nodes() {
        prop_assert!(t.node_cpus(node).is_subset(t.all_cpus()));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// sysfs

/// A sysfs tree in memory: path under the root → contents.
type Tree = BTreeMap<PathBuf, Vec<u8>>;

fn load_tree(root: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, t: &mut Tree) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, t);
            } else {
                t.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut t = Tree::new();
    walk(root, root, &mut t);
    t
}

/// The trees the mutations start from, in memory and on disk: the genuine
/// 2-vCPU guest, and one that `write_sysfs` generates from a preset (24
/// CPUs, 2 nodes, SMT). A case changes a few files on disk and puts them
/// back afterwards (writing a whole tree per case is slow).
fn sysfs_seeds() -> &'static [(Tree, tempfile::TempDir)] {
    static SEEDS: std::sync::OnceLock<Vec<(Tree, tempfile::TempDir)>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(|| {
        let genuine = tempfile::tempdir().unwrap();
        let tree = load_tree(&fixture("sysfs/kvm-2vcpu-epyc-host"));
        write_tree(genuine.path(), &tree);
        let generated = tempfile::tempdir().unwrap();
        topology::write_sysfs(&topology::preset("xeon-12c24t").unwrap(), generated.path()).unwrap();
        let gtree = load_tree(generated.path());
        vec![(tree, genuine), (gtree, generated)]
    })
}

fn write_tree(root: &Path, tree: &Tree) {
    for (p, b) in tree {
        let p = root.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b).unwrap();
    }
}

/// Puts the changed files of a seed tree back as they were, even when the
/// case fails.
struct Restore<'a> {
    root: &'a Path,
    tree: &'a Tree,
    changed: Vec<PathBuf>,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        for p in &self.changed {
            std::fs::write(self.root.join(p), &self.tree[p]).unwrap();
        }
    }
}

/// Values a sysfs file may hold, and near misses.
const SYSFS_DICT: &[&str] = &[
    "0",
    "1",
    "2",
    "23",
    "0-1",
    "0-23",
    "0,12",
    "0-5,12-17",
    "6-11,18-23",
    "0-4095",
    "4096",
    "10 20",
    "10 21",
    "20 10",
    "10",
    "0 0",
    "255",
    "4294967296",
    "-1",
    "32K",
    "512K",
    "12288K",
    "2M",
    "1G",
    "18446744073709551615K",
    "K",
    "Data",
    "Instruction",
    "Unified",
    "Other",
    "\n",
    " ",
    ",",
    "-",
    "",
    "\u{0}",
    "é",
];

#[derive(Clone, Debug)]
enum FileChange {
    /// Mutate the file's bytes.
    Mutate(Vec<Edit>),
    /// Replace them with a dictionary value or random bytes.
    Replace(Vec<u8>),
    /// Remove the file.
    Remove,
}

fn file_change() -> impl Strategy<Value = FileChange> {
    prop_oneof![
        4 => edits(SYSFS_DICT, 5).prop_map(FileChange::Mutate),
        3 => prop::sample::select(SYSFS_DICT).prop_map(|s| FileChange::Replace(format!("{s}\n").into_bytes())),
        1 => prop::collection::vec(any::<u8>(), 0..16).prop_map(FileChange::Replace),
        1 => Just(FileChange::Remove),
    ]
}

proptest! {
    #![proptest_config(config(150))]

    #[test]
    fn sysfs_reader_never_panics(
        seed in 0usize..2,
        changes in prop::collection::vec((any::<prop::sample::Index>(), file_change()), 1..6),
    ) {
        // one test thread uses the seed trees; cases run one at a time
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let (base, dir) = &sysfs_seeds()[seed];
        let names: Vec<&PathBuf> = base.keys().collect();
        let mut tree: BTreeMap<&PathBuf, Option<Vec<u8>>> = BTreeMap::new();
        for (i, c) in &changes {
            let name = names[i.index(names.len())];
            let cur = tree.entry(name).or_insert_with(|| Some(base[name].clone()));
            match c {
                FileChange::Remove => *cur = None,
                FileChange::Replace(b) => *cur = Some(b.clone()),
                FileChange::Mutate(e) => {
                    if let Some(b) = cur {
                        *b = mutate(b, e);
                    }
                }
            }
        }
        let _restore = Restore {
            root: dir.path(),
            tree: base,
            changed: tree.keys().map(|p| (*p).clone()).collect(),
        };
        for (p, b) in &tree {
            let p = dir.path().join(p);
            match b {
                Some(b) => std::fs::write(p, b).unwrap(),
                None => std::fs::remove_file(p).unwrap(),
            }
        }
        let r = topology::from_sysfs(dir.path());
        one_line(&r)?;
        if let Ok(t) = r {
            sane(&t)?;
        }
    }
}

/// An XML syntax error at a newline: roxmltree says "expected '>' not
/// '<newline>'" with the newline itself, and the reader passes that on, so
/// the error is two lines (found by `hwloc_reader_never_panics`).
#[test]
fn hwloc_syntax_error_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("machine.xml");
    std::fs::write(&file, "<topology/\n>").unwrap();
    let msg = topology::from_hwloc_xml(&file).unwrap_err().to_string();
    assert!(msg.contains("not valid XML"), "{msg}");
    assert!(!msg.contains('\n'), "{msg:?}");
}
