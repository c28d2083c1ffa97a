//! Import a [`Topology`] from hwloc XML (what `lstopo --of xml` writes,
//! format 2.x; the 1.x `Socket`/`Cache` type names are accepted too).
//!
//! The object tree is read as follows, per PU (= Linux CPU, its `os_index`):
//!
//! - core: the nearest `Core` ancestor (the PU alone without one);
//! - cluster: the nearest `Group` or shared `L2Cache` ancestor spanning more
//!   than the core and less than the package-and-node (hwloc >= 2.5 turns
//!   Linux `cluster_cpus` into a Group; x86 clusters are L2 sharing); the
//!   core when there is none;
//! - LLC: the highest-level data or unified cache ancestor; package ∩ node
//!   without caches (as arm64's `cpu_coregroup_mask()` falls back);
//! - package: the nearest `Package` ancestor (the machine without one);
//! - node: the smallest `NUMANode` whose CPUs include the PU; in hwloc 2 a
//!   NUMA node is a memory child and covers its parent's CPUs. Nodes no CPU
//!   picks (memory-only, CXL, HBM) are dropped;
//! - distances: the `distances2` matrix over NUMA nodes (10/20 defaults, as
//!   Linux without a SLIT, when absent).

use crate::cpumask::CpuMask;
use crate::error::TopologyError;
use crate::topology::{CacheInfo, CacheKind, CpuPlace, Topology, LOCAL_DISTANCE};
use std::collections::HashMap;
use std::path::Path;

type Result<T> = std::result::Result<T, TopologyError>;

/// Deepest `<object>` nesting accepted.
const MAX_DEPTH: usize = 128;

#[derive(Debug)]
struct Obj {
    ty: String,
    os_index: Option<u64>,
    gp_index: Option<u64>,
    /// Cache level and kind, for cache objects.
    cache: Option<(u8, CacheKind)>,
    size: Option<u64>,
    parent: Option<usize>,
    set: CpuMask,
    line: u32,
}

struct Reader<'a> {
    path: &'a Path,
    doc: &'a roxmltree::Document<'a>,
    objs: Vec<Obj>,
    pu_of: HashMap<usize, usize>,
}

fn cache_of(ty: &str, node: &roxmltree::Node) -> Option<(u8, CacheKind)> {
    let (digits, instr) = match ty {
        "Cache" => ("", false),
        t if t.starts_with('L') && t.ends_with("iCache") => (&t[1..t.len() - 6], true),
        t if t.starts_with('L') && t.ends_with("Cache") => (&t[1..t.len() - 5], false),
        _ => return None,
    };
    let level = digits
        .parse::<u8>()
        .ok()
        .or_else(|| node.attribute("depth")?.parse().ok())?;
    let kind = match node.attribute("cache_type") {
        Some("1") => CacheKind::Data,
        Some("2") => CacheKind::Instruction,
        _ if instr => CacheKind::Instruction,
        _ => CacheKind::Unified,
    };
    Some((level, kind))
}

