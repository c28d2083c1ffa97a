//! Import a [`Topology`] from a sysfs tree, and write one out.
//!
//! Reads what Linux exports under `<root>/sys/devices/system`:
//!
//! | what | file (per CPU `cpuN/`) | fallback |
//! |---|---|---|
//! | CPUs | `cpu/online` | – |
//! | core (SMT) | `topology/core_cpus_list` (v5.5+) | `topology/thread_siblings_list` |
//! | cluster | `topology/cluster_cpus_list` (v5.16+) | the core |
//! | package | `topology/package_cpus_list` (v5.5+) | `core_siblings_list`, then `physical_package_id` |
//! | LLC | `cache/index*/shared_cpu_list` of the highest-level data or unified cache | package ∩ node (arm64 `cpu_coregroup_mask()` without cache info) |
//! | caches | `cache/index*/{level,type,size,shared_cpu_list}` | none |
//! | nodes | `node/nodeN/{cpulist,distance}` | one node, distance 10 |
//!
//! Only contiguous CPU numbering `0..N-1` is supported; sibling lists are
//! restricted to online CPUs (as the kernel builds domains over the active
//! map). Every problem is reported as one [`TopologyError::File`] naming
//! the file at fault.

use crate::cpumask::CpuMask;
use crate::error::TopologyError;
use crate::topology::{CacheInfo, CacheKind, CpuPlace, Topology, LOCAL_DISTANCE};
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

type Result<T> = std::result::Result<T, TopologyError>;

/// The largest sysfs file read: they hold a CPU list or a few numbers.
pub const MAX_SYSFS_FILE_BYTES: u64 = 1 << 20;

fn read(path: &Path) -> Result<String> {
    let bytes = crate::input::read_capped(path, MAX_SYSFS_FILE_BYTES)
        .map_err(|what| TopologyError::file(path, what))?;
    String::from_utf8(bytes).map_err(|_| TopologyError::file(path, "not UTF-8 text"))
}

fn read_opt(path: &Path) -> Result<Option<String>> {
    if path.exists() {
        read(path).map(Some)
    } else {
        Ok(None)
    }
}

fn parse_list(path: &Path, s: &str) -> Result<CpuMask> {
    CpuMask::parse_list(s).map_err(|e| TopologyError::file(path, e.to_string()))
}

fn parse_num<T: std::str::FromStr>(path: &Path, s: &str, what: &str) -> Result<T> {
    s.trim()
        .parse()
        .map_err(|_| TopologyError::file(path, format!("{:?} is not a valid {what}", s.trim())))
}

/// Sysfs cache sizes look like `32K`; accept K/M/G suffixes or bytes.
fn parse_size_kib(path: &Path, s: &str) -> Result<u64> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().last() {
        Some((i, 'K')) => (&t[..i], 1),
        Some((i, 'M')) => (&t[..i], 1024),
        Some((i, 'G')) => (&t[..i], 1024 * 1024),
        _ => (t, 0),
    };
    let n: u64 = parse_num(path, num, "cache size")?;
    Ok(if mul == 0 { n / 1024 } else { n * mul })
}

/// The numeric suffixes of `prefix<N>` entries of `dir`, ascending.
fn numbered_entries(dir: &Path, prefix: &str) -> Result<Vec<(usize, PathBuf)>> {
    let rd = fs::read_dir(dir)
        .map_err(|e| TopologyError::file(dir, format!("cannot list directory: {e}")))?;
    let mut v = Vec::new();
    for ent in rd.flatten() {
        let name = ent.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        if let Ok(n) = rest.parse::<usize>() {
            v.push((n, ent.path()));
        }
    }
    v.sort();
    Ok(v)
}

