//! The guest's sched domains as the kernel built them, in the listing
//! format of `topology`'s `SchedDomains::kernel_lines` (one line per CPU
//! and level: name, span, imbalance_pct, balance intervals, flags, groups),
//! and the differences from the domains schedlab builds for the same
//! machine and kernel version.
//!
//! Sources in the guest: /sys/kernel/debug/sched/domains/cpuN/domainM/
//! (`name`, `imbalance_pct`, `min_interval`, `max_interval`, `flags`: the
//! SD_* names separated by spaces, kernel/sched/debug.c `sd_flags_show`,
//! 5.13+) and the `sched_verbose` boot log (kernel/sched/topology.c
//! `sched_domain_debug_one`: `CPUn attaching sched-domain(s):`, then per
//! level `domain-K: span=S level=NAME` and `groups: C:{ span=S ... }, ...`).

use crate::error::OracleError;
use std::collections::BTreeMap;
use topology::{Arch, DomainOptions, SchedDomains, Topology};

/// One domain of one CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DomainLine {
    /// CPU.
    pub cpu: usize,
    /// Level index (0 = lowest).
    pub level: usize,
    /// Fields by name, in listing order: name, span, imb, min_int, max_int, flags, groups.
    pub fields: BTreeMap<String, String>,
}

/// The listing's field order.
pub const FIELDS: [&str; 7] = [
    "name", "span", "imb", "min_int", "max_int", "flags", "groups",
];

impl DomainLine {
    /// The line as `kernel_lines` prints it.
    pub fn render(&self) -> String {
        let mut s = format!("cpu{} domain{}", self.cpu, self.level);
        for f in FIELDS {
            s.push_str(&format!(
                " {f}={}",
                self.fields.get(f).map(String::as_str).unwrap_or("?")
            ));
        }
        s
    }
}

fn report(msg: impl Into<String>) -> OracleError {
    OracleError::Report(msg.into())
}

/// `cpu3` -> 3.
fn num_after(s: &str, prefix: &str) -> Option<usize> {
    s.strip_prefix(prefix)?.parse().ok()
}

/// Parse the guest's debugfs lines (`cpuN domainM name=.. imb=.. min_int=..
/// max_int=.. flags=SD_A SD_B ...`) and its dmesg into domain lines.
pub fn parse(debugfs: &str, dmesg: &str) -> Result<Vec<DomainLine>, OracleError> {
    let verbose = parse_sched_verbose(dmesg);
    let mut out = Vec::new();
    for line in debugfs.lines().filter(|l| !l.trim().is_empty()) {
        let mut it = line.splitn(3, ' ');
        let (c, d, rest) = (it.next(), it.next(), it.next().unwrap_or(""));
        let cpu = c
            .and_then(|c| num_after(c, "cpu"))
            .ok_or_else(|| report(format!("domains line without a CPU: {line}")))?;
        let level = d
            .and_then(|d| num_after(d, "domain"))
            .ok_or_else(|| report(format!("domains line without a domain: {line}")))?;
        let (head, flags) = rest
            .split_once("flags=")
            .ok_or_else(|| report(format!("domains line without flags: {line}")))?;
        let mut fields = BTreeMap::new();
        for kv in head.split_whitespace() {
            if let Some((k, v)) = kv.split_once('=') {
                fields.insert(k.to_string(), v.to_string());
            }
        }
        let flags: Vec<&str> = flags
            .split_whitespace()
            .map(|f| f.strip_prefix("SD_").unwrap_or(f))
            .collect();
        fields.insert("flags".into(), flags.join(","));
        if let Some((span, groups)) = verbose.get(&(cpu, level)) {
            fields.insert("span".into(), span.clone());
            fields.insert("groups".into(), groups.join("|"));
        }
        out.push(DomainLine { cpu, level, fields });
    }
    out.sort_by_key(|l| (l.cpu, l.level));
    Ok(out)
}

