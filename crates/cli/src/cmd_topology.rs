//! `schedlab topology ...`: list the built-in machines, show one (preset,
//! synthetic `smp:` machine, sysfs tree or hwloc XML) as a tree plus the sched domains a chosen
//! kernel (`--kernel`, `--kernel-config`) would build on it, as text or
//! JSON; `--domains` lists every CPU's domains and groups the way a booted
//! kernel shows them.

use anyhow::{Context, Result};
use clap::Subcommand;
use serde_json::{json, Value};
use sim::placement::linux::Features;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use topology::{
    from_hwloc_xml, from_sysfs, presets, Arch, CacheInfo, ConfigOption, CpuMask, DomainOptions,
    Level, SchedDomains, SmpSpec, Topology, SMP_PREFIX,
};

/// The preset `show` uses when given no machine.
const DEFAULT_PRESET: &str = "kunpeng920";

/// The machine forms and the `smp:` syntax, after `topology --help` and
/// `topology show --help` (the parser: crates/topology/src/synthetic.rs).
pub const MACHINE_HELP: &str = "\
Machines: a preset name (`schedlab topology list`), sysfs:DIR, hwloc:FILE, or a synthetic machine
smp:KEY=VALUE,... in the spirit of QEMU's -smp [default in brackets]:
  cpus=N              total CPUs; fills in an omitted cores (else sockets), as QEMU does
  sockets=N           packages [1]
  dies=N              dies per socket [1]
  clusters=N          clusters per die; given, the machine has a cluster level [none]
  cores=N             cores per cluster, or per die without clusters (QEMU's meaning) [1]
  threads=N           hardware threads per core, 1..=8 [1]
  nodes=N             NUMA nodes: each whole sockets, whole dies of one socket, or whole clusters
                      (cores, without clusters) of one die; at most 1024 [1]
  numbering=contiguous|interleaved
                      a core's threads are consecutive CPUs, or siblings are cpu and cpu+cores
                      as x86 firmware numbers them [contiguous]
  l2=core|cluster     the CPUs one L2 serves [core]
  llc=core|cluster|die|socket
                      the CPUs one last-level cache serves (the MC domain), not below l2 [die]
  distance=local:10,die:D,socket:S,remote:R
                      SLIT rule for two nodes of one die, of one socket, of two sockets, any of
                      them (11..=254) [die:11,socket:12,remote:20]
  slit=10:12/12:10    the whole SLIT instead: rows split by '/', entries by ':'
  cost=PRESET|FILE    the cost profile `sim` charges on this machine: a preset's, or a TOML file
                      (`schedlab costs show PRESET --toml`); `sim` requires it unless --costs off
                      or --cost-profile FILE is given; `topology` ignores it
CPUs = sockets x dies x clusters x cores x threads (at most 4096), numbered socket by socket, die
by die, cluster by cluster, core by core. Examples:
  schedlab topology show smp:sockets=4,dies=2,cores=32,threads=2,nodes=8
  schedlab topology show smp:sockets=2,dies=2,clusters=6,cores=4,nodes=4 --domains
  schedlab topology show smp:sockets=8,cores=64,threads=2,nodes=8,numbering=interleaved --arch x86
  schedlab topology show smp:sockets=2,cores=16,nodes=2,distance=remote:32
  schedlab sim hackbench --machine smp:sockets=2,cores=32,threads=2,nodes=2,cost=sapphire-rapids";

#[derive(Subcommand, Debug)]
pub enum TopologyCommand {
    /// List the built-in machine presets.
    List,
    /// Show a machine (preset, smp: shape, sysfs tree or hwloc XML) and its sched domains.
    #[command(allow_negative_numbers = true, after_help = MACHINE_HELP)]
    Show {
        /// The machine: a preset name (see `topology list`), smp:KEY=VALUE,... (below), sysfs:DIR or hwloc:FILE; default kunpeng920.
        #[arg(value_name = "MACHINE", conflicts_with_all = ["sysfs", "hwloc"])]
        preset: Option<String>,
        /// Read the machine from a sysfs tree: DIR is the sysfs mount (DIR/devices/system/...; `/sys` for this host) or the directory above its sys/ (DIR/sys/devices/system/...; `/`).
        #[arg(long, value_name = "DIR", conflicts_with = "hwloc")]
        sysfs: Option<PathBuf>,
        /// Read the machine from hwloc XML (`lstopo --of xml`).
        #[arg(long, value_name = "FILE")]
        hwloc: Option<PathBuf>,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// List every CPU's domains and groups as a booted kernel shows them (one line per CPU and level).
        #[arg(long)]
        domains: bool,
        /// Kernel whose rules and names build the domains: linux-X.Y (4.16 to 6.14) or latest (see `sim --list-kernels`).
        #[arg(long, default_value = "latest")]
        kernel: String,
        /// Override a kernel build option, NAME=y|n: SCHED_SMT, SCHED_CLUSTER, SCHED_MC, NUMA (repeatable).
        #[arg(long = "kernel-config", value_name = "NAME=y|n")]
        kernel_config: Vec<String>,
        /// Architecture's level table: x86 leaves the package level out when a package spans nodes.
        #[arg(long, default_value = "generic", value_parser = ["generic", "x86"])]
        arch: String,
        /// Build domains without the CLS level (same as --kernel-config SCHED_CLUSTER=n).
        #[arg(long)]
        no_cls: bool,
        /// Leave SD_CLUSTER off the CLS level (kernels 5.16 to 6.6).
        #[arg(long)]
        no_sd_cluster: bool,
        /// Default imbalance_pct of sd_init() (default: the kernel's, 117; 125 before 5.10).
        #[arg(long, value_name = "PCT", value_parser = crate::args::int_in::<u32>(100, 1000))]
        imbalance_pct: Option<u32>,
    },
}

/// The kernel profile and the domain options `show` builds with.
struct KernelChoice {
    /// Profile name plus overrides, e.g. `linux-6.1+SCHED_CLUSTER=n`.
    name: String,
    opts: DomainOptions,
}

fn kernel_choice(
    kernel: &str,
    kernel_config: &[String],
    arch: &str,
    no_cls: bool,
    no_sd_cluster: bool,
    imbalance_pct: Option<u32>,
) -> Result<KernelChoice> {
    let mut f = Features::kernel(kernel).context("--kernel")?;
    // a name given twice must keep its value
    crate::args::name_values(kernel_config, "--kernel-config", "NAME=y|n")?;
    for kv in kernel_config {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("--kernel-config {kv:?}: expected NAME=y|n"))?;
        f.set_config(k, v)
            .with_context(|| format!("--kernel-config {kv}"))?;
    }
    let mut opts = f.domain_options();
    opts.arch = Arch::from_name(arch).unwrap_or_default();
    if no_cls {
        opts.set_config(ConfigOption::SchedCluster, false);
    }
    if no_sd_cluster {
        opts.cluster_flag = false;
    }
    if let Some(pct) = imbalance_pct {
        opts.imbalance_pct = pct;
    }
    Ok(KernelChoice {
        name: f.name(),
        opts,
    })
}