impl Reader<'_> {
    fn line(&self, node: &roxmltree::Node) -> u32 {
        self.doc.text_pos_at(node.range().start).row
    }

    fn err(&self, line: u32, problem: impl std::fmt::Display) -> TopologyError {
        TopologyError::file(self.path, format!("line {line}: {problem}"))
    }

    fn num_attr(&self, node: &roxmltree::Node, name: &str) -> Result<Option<u64>> {
        match node.attribute(name) {
            None => Ok(None),
            Some(v) => v.trim().parse().map(Some).map_err(|_| {
                self.err(
                    self.line(node),
                    format!(
                        "{name}={v:?} on <{}> is not a number",
                        node.tag_name().name()
                    ),
                )
            }),
        }
    }

    /// Record `node` (an `<object>`) and its subtree; returns its CPU set.
    fn walk(
        &mut self,
        node: roxmltree::Node,
        parent: Option<usize>,
        depth: usize,
    ) -> Result<CpuMask> {
        let line = self.line(&node);
        // Real trees are about 10 deep; refuse absurd nesting rather than
        // recurse off the stack.
        if depth > MAX_DEPTH {
            return Err(self.err(
                line,
                format!("objects nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        let ty = node
            .attribute("type")
            .ok_or_else(|| self.err(line, "<object> without a type"))?
            .to_string();
        let os_index = self.num_attr(&node, "os_index")?;
        let gp_index = self.num_attr(&node, "gp_index")?;
        let cache = cache_of(&ty, &node);
        let size = if cache.is_some() {
            self.num_attr(&node, "cache_size")?
        } else {
            None
        };
        let me = self.objs.len();
        self.objs.push(Obj {
            ty: ty.clone(),
            os_index,
            gp_index,
            cache,
            size,
            parent,
            set: CpuMask::new(),
            line,
        });
        let mut set = CpuMask::new();
        if ty == "PU" {
            let idx = os_index.ok_or_else(|| self.err(line, "PU without os_index"))?;
            if idx >= CpuMask::MAX_CPUS as u64 {
                return Err(self.err(
                    line,
                    format!(
                        "PU os_index {idx} is beyond the maximum CPU {}",
                        CpuMask::MAX_CPUS - 1
                    ),
                ));
            }
            let cpu = idx as usize;
            if let Some(&other) = self.pu_of.get(&cpu) {
                return Err(self.err(
                    line,
                    format!(
                        "PU os_index {cpu} appears twice (also line {})",
                        self.objs[other].line
                    ),
                ));
            }
            self.pu_of.insert(cpu, me);
            set.set(cpu);
        }
        for child in node.children().filter(|c| c.has_tag_name("object")) {
            let s = self.walk(child, Some(me), depth + 1)?;
            set.or_assign(&s);
        }
        self.objs[me].set = set.clone();
        Ok(set)
    }

    fn ancestors(&self, obj: usize) -> impl Iterator<Item = &Obj> + '_ {
        let mut cur = self.objs[obj].parent;
        std::iter::from_fn(move || {
            let o = &self.objs[cur?];
            cur = o.parent;
            Some(o)
        })
    }
}

fn read_distances(r: &Reader, nodes: &[&Obj]) -> Result<Option<Vec<Vec<u32>>>> {
    let Some(d) = r
        .doc
        .descendants()
        .filter(|n| n.has_tag_name("distances2") && n.attribute("type") == Some("NUMANode"))
        .max_by_key(|n| n.attribute("name") == Some("NUMALatency"))
    else {
        return Ok(None);
    };
    let line = r.line(&d);
    let nb = r
        .num_attr(&d, "nbobjs")?
        .ok_or_else(|| r.err(line, "distances2 without nbobjs"))? as usize;
    let nums =
        |tag: &str| -> Result<Vec<u64>> {
            let mut v = Vec::new();
            for c in d.children().filter(|c| c.has_tag_name(tag)) {
                for t in c.text().unwrap_or("").split_whitespace() {
                    v.push(t.parse().map_err(|_| {
                        r.err(r.line(&c), format!("{t:?} in <{tag}> is not a number"))
                    })?);
                }
            }
            Ok(v)
        };
    let indexes = nums("indexes")?;
    let values = nums("u64values")?;
    if indexes.len() != nb {
        return Err(r.err(
            line,
            format!("distances2 lists {} indexes for nbobjs={nb}", indexes.len()),
        ));
    }
    if values.len() != nb * nb {
        return Err(r.err(
            line,
            format!(
                "distances2 has {} values for {nb} objects (matrix not square, expected {})",
                values.len(),
                nb * nb
            ),
        ));
    }
    let by_gp = d.attribute("indexing") == Some("gp");
    let mut pos = Vec::with_capacity(nodes.len());
    for n in nodes {
        let key = if by_gp { n.gp_index } else { n.os_index };
        let p = indexes
            .iter()
            .position(|&i| Some(i) == key)
            .ok_or_else(|| {
                r.err(
                    line,
                    format!(
                        "distances2 has no entry for NUMANode os_index {}",
                        n.os_index.unwrap_or(0)
                    ),
                )
            })?;
        pos.push(p);
    }
    let mut m = Vec::with_capacity(nodes.len());
    for &a in &pos {
        let mut row = Vec::with_capacity(nodes.len());
        for &b in &pos {
            let v = values[a * nb + b];
            row.push(
                u32::try_from(v)
                    .map_err(|_| r.err(line, format!("distance {v} is out of range")))?,
            );
        }
        m.push(row);
    }
    Ok(Some(m))
}

/// The largest hwloc XML file read (`lstopo --of xml` of a machine of
/// thousands of CPUs is a few MB).
pub const MAX_HWLOC_XML_BYTES: u64 = 64 << 20;

/// Read an hwloc XML file (`lstopo --of xml`), a regular file of at most
/// [`MAX_HWLOC_XML_BYTES`].
///
/// ```no_run
/// let t = topology::from_hwloc_xml(std::path::Path::new("machine.xml")).unwrap();
/// println!("{} CPUs in {} nodes", t.nr_cpus(), t.nr_nodes());
/// ```
pub fn from_hwloc_xml(path: &Path) -> Result<Topology> {
    let bytes = crate::input::read_capped(path, MAX_HWLOC_XML_BYTES)
        .map_err(|what| TopologyError::file(path, what))?;
    let text = String::from_utf8(bytes).map_err(|_| TopologyError::file(path, "not UTF-8 text"))?;
    // lstopo writes a DOCTYPE line; allow it (entities are not expanded).
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&text, opts)
        // roxmltree quotes the unexpected character as it is, a newline
        // included: escape line breaks so the error stays one line
        .map_err(|e| {
            let msg = e.to_string().replace('\n', "\\n").replace('\r', "\\r");
            TopologyError::file(path, format!("not valid XML: {msg}"))
        })?;
    let root = doc.root_element();
    if !root.has_tag_name("topology") {
        return Err(TopologyError::file(
            path,
            format!(
                "root element is <{}>, expected <topology> (not hwloc XML)",
                root.tag_name().name()
            ),
        ));
    }
    let mut r = Reader {
        path,
        doc: &doc,
        objs: Vec::new(),
        pu_of: HashMap::new(),
    };
    for top in root.children().filter(|c| c.has_tag_name("object")) {
        r.walk(top, None, 0)?;
    }
    let n = r.pu_of.len();
    if n == 0 {
        return Err(TopologyError::file(path, "no PU objects (zero CPUs)"));
    }
    if let Some(&missing) = (0..n)
        .collect::<Vec<_>>()
        .iter()
        .find(|c| !r.pu_of.contains_key(c))
    {
        return Err(TopologyError::file(
            path,
            format!(
                "PU os_index values are not 0..{} without holes (no PU {missing}; unsupported)",
                n - 1
            ),
        ));
    }
    let all = CpuMask::from_range(0, n - 1);

    // NUMA nodes: own CPUs (hwloc 1.x) or the parent's (2.x memory child).
    let mut nodes: Vec<(usize, CpuMask)> = Vec::new();
    for (i, o) in r.objs.iter().enumerate() {
        if o.ty == "NUMANode" {
            let set = if o.set.is_empty() {
                o.parent
                    .map_or_else(|| all.clone(), |p| r.objs[p].set.clone())
            } else {
                o.set.clone()
            };
            nodes.push((i, set));
        }
    }
    nodes.sort_by_key(|(i, _)| r.objs[*i].os_index);
    let node_choice: Vec<Option<usize>> = (0..n)
        .map(|cpu| {
            nodes
                .iter()
                .enumerate()
                .filter(|(_, (_, s))| s.test(cpu))
                .min_by_key(|(k, (_, s))| (s.weight(), *k))
                .map(|(k, _)| k)
        })
        .collect();
    // Keep the nodes some CPU picked, in os_index order.
    let mut kept: Vec<usize> = node_choice.iter().flatten().copied().collect();
    kept.sort_unstable();
    kept.dedup();
    let node_masks: Vec<CpuMask> = if kept.is_empty() {
        vec![all.clone()]
    } else {
        kept.iter()
            .map(|&k| (0..n).filter(|&c| node_choice[c] == Some(k)).collect())
            .collect()
    };
    let node_of: Vec<usize> = (0..n)
        .map(|c| node_masks.iter().position(|m| m.test(c)).unwrap_or(0))
        .collect();
    let node_objs: Vec<&Obj> = kept.iter().map(|&k| &r.objs[nodes[k].0]).collect();
    let node_distance = match read_distances(&r, &node_objs)? {
        Some(m) if !node_objs.is_empty() => m,
        _ => (0..node_masks.len())
            .map(|a| {
                (0..node_masks.len())
                    .map(|b| if a == b { LOCAL_DISTANCE } else { 20 })
                    .collect()
            })
            .collect(),
    };

    let mut core_m = Vec::with_capacity(n);
    let mut cluster_m = Vec::with_capacity(n);
    let mut llc_m = Vec::with_capacity(n);
    let mut package_m = Vec::with_capacity(n);
    for cpu in 0..n {
        let pu = r.pu_of[&cpu];
        let core = r
            .ancestors(pu)
            .find(|o| o.ty == "Core")
            .map_or_else(|| CpuMask::from_cpus([cpu]), |o| o.set.clone());
        let package = r
            .ancestors(pu)
            .find(|o| o.ty == "Package" || o.ty == "Socket")
            .map_or_else(|| all.clone(), |o| o.set.clone());
        let pkg_node = package.and(&node_masks[node_of[cpu]]);
        let llc = r
            .ancestors(pu)
            .filter(|o| matches!(o.cache, Some((_, k)) if k != CacheKind::Instruction))
            .max_by_key(|o| o.cache.map(|c| c.0))
            .map_or_else(|| pkg_node.clone(), |o| o.set.clone());
        let cluster = r
            .ancestors(pu)
            .find(|o| {
                let candidate = o.ty == "Group"
                    || matches!(o.cache, Some((2, k)) if k != CacheKind::Instruction);
                candidate
                    && core.is_subset(&o.set)
                    && o.set != core
                    && o.set.is_subset(&pkg_node)
                    && o.set != pkg_node
            })
            .map_or_else(|| core.clone(), |o| o.set.clone());
        core_m.push(core);
        cluster_m.push(cluster);
        llc_m.push(llc);
        package_m.push(package);
    }
    let ids = |masks: &[CpuMask], what: &str| -> Result<Vec<usize>> {
        let mut first_to_id: HashMap<usize, usize> = HashMap::new();
        let mut out = Vec::with_capacity(n);
        for (cpu, m) in masks.iter().enumerate() {
            let f = m.first().unwrap_or(cpu);
            if masks[f] != *m {
                return Err(TopologyError::file(
                    path,
                    format!(
                        "{what} of CPU {cpu} (\"{m}\") overlaps the {what} of CPU {f} (\"{}\")",
                        masks[f]
                    ),
                ));
            }
            let next = first_to_id.len();
            out.push(*first_to_id.entry(f).or_insert(next));
        }
        Ok(out)
    };
    let (core_id, cluster_id, llc_id, package_id) = (
        ids(&core_m, "core")?,
        ids(&cluster_m, "cluster")?,
        ids(&llc_m, "LLC")?,
        ids(&package_m, "package")?,
    );
    let places = (0..n)
        .map(|c| CpuPlace {
            core: core_id[c],
            cluster: cluster_id[c],
            llc: llc_id[c],
            node: node_of[c],
            package: package_id[c],
        })
        .collect();
    let caches = r
        .objs
        .iter()
        .filter_map(|o| {
            let (level, kind) = o.cache?;
            (!o.set.is_empty()).then(|| CacheInfo {
                level,
                kind,
                size_kib: o.size.map(|b| b / 1024),
                shared_cpus: o.set.clone(),
            })
        })
        .collect();
    Topology::from_places(
        &format!("hwloc:{}", path.display()),
        places,
        node_distance,
        caches,
    )
    .map_err(|e| match e {
        TopologyError::Invalid { problem, .. } => TopologyError::file(path, problem),
        other => other,
    })
}