/// Turn one mask per CPU (as each CPU's file reports it) into dense group
/// ids, checking that each CPU is in its own mask and that CPUs of one
/// group all report the same group (otherwise groups overlap).
fn ids_from_masks(masks: &[(CpuMask, PathBuf)], what: &str) -> Result<Vec<usize>> {
    let mut ids = vec![usize::MAX; masks.len()];
    let mut next = 0;
    for cpu in 0..masks.len() {
        let (m, path) = &masks[cpu];
        if !m.test(cpu) {
            return Err(TopologyError::file(
                path,
                format!("{what} \"{m}\" does not contain cpu{cpu} itself"),
            ));
        }
        if ids[cpu] != usize::MAX {
            continue;
        }
        for other in m.iter() {
            let (om, opath) = &masks[other];
            if om != m {
                return Err(TopologyError::file(
                    opath,
                    format!(
                        "{what} \"{om}\" overlaps {what} \"{m}\" of cpu{cpu} ({})",
                        path.display()
                    ),
                ));
            }
            ids[other] = next;
        }
        next += 1;
    }
    Ok(ids)
}

/// Read the topology of the machine whose sysfs is `root` itself (`/sys`
/// for this machine: a directory that holds `devices/system/cpu`) or is
/// mounted at `<root>/sys` (`/` for this machine).
///
/// ```no_run
/// let t = topology::from_sysfs(std::path::Path::new("/")).unwrap();
/// println!("{} CPUs", t.nr_cpus());
/// ```
pub fn from_sysfs(root: &Path) -> Result<Topology> {
    // the sysfs mount itself (`/sys`), else the directory above its `sys/`
    let sys = if root.join("devices/system/cpu").is_dir() {
        root.join("devices/system")
    } else {
        root.join("sys/devices/system")
    };
    let cpu_dir = sys.join("cpu");
    if !cpu_dir.is_dir() {
        return Err(TopologyError::file(
            &cpu_dir,
            "not a directory (give the sysfs mount, e.g. /sys, or the directory above its sys/)",
        ));
    }
    let online_path = cpu_dir.join("online");
    let online = parse_list(&online_path, &read(&online_path)?)?;
    let n = online.weight();
    if n == 0 {
        return Err(TopologyError::file(&online_path, "no online CPUs"));
    }
    if online.last() != Some(n - 1) {
        return Err(TopologyError::file(
            &online_path,
            format!("online CPUs \"{online}\" are not numbered 0..N-1 without holes (unsupported)"),
        ));
    }

    let mut core = Vec::with_capacity(n);
    let mut cluster = Vec::with_capacity(n);
    let mut package = Vec::with_capacity(n);
    let mut package_ids: BTreeMap<u64, CpuMask> = BTreeMap::new();
    let mut package_by_id: Vec<Option<(u64, PathBuf)>> = Vec::with_capacity(n);
    let mut llc: Vec<Option<(CpuMask, PathBuf)>> = Vec::with_capacity(n);
    let mut caches: Vec<CacheInfo> = Vec::new();

    // Read the first of `names` that exists under `dir`, as a CPU list.
    let list_of = |dir: &Path, names: &[&str]| -> Result<Option<(CpuMask, PathBuf)>> {
        for name in names {
            let p = dir.join(name);
            if let Some(s) = read_opt(&p)? {
                return Ok(Some((parse_list(&p, &s)?.and(&online), p)));
            }
        }
        Ok(None)
    };

    for cpu in 0..n {
        let cdir = cpu_dir.join(format!("cpu{cpu}"));
        let tdir = cdir.join("topology");
        if !tdir.is_dir() {
            return Err(TopologyError::file(
                &tdir,
                format!("missing directory for online cpu{cpu}"),
            ));
        }
        let c = list_of(&tdir, &["core_cpus_list", "thread_siblings_list"])?.ok_or_else(|| {
            TopologyError::file(
                &tdir.join("core_cpus_list"),
                "missing file (and no thread_siblings_list)",
            )
        })?;
        cluster.push(list_of(&tdir, &["cluster_cpus_list"])?.unwrap_or_else(|| c.clone()));
        core.push(c);
        match list_of(&tdir, &["package_cpus_list", "core_siblings_list"])? {
            Some(p) => {
                package.push(Some(p));
                package_by_id.push(None);
            }
            None => {
                let p = tdir.join("physical_package_id");
                let id: u64 = parse_num(&p, &read(&p)?, "package id")?;
                package_ids.entry(id).or_default().set(cpu);
                package.push(None);
                package_by_id.push(Some((id, p)));
            }
        }

        // Caches: the LLC is the highest-level data/unified cache.
        let cache_dir = cdir.join("cache");
        let mut best: Option<(u8, CpuMask, PathBuf)> = None;
        if cache_dir.is_dir() {
            for (_, idx) in numbered_entries(&cache_dir, "index")? {
                let lp = idx.join("level");
                let level: u8 = parse_num(&lp, &read(&lp)?, "cache level")?;
                let tp = idx.join("type");
                let kind = match read(&tp)?.trim() {
                    "Data" => CacheKind::Data,
                    "Instruction" => CacheKind::Instruction,
                    "Unified" => CacheKind::Unified,
                    other => {
                        return Err(TopologyError::file(
                            &tp,
                            format!("unknown cache type {other:?}"),
                        ))
                    }
                };
                let sp = idx.join("size");
                let size_kib = match read_opt(&sp)? {
                    Some(s) => Some(parse_size_kib(&sp, &s)?),
                    None => None,
                };
                let shp = idx.join("shared_cpu_list");
                let shared = parse_list(&shp, &read(&shp)?)?.and(&online);
                if !shared.test(cpu) {
                    return Err(TopologyError::file(
                        &shp,
                        format!("cache shared by \"{shared}\" does not contain cpu{cpu}"),
                    ));
                }
                if kind != CacheKind::Instruction && best.as_ref().is_none_or(|b| level > b.0) {
                    best = Some((level, shared.clone(), shp.clone()));
                }
                let info = CacheInfo {
                    level,
                    kind,
                    size_kib,
                    shared_cpus: shared,
                };
                if !caches.contains(&info) {
                    caches.push(info);
                }
            }
        }
        llc.push(best.map(|(_, m, p)| (m, p)));
    }

    // Nodes.
    let node_dir = sys.join("node");
    let node_entries = if node_dir.is_dir() {
        numbered_entries(&node_dir, "node")?
    } else {
        Vec::new()
    };
    let mut node_of: Vec<Option<usize>> = vec![None; n];
    let mut node_masks: Vec<CpuMask> = Vec::new();
    let mut node_distance: Vec<Vec<u32>> = Vec::new();
    if node_entries.is_empty() {
        node_of = vec![Some(0); n];
        node_masks.push(online.clone());
        node_distance.push(vec![LOCAL_DISTANCE]);
    } else {
        // Rows list distances to every node directory, in id order; nodes
        // without CPUs (memory-only) are dropped afterwards.
        let mut rows = Vec::new();
        let mut cpu_nodes: Vec<usize> = Vec::new();
        for (k, (id, nd)) in node_entries.iter().enumerate() {
            let lp = nd.join("cpulist");
            let m = parse_list(&lp, &read(&lp)?)?.and(&online);
            for cpu in m.iter() {
                if let Some(prev) = node_of[cpu] {
                    return Err(TopologyError::file(
                        &lp,
                        format!(
                            "cpu{cpu} is also in node{}",
                            node_entries[cpu_nodes[prev]].0
                        ),
                    ));
                }
                node_of[cpu] = Some(node_masks.len());
            }
            let dp = nd.join("distance");
            let ds = read(&dp)?;
            let row: Vec<u32> = ds
                .split_whitespace()
                .map(|t| parse_num::<u32>(&dp, t, "distance"))
                .collect::<Result<_>>()?;
            if row.len() != node_entries.len() {
                return Err(TopologyError::file(
                    &dp,
                    format!(
                        "{} distances for {} nodes (matrix not square)",
                        row.len(),
                        node_entries.len()
                    ),
                ));
            }
            if row[k] != LOCAL_DISTANCE {
                return Err(TopologyError::file(
                    &dp,
                    format!(
                        "distance of node{id} to itself is {}, expected {LOCAL_DISTANCE}",
                        row[k]
                    ),
                ));
            }
            if let Some(z) = row.iter().position(|&d| d == 0) {
                return Err(TopologyError::file(
                    &dp,
                    format!("distance to node{} is 0", node_entries[z].0),
                ));
            }
            rows.push(row);
            if !m.is_empty() {
                cpu_nodes.push(k);
                node_masks.push(m);
            }
        }
        node_distance = cpu_nodes
            .iter()
            .map(|&a| cpu_nodes.iter().map(|&b| rows[a][b]).collect())
            .collect();
        if let Some(cpu) = node_of.iter().position(Option::is_none) {
            return Err(TopologyError::file(
                &node_dir,
                format!("online cpu{cpu} is in no node's cpulist"),
            ));
        }
    }
    let node_of: Vec<usize> = node_of.into_iter().map(|x| x.unwrap_or(0)).collect();

    // Packages given by id only: turn ids into masks.
    let package: Vec<(CpuMask, PathBuf)> = package
        .into_iter()
        .zip(package_by_id)
        .map(|(p, by_id)| match (p, by_id) {
            (Some(p), _) => p,
            (None, Some((id, path))) => (package_ids[&id].clone(), path),
            (None, None) => unreachable!("every CPU has a package list or id"),
        })
        .collect();
    // Missing cache info: arm64's cpu_coregroup_mask() falls back to the
    // package siblings within the node.
    let llc: Vec<(CpuMask, PathBuf)> = llc
        .into_iter()
        .enumerate()
        .map(|(cpu, l)| {
            l.unwrap_or_else(|| {
                (
                    package[cpu].0.and(&node_masks[node_of[cpu]]),
                    package[cpu].1.clone(),
                )
            })
        })
        .collect();

    let core_id = ids_from_masks(&core, "core")?;
    let cluster_id = ids_from_masks(&cluster, "cluster")?;
    let llc_id = ids_from_masks(&llc, "LLC")?;
    let package_id = ids_from_masks(&package, "package")?;
    let places = (0..n)
        .map(|cpu| CpuPlace {
            core: core_id[cpu],
            cluster: cluster_id[cpu],
            llc: llc_id[cpu],
            node: node_of[cpu],
            package: package_id[cpu],
        })
        .collect();
    let name = format!("sysfs:{}", root.display());
    Topology::from_places(&name, places, node_distance, caches).map_err(|e| match e {
        TopologyError::Invalid { problem, .. } => TopologyError::file(&sys, problem),
        other => other,
    })
}

