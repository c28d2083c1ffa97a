//! The domains listed the way a booted kernel shows them: one line per CPU
//! and level with the level name, span, imbalance_pct, balance interval
//! bounds, flags (`/sys/kernel/debug/sched/domains/cpuN/domainM/`) and the
//! groups in list order (the `sched_verbose` boot log).

use super::SchedDomains;

impl SchedDomains {
    /// One line per CPU and domain, bottom-up:
    /// `cpu0 domain1 name=MC span=0-3 imb=117 min_int=4 max_int=8
    /// flags=BALANCE_NEWIDLE,... groups=0-1|2-3` (flag names as the
    /// modelled kernel spells them, groups separated by `|`, the CPU's own
    /// group first). A CPU without domains has no line.
    ///
    /// ```
    /// use topology::{preset, DomainOptions, SchedDomains};
    /// let sd = SchedDomains::build(&preset("kunpeng920-node")?, &DomainOptions::linux(6, 1));
    /// assert_eq!(
    ///     sd.kernel_lines()[1],
    ///     "cpu0 domain1 name=MC span=0-23 imb=117 min_int=24 max_int=48 \
    ///      flags=BALANCE_NEWIDLE,BALANCE_EXEC,BALANCE_FORK,WAKE_AFFINE,SHARE_PKG_RESOURCES,PREFER_SIBLING \
    ///      groups=0-3|4-7|8-11|12-15|16-19|20-23"
    /// );
    /// # Ok::<(), topology::TopologyError>(())
    /// ```
    pub fn kernel_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for cpu in 0..self.nr_cpus() {
            for (k, d) in self.domains(cpu).iter().enumerate() {
                let groups: Vec<String> = d.groups.iter().map(|g| g.span.to_string()).collect();
                out.push(format!(
                    "cpu{cpu} domain{k} name={} span={} imb={} min_int={} max_int={} flags={} groups={}",
                    d.name,
                    d.span,
                    d.imbalance_pct,
                    d.min_interval_ms,
                    d.max_interval_ms,
                    self.flag_names(d.flags).join(","),
                    groups.join("|"),
                ));
            }
        }
        out
    }
}