/// (cpu, level) -> (span, groups in list order) from the `sched_verbose`
/// log; the last listing of a CPU wins (domains can be rebuilt).
pub fn parse_sched_verbose(dmesg: &str) -> BTreeMap<(usize, usize), (String, Vec<String>)> {
    let mut out: BTreeMap<(usize, usize), (String, Vec<String>)> = BTreeMap::new();
    let mut cpu: Option<usize> = None;
    let mut level: Option<usize> = None;
    for raw in dmesg.lines() {
        // drop the "[    0.994434] " timestamp
        let line = match raw.trim_start().strip_prefix('[') {
            Some(r) => r.split_once(']').map(|(_, b)| b).unwrap_or(r),
            None => raw,
        }
        .trim();
        if let Some(rest) = line.strip_prefix("CPU") {
            if let Some((n, tail)) = rest.split_once(' ') {
                if tail.starts_with("attaching sched-domain") {
                    cpu = n.parse().ok();
                    if let Some(c) = cpu {
                        out.retain(|k, _| k.0 != c);
                    }
                    level = None;
                    continue;
                }
                if tail.starts_with("attaching NULL") {
                    cpu = None;
                    continue;
                }
            }
        }
        let Some(c) = cpu else { continue };
        if let Some(rest) = line.strip_prefix("domain-") {
            let (k, tail) = rest.split_once(':').unwrap_or((rest, ""));
            level = k.parse().ok();
            let span = field(tail, "span=").unwrap_or_default();
            if let Some(l) = level {
                out.insert((c, l), (span, Vec::new()));
            }
        } else if let Some(rest) = line.strip_prefix("groups:") {
            if let Some(l) = level {
                let groups: Vec<String> =
                    rest.split('}').filter_map(|g| field(g, "span=")).collect();
                if let Some(e) = out.get_mut(&(c, l)) {
                    e.1 = groups;
                }
            }
        }
    }
    out
}

/// The value after `key` up to the next space or brace.
fn field(s: &str, key: &str) -> Option<String> {
    let i = s.find(key)?;
    let v: String = s[i + key.len()..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '}' && *c != ',')
        .collect();
    (!v.is_empty()).then_some(v)
}

/// `6.1.0-57-cloud-amd64` -> (6, 1).
pub fn kernel_version(uname: &str) -> Option<(u32, u32)> {
    let mut it = uname.trim().split(['.', '-', '+']);
    let a = it.next()?.parse().ok()?;
    let b = it.next()?.parse().ok()?;
    Some((a, b))
}

/// The domains schedlab builds for `topo` under kernel `version` on x86.
pub fn model_lines(topo: &Topology, version: (u32, u32)) -> Vec<DomainLine> {
    let opts = DomainOptions {
        arch: Arch::X86,
        ..DomainOptions::linux(version.0, version.1)
    };
    let text = SchedDomains::build(topo, &opts).kernel_lines().join("\n");
    parse_listing(&text)
}

/// Parse `kernel_lines` output (or a `kernel_domains.txt` fixture).
pub fn parse_listing(text: &str) -> Vec<DomainLine> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut it = line.split_whitespace();
        let cpu = it.next().and_then(|c| num_after(c, "cpu"));
        let level = it.next().and_then(|d| num_after(d, "domain"));
        let (Some(cpu), Some(level)) = (cpu, level) else {
            continue;
        };
        let fields = it
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        out.push(DomainLine { cpu, level, fields });
    }
    out
}