fn write(path: &Path, contents: impl AsRef<str>) -> io::Result<()> {
    if let Some(d) = path.parent() {
        fs::create_dir_all(d)?;
    }
    fs::write(path, format!("{}\n", contents.as_ref()))
}

/// Write `topo` as a sysfs tree under `<root>/sys/devices/system`, in the
/// formats Linux uses (CPU lists, ids, cache sizes like `32K`; the hex
/// bitmap twins of the list files are not written),
/// so that [`from_sysfs`] reads it back. Used to generate test fixtures
/// and broken variants of them.
pub fn write_sysfs(topo: &Topology, root: &Path) -> io::Result<()> {
    let sys = root.join("sys/devices/system");
    let cpu_dir = sys.join("cpu");
    let n = topo.nr_cpus();
    let all = topo.all_cpus().to_string();
    for f in ["online", "possible", "present"] {
        write(&cpu_dir.join(f), &all)?;
    }
    // Die = LLC/node-level group inside the package for the die files.
    for cpu in 0..n {
        let p = topo.place(cpu);
        let t = cpu_dir.join(format!("cpu{cpu}/topology"));
        let lists = [
            ("core_cpus", topo.smt_mask(cpu)),
            ("thread_siblings", topo.smt_mask(cpu)),
            ("cluster_cpus", topo.cluster_mask(cpu)),
            ("package_cpus", topo.package_mask(cpu)),
            ("core_siblings", topo.package_mask(cpu)),
            ("die_cpus", topo.package_mask(cpu)),
        ];
        for (name, m) in lists {
            write(&t.join(format!("{name}_list")), m.to_string())?;
        }
        // core_id is package-relative in Linux; the global id is unique too.
        write(&t.join("core_id"), p.core.to_string())?;
        let cluster_id = if topo.cluster_mask(cpu) == topo.smt_mask(cpu) {
            65535
        } else {
            p.cluster
        };
        write(&t.join("cluster_id"), cluster_id.to_string())?;
        write(&t.join("physical_package_id"), p.package.to_string())?;
        write(&t.join("die_id"), "0")?;
        let cache_dir = cpu_dir.join(format!("cpu{cpu}/cache"));
        for (i, c) in topo.caches_of(cpu).enumerate() {
            let d = cache_dir.join(format!("index{i}"));
            write(&d.join("level"), c.level.to_string())?;
            let kind = match c.kind {
                CacheKind::Data => "Data",
                CacheKind::Instruction => "Instruction",
                CacheKind::Unified => "Unified",
            };
            write(&d.join("type"), kind)?;
            if let Some(k) = c.size_kib {
                write(&d.join("size"), format!("{k}K"))?;
            }
            write(&d.join("shared_cpu_list"), c.shared_cpus.to_string())?;
            let id = topo
                .caches()
                .iter()
                .filter(|o| o.level == c.level && o.kind == c.kind)
                .position(|o| o == c);
            write(&d.join("id"), id.unwrap_or(0).to_string())?;
        }
    }
    let node_dir = sys.join("node");
    let nodes = topo.nr_nodes();
    let node_list = CpuMask::from_range(0, nodes - 1).to_string();
    for f in ["online", "possible", "has_cpu"] {
        write(&node_dir.join(f), &node_list)?;
    }
    for node in 0..nodes {
        let d = node_dir.join(format!("node{node}"));
        write(&d.join("cpulist"), topo.node_cpus(node).to_string())?;
        let row: Vec<String> = (0..nodes)
            .map(|b| topo.node_distance(node, b).to_string())
            .collect();
        write(&d.join("distance"), row.join(" "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let p = Path::new("x");
        assert_eq!(parse_size_kib(p, "32K\n").unwrap(), 32);
        assert_eq!(parse_size_kib(p, "2M").unwrap(), 2048);
        assert_eq!(parse_size_kib(p, "65536").unwrap(), 64);
        assert!(parse_size_kib(p, "lots")
            .unwrap_err()
            .to_string()
            .contains("\"lots\" is not a valid cache size"));
    }

    #[test]
    fn round_trip_presets() {
        // Writing thousands of small files is slow on some filesystems, so
        // the large presets are left to the committed fixtures.
        for name in ["xeon-12c24t", "kunpeng920-node", "jacobsville", "kvm-8vcpu"] {
            let t = crate::preset(name).unwrap();
            let dir = tempfile::tempdir().unwrap();
            write_sysfs(&t, dir.path()).unwrap();
            let back = from_sysfs(dir.path()).unwrap_or_else(|e| panic!("{name}: {e}"));
            if name == "jacobsville" {
                // The preset's 24-CPU LLC has no cache behind it (its span
                // is uncertain, see presets.rs); sysfs only knows the L2, so
                // the imported LLC is the 4-core cluster.
                assert_eq!(back.llc_mask(5).to_string(), "4-7");
                continue;
            }
            assert!(back.same_structure(&t), "{name}: structure differs");
            let mut a = back.caches().to_vec();
            let mut b = t.caches().to_vec();
            a.sort_by_key(|c| (c.level, c.kind as u8, c.shared_cpus.first()));
            b.sort_by_key(|c| (c.level, c.kind as u8, c.shared_cpus.first()));
            assert_eq!(a, b, "{name}: caches differ");
        }
    }
}