pub fn run(cmd: TopologyCommand) -> Result<ExitCode> {
    match cmd {
        TopologyCommand::List => {
            let width = presets().iter().map(|p| p.0.len()).max().unwrap_or(0);
            for (name, desc) in presets() {
                println!("{name:<width$}  {desc}");
            }
        }
        TopologyCommand::Show {
            preset: name,
            sysfs,
            hwloc,
            json,
            domains,
            kernel,
            kernel_config,
            arch,
            no_cls,
            no_sd_cluster,
            imbalance_pct,
        } => {
            let k = kernel_choice(
                &kernel,
                &kernel_config,
                &arch,
                no_cls,
                no_sd_cluster,
                imbalance_pct,
            )?;
            let topo = match (name, sysfs, hwloc) {
                (_, Some(dir), _) => from_sysfs(&dir)?,
                (_, _, Some(file)) => from_hwloc_xml(&file)?,
                (name, None, None) => topology::machine(name.as_deref().unwrap_or(DEFAULT_PRESET))?,
            };
            // an smp: machine with every default written out
            let smp = match topo.name().strip_prefix(SMP_PREFIX) {
                Some(body) => Some(SmpSpec::parse(body)?.to_string()),
                None => None,
            };
            let sd = SchedDomains::build(&topo, &k.opts);
            match (domains, json) {
                (true, true) => println!(
                    "{}",
                    serde_json::to_string_pretty(&domains_json(&topo, &sd, &k))?
                ),
                (true, false) => {
                    for line in sd.kernel_lines() {
                        println!("{line}");
                    }
                }
                (false, true) => {
                    let mut v = to_json(&topo, &sd, &k);
                    if let Some(full) = smp {
                        v["smp"] = Value::from(full);
                    }
                    println!("{}", serde_json::to_string_pretty(&v)?)
                }
                (false, false) => print!("{}", render_text(&topo, &sd, &k, smp.as_deref())),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

// ------------------------------------------------------------------ shapes

/// One row of a CPU's domain table; CPUs with equal row lists share a shape.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    level: Level,
    name: &'static str,
    distance: Option<u32>,
    span_weight: usize,
    groups: usize,
    imbalance_pct: u32,
    flags: u32,
}

fn rows(sd: &SchedDomains, cpu: usize) -> Vec<Row> {
    sd.domains(cpu)
        .iter()
        .map(|d| Row {
            level: d.level,
            name: d.name,
            distance: match d.level {
                Level::Numa(k) => sd.numa_distances().get(k as usize).copied(),
                _ => None,
            },
            span_weight: d.span_weight,
            groups: d.groups.len(),
            imbalance_pct: d.imbalance_pct,
            flags: d.flags,
        })
        .collect()
}

/// Distinct domain shapes and the CPUs having each, by first CPU.
fn shapes(sd: &SchedDomains) -> Vec<(CpuMask, Vec<Row>)> {
    let mut out: Vec<(CpuMask, Vec<Row>)> = Vec::new();
    for cpu in 0..sd.nr_cpus() {
        let r = rows(sd, cpu);
        match out.iter_mut().find(|(_, s)| *s == r) {
            Some((m, _)) => m.set(cpu),
            None => out.push((CpuMask::from_cpus([cpu]), r)),
        }
    }
    out
}

fn distinct<T: Ord + Copy>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = it.collect();
    v.sort_unstable();
    v.dedup();
    v
}

// -------------------------------------------------------------------- JSON

/// `--domains --json`: every CPU's domains with every parameter the load
/// balancer reads, groups in the kernel's order.
fn domains_json(t: &Topology, sd: &SchedDomains, k: &KernelChoice) -> Value {
    let cpus: Vec<Value> = (0..sd.nr_cpus())
        .map(|cpu| {
            let doms: Vec<Value> = sd
                .domains(cpu)
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    json!({
                        "domain": i,
                        "name": d.name,
                        "span": d.span.to_string(),
                        "span_weight": d.span_weight,
                        "flags": sd.flag_names(d.flags),
                        "imbalance_pct": d.imbalance_pct,
                        "cache_nice_tries": d.cache_nice_tries,
                        "busy_factor": d.busy_factor,
                        "min_interval_ms": d.min_interval_ms,
                        "max_interval_ms": d.max_interval_ms,
                        "imb_numa_nr": d.imb_numa_nr,
                        "groups": d.groups.iter().map(|g| json!({
                            "span": g.span.to_string(),
                            "balance_mask": g.balance_mask.to_string(),
                            "weight": g.weight(),
                            "cores": g.cores,
                            "flags": sd.flag_names(g.flags),
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({"cpu": cpu, "domains": doms})
        })
        .collect();
    json!({
        "name": t.name(),
        "kernel": k.name,
        "arch": k.opts.arch.name(),
        "config": config_json(&k.opts),
        "cpus": cpus,
    })
}

fn config_json(o: &DomainOptions) -> Value {
    ConfigOption::ALL
        .iter()
        .map(|&c| (c.name().to_string(), Value::Bool(o.config(c))))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn to_json(t: &Topology, sd: &SchedDomains, k: &KernelChoice) -> Value {
    let n = t.nr_cpus();
    let nodes: Vec<Value> = (0..t.nr_nodes())
        .map(|i| json!({"id": i, "cpus": t.node_cpus(i).to_string()}))
        .collect();
    let distance: Vec<Vec<u32>> = t.node_distances().to_vec();
    // Per level (across CPUs): which span weights occur and on how many CPUs.
    struct Agg {
        name: &'static str,
        weights: Vec<usize>,
        cpus: usize,
        flags: u32,
        imbalance_pct: u32,
        distance: Option<u32>,
    }
    let mut levels: BTreeMap<Level, Agg> = BTreeMap::new();
    for cpu in 0..n {
        for r in rows(sd, cpu) {
            let e = levels.entry(r.level).or_insert(Agg {
                name: r.name,
                weights: Vec::new(),
                cpus: 0,
                flags: 0,
                imbalance_pct: r.imbalance_pct,
                distance: r.distance,
            });
            e.weights.push(r.span_weight);
            e.cpus += 1;
            e.flags |= r.flags;
        }
    }
    let levels: Vec<Value> = levels
        .into_values()
        .map(|a| {
            json!({
                "name": a.name,
                "distance": a.distance,
                "span_weight": distinct(a.weights.into_iter()),
                "cpus": a.cpus,
                "flags": sd.flag_names(a.flags),
                "imbalance_pct": a.imbalance_pct,
            })
        })
        .collect();
    let shapes: Vec<Value> = shapes(sd)
        .into_iter()
        .map(|(cpus, rows)| {
            json!({
                "cpus": cpus.to_string(),
                "domains": rows.iter().map(|r| json!({
                    "name": r.name,
                    "distance": r.distance,
                    "span_weight": r.span_weight,
                    "groups": r.groups,
                    "flags": sd.flag_names(r.flags),
                    "imbalance_pct": r.imbalance_pct,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let llc_sizes = distinct((0..n).map(|c| sd.sd_llc_size(c)));
    let cluster_sizes = distinct((0..n).map(|c| t.cluster_mask(c).weight()));
    // Caches summarised by kind: level, type, size, CPUs per instance.
    type CacheKey = (u8, u8, Option<u64>, usize);
    let mut cache_kinds: BTreeMap<CacheKey, (String, usize)> = BTreeMap::new();
    for c in t.caches() {
        let key = (c.level, c.kind as u8, c.size_kib, c.shared_cpus.weight());
        cache_kinds
            .entry(key)
            .or_insert_with(|| (format!("{:?}", c.kind).to_lowercase(), 0))
            .1 += 1;
    }
    let caches: Vec<Value> = cache_kinds
        .into_iter()
        .map(|((level, _, size_kib, shared), (kind, instances))| {
            json!({"level": level, "kind": kind, "size_kib": size_kib, "cpus_per_instance": shared, "instances": instances})
        })
        .collect();
    json!({
        "name": t.name(),
        "kernel": k.name,
        "arch": k.opts.arch.name(),
        "config": config_json(&k.opts),
        "nr_cpus": n,
        "nr_packages": t.nr_packages(),
        "nr_nodes": t.nr_nodes(),
        "nr_llcs": t.nr_llcs(),
        "nr_clusters": t.nr_clusters(),
        "nr_cores": t.nr_cores(),
        "threads_per_core": t.threads_per_core(),
        "smt_present": sd.smt_present(),
        "cluster_active": sd.cluster_active(),
        "nodes": nodes,
        "distance": distance,
        "llc_size": llc_sizes.last(),
        "llc_sizes": llc_sizes,
        "cluster_size": cluster_sizes.last(),
        "cluster_sizes": cluster_sizes,
        "levels": levels,
        "shapes": shapes,
        "caches": caches,
    })
}

// -------------------------------------------------------------------- text

/// A grouping level of the tree: its name and each CPU's group mask.
struct TreeLevel<'a> {
    name: &'static str,
    mask: Box<dyn Fn(usize) -> &'a CpuMask + 'a>,
    ids: Box<dyn Fn(usize) -> usize + 'a>,
}

fn cache_note(t: &Topology, m: &CpuMask) -> String {
    let v = distinct_labels(t.caches().iter().filter(|c| c.shared_cpus == *m));
    if v.is_empty() {
        String::new()
    } else {
        format!("  ({})", v.join(", "))
    }
}

fn push_wrapped(out: &mut String, indent: &str, head: &str, items: &[String]) {
    let mut line = format!("{indent}{head}");
    let cont = " ".repeat(indent.len() + head.len());
    for it in items {
        if line.len() + it.len() + 1 > 100 && line.len() > cont.len() {
            out.push_str(line.trim_end());
            out.push('\n');
            line = cont.clone();
        }
        line.push_str(it);
        line.push(' ');
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

fn tree(
    t: &Topology,
    levels: &[TreeLevel],
    i: usize,
    within: &CpuMask,
    indent: usize,
    out: &mut String,
) {
    let pad = " ".repeat(indent);
    if i == levels.len() {
        // Cores: one compact line, only with SMT (otherwise it would repeat
        // the CPU list of the line above).
        if t.threads_per_core() == 1 {
            return;
        }
        let mut seen = CpuMask::new();
        let mut cores = Vec::new();
        for cpu in within.iter() {
            if !seen.test(cpu) {
                let m = t.smt_mask(cpu);
                seen.or_assign(m);
                cores.push(m.to_string());
            }
        }
        push_wrapped(out, &pad, "cores (threads): ", &cores);
        return;
    }
    // The last level above single-thread cores: one compact line, unless
    // its groups have caches to show.
    if i + 1 == levels.len() && t.threads_per_core() == 1 {
        let mut seen = CpuMask::new();
        let mut groups = Vec::new();
        for cpu in within.iter() {
            if !seen.test(cpu) {
                let g = (levels[i].mask)(cpu);
                seen.or_assign(g);
                groups.push(g);
            }
        }
        if groups.iter().all(|g| cache_note(t, g).is_empty()) {
            let items: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
            push_wrapped(out, &pad, &format!("{}s: ", levels[i].name), &items);
            return;
        }
    }
    let mut seen = CpuMask::new();
    for cpu in within.iter() {
        if seen.test(cpu) {
            continue;
        }
        let g = (levels[i].mask)(cpu);
        seen.or_assign(g);
        // Fold following levels whose group is the same set into this line.
        let mut labels = vec![format!("{} {}", levels[i].name, (levels[i].ids)(cpu))];
        let mut j = i + 1;
        while j < levels.len() && (levels[j].mask)(cpu) == g {
            labels.push(format!("{} {}", levels[j].name, (levels[j].ids)(cpu)));
            j += 1;
        }
        let _ = writeln!(
            out,
            "{pad}{} [CPUs {g}]{}",
            labels.join(" = "),
            cache_note(t, g)
        );
        tree(t, levels, j, g, indent + 2, out);
    }
}

/// The text form; `smp` is the full spec of an `smp:` machine, printed
/// under the first line.
fn render_text(t: &Topology, sd: &SchedDomains, k: &KernelChoice, smp: Option<&str>) -> String {
    let opts = &k.opts;
    let mut out = String::new();
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let _ = writeln!(
        out,
        "{}: {}, {}, {}, {}, {}, {}, {} per core",
        t.name(),
        plural(t.nr_cpus(), "CPU"),
        plural(t.nr_packages(), "package"),
        plural(t.nr_nodes(), "node"),
        plural(t.nr_llcs(), "LLC"),
        plural(t.nr_clusters(), "cluster"),
        plural(t.nr_cores(), "core"),
        plural(t.threads_per_core(), "thread"),
    );
    if let Some(full) = smp {
        let _ = writeln!(out, "with every default: {full}");
    }
    // Private caches once, as a summary.
    let private: Vec<String> = distinct_labels(
        t.caches()
            .iter()
            .filter(|c| c.shared_cpus == *t.smt_mask(c.shared_cpus.first().unwrap_or(0))),
    );
    if !private.is_empty() {
        let _ = writeln!(out, "per-core caches: {}", private.join(", "));
    }
    out.push('\n');

    // Level order: package > node > LLC > cluster, swapping where this
    // machine nests the other way (a package inside a node; an LLC inside a
    // cluster, as on Ampere Altra).
    let n = t.nr_cpus();
    let inside = |a: &dyn Fn(usize) -> CpuMask, b: &dyn Fn(usize) -> CpuMask| {
        (0..n).all(|c| a(c).is_subset(&b(c)))
    };
    let mut levels: Vec<TreeLevel> = vec![
        TreeLevel {
            name: "package",
            mask: Box::new(|c| t.package_mask(c)),
            ids: Box::new(|c| t.place(c).package),
        },
        TreeLevel {
            name: "node",
            mask: Box::new(|c| t.node_mask(c)),
            ids: Box::new(|c| t.place(c).node),
        },
        TreeLevel {
            name: "LLC",
            mask: Box::new(|c| t.llc_mask(c)),
            ids: Box::new(|c| t.place(c).llc),
        },
        TreeLevel {
            name: "cluster",
            mask: Box::new(|c| t.cluster_mask(c)),
            ids: Box::new(|c| t.place(c).cluster),
        },
    ];
    if !inside(&|c| t.node_mask(c).clone(), &|c| t.package_mask(c).clone()) {
        levels.swap(0, 1);
    }
    // An L3 shared by several nodes (sub-NUMA clustering): LLC above node.
    if !inside(&|c| t.llc_mask(c).clone(), &|c| t.node_mask(c).clone()) {
        let (a, b) = (
            levels.iter().position(|l| l.name == "node").unwrap_or(1),
            levels.iter().position(|l| l.name == "LLC").unwrap_or(2),
        );
        levels.swap(a, b);
    }
    if !inside(&|c| t.cluster_mask(c).clone(), &|c| t.llc_mask(c).clone()) {
        levels.swap(2, 3);
    }
    // A level whose groups are the cores (no clusters; Altra's per-core
    // "LLC") says nothing the core line does not; leave it out.
    levels.retain(|l| l.name == "package" || (0..n).any(|c| (l.mask)(c) != t.smt_mask(c)));
    tree(t, &levels, 0, t.all_cpus(), 0, &mut out);

    // Sched domains, per distinct shape.
    let _ = writeln!(
        out,
        "\nsched domains ({}, {}: {}; SD_CLUSTER {}; default imbalance_pct {}):",
        k.name,
        opts.arch.name(),
        opts.config_string(),
        if opts.cluster_flag { "on" } else { "off" },
        opts.imbalance_pct
    );
    for (cpus, rows) in shapes(sd) {
        let _ = writeln!(out, "CPUs {cpus}:");
        if rows.is_empty() {
            let _ = writeln!(out, "  (no domains)");
            continue;
        }
        let _ = writeln!(
            out,
            "  {:<5} {:>4} {:>5} {:>6} {:>4}  flags",
            "level", "dist", "span", "groups", "imb"
        );
        for r in &rows {
            let dist = r.distance.map_or("-".to_string(), |d| d.to_string());
            let _ = writeln!(
                out,
                "  {:<5} {:>4} {:>5} {:>6} {:>4}  {}",
                r.name,
                dist,
                r.span_weight,
                r.groups,
                r.imbalance_pct,
                sd.flag_names(r.flags).join(" ")
            );
        }
    }
    let first = 0;
    let llc = sd.sd_llc(first).map_or("none".to_string(), |d| {
        format!("{} ({} CPUs)", d.name, d.span_weight)
    });
    let _ = writeln!(
        out,
        "\nsd_llc of CPU 0: {llc}; sd_llc_size: {}; {}; smt_present: {}; cluster_active: {}",
        distinct((0..n).map(|c| sd.sd_llc_size(c)))
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        plural(sd.nr_llcs(), "sd_llc_id"),
        yes_no(sd.smt_present()),
        yes_no(sd.cluster_active()),
    );
    out
}

fn distinct_labels<'a>(it: impl Iterator<Item = &'a CacheInfo>) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for c in it {
        let l = c.label();
        if !v.contains(&l) {
            v.push(l);
        }
    }
    v
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}