/// Every difference between the kernel's domains and ours, one line each
/// (empty when they agree): a level one side lacks, or a field that differs.
pub fn differences(kernel: &[DomainLine], ours: &[DomainLine]) -> Vec<String> {
    let key = |l: &DomainLine| (l.cpu, l.level);
    let k: BTreeMap<_, _> = kernel.iter().map(|l| (key(l), l)).collect();
    let o: BTreeMap<_, _> = ours.iter().map(|l| (key(l), l)).collect();
    let mut keys: Vec<_> = k.keys().chain(o.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for (cpu, level) in keys {
        match (k.get(&(cpu, level)), o.get(&(cpu, level))) {
            (Some(a), None) => out.push(format!(
                "cpu{cpu} domain{level}: only the kernel has it: {}",
                a.render()
            )),
            (None, Some(b)) => out.push(format!(
                "cpu{cpu} domain{level}: only schedlab has it: {}",
                b.render()
            )),
            (Some(a), Some(b)) => {
                for f in FIELDS {
                    let (x, y) = (a.fields.get(f), b.fields.get(f));
                    if x != y {
                        out.push(format!(
                            "cpu{cpu} domain{level} {f}: kernel {} schedlab {}",
                            x.map(String::as_str).unwrap_or("(none)"),
                            y.map(String::as_str).unwrap_or("(none)")
                        ));
                    }
                }
            }
            (None, None) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DMESG: &str = "\
[    0.994434] CPU0 attaching sched-domain(s):
[    0.994522]  domain-0: span=0-1 level=SMT
[    0.994809]   groups: 0:{ span=0 }, 1:{ span=1 }
[    0.994964]   domain-1: span=0-3 level=MC
[    0.995000]    groups: 0:{ span=0-1 cap=2048 }, 2:{ span=2-3 cap=2048 }
[    0.995100] CPU1 attaching NULL sched-domain.
";

    #[test]
    fn sched_verbose_spans_and_groups() {
        let v = parse_sched_verbose(DMESG);
        assert_eq!(
            v[&(0, 0)],
            ("0-1".to_string(), vec!["0".to_string(), "1".to_string()])
        );
        assert_eq!(v[&(0, 1)].1, vec!["0-1".to_string(), "2-3".to_string()]);
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn debugfs_and_dmesg_make_listing_lines() {
        let dbg = "cpu0 domain0 name=SMT imb=110 min_int=2 max_int=4 flags=SD_BALANCE_NEWIDLE SD_SHARE_CPUCAPACITY \n\
                   cpu0 domain1 name=MC imb=117 min_int=4 max_int=8 flags=SD_BALANCE_NEWIDLE \n";
        let l = parse(dbg, DMESG).unwrap();
        assert_eq!(
            l[0].render(),
            "cpu0 domain0 name=SMT span=0-1 imb=110 min_int=2 max_int=4 \
             flags=BALANCE_NEWIDLE,SHARE_CPUCAPACITY groups=0|1"
        );
        assert_eq!(l[1].fields["groups"], "0-1|2-3");
        assert!(parse("garbage", "").is_err());
    }

    #[test]
    fn versions() {
        assert_eq!(kernel_version("6.1.0-57-cloud-amd64"), Some((6, 1)));
        assert_eq!(kernel_version("6.12.115+deb12-cloud-amd64"), Some((6, 12)));
        assert_eq!(kernel_version("x"), None);
    }

    #[test]
    fn differences_name_the_field() {
        let a = parse_listing(
            "cpu0 domain0 name=SMT span=0-1 imb=110 min_int=2 max_int=4 flags=A groups=0|1",
        );
        let b = parse_listing("cpu0 domain0 name=SMT span=0-1 imb=117 min_int=2 max_int=4 flags=A groups=0|1\n\
                               cpu0 domain1 name=MC span=0-3 imb=117 min_int=4 max_int=8 flags=A groups=0-1|2-3");
        let d = differences(&a, &b);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[0], "cpu0 domain0 imb: kernel 110 schedlab 117");
        assert!(d[1].starts_with("cpu0 domain1: only schedlab has it"));
        assert!(differences(&a, &a).is_empty());
    }
}

#[cfg(test)]
mod fixture_tests {
    use super::*;
    use std::path::PathBuf;

    fn capture(kernel: &str, machine: &str) -> (String, String, String) {
        let d = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/guest-domains")
            .join(kernel)
            .join(machine);
        let r = |f: &str| std::fs::read_to_string(d.join(f)).unwrap();
        (r("uname.txt"), r("domains.txt"), r("dmesg.txt"))
    }

    fn guest(machine: &str) -> Topology {
        crate::qemu::QemuShape::of(&topology::preset(machine).unwrap())
            .unwrap()
            .guest_topology()
    }

    #[test]
    fn a_6_12_guest_matches_6_12_and_not_6_1() {
        let (uname, dbg, dmesg) = capture("6.12.115+deb12-cloud-amd64", "xeon-12c24t");
        let kernel = parse(&dbg, &dmesg).unwrap();
        assert_eq!(kernel.len(), 72);
        let v = kernel_version(&uname).unwrap();
        assert!(differences(&kernel, &model_lines(&guest("xeon-12c24t"), v)).is_empty());
        // the 6.1 model names the LLC flag SHARE_PKG_RESOURCES (6.12: SHARE_LLC)
        let d = differences(&kernel, &model_lines(&guest("xeon-12c24t"), (6, 1)));
        assert!(
            !d.is_empty() && d.iter().all(|l| l.contains(" flags: ")),
            "{d:?}"
        );
    }
}
