//! `sim --stats`: one line on stderr saying what the run cost the host, and
//! how much of it went into the modelled kernel's decisions (whose scan work
//! grows with the machine by design) rather than the engine's own event
//! handling (which should not). `scripts/bench-scale.sh` reads this line.

use sim::engine::PhaseTimes;

/// What a run cost the host, with the counts to normalise it by.
pub struct HostCost {
    /// Wall time of the run, seconds.
    pub wall_s: f64,
    /// Events the engine processed.
    pub events: u64,
    /// Wake-ups.
    pub wakeups: u64,
    /// Simulated time, ns.
    pub sim_ns: u64,
    /// Placement probes (run queues the wake-up path looked at).
    pub probes: u64,
    /// Host time and scan work of the policy's calls.
    pub phases: PhaseTimes,
}

/// The `--stats` line: `key=value` pairs, easy to read and to parse.
pub fn line(c: &HostCost) -> String {
    let ev = c.events.max(1) as f64;
    let wall_ns = c.wall_s * 1e9;
    let p = &c.phases;
    let policy = p.policy_ns() as f64;
    let engine = (wall_ns - policy).max(0.0);
    format!(
        "stats: events={} wall_s={:.3} events_per_s={:.0} ns_per_event={:.1} \
         engine_ns_per_event={:.1} placement_ns_per_event={:.1} balance_ns_per_event={:.1} \
         probes_per_event={:.3} balance_rq_reads_per_event={:.3} wakeups_per_wall_s={:.0} \
         wall_per_sim={:.3} peak_rss_mib={}",
        c.events,
        c.wall_s,
        c.events as f64 / c.wall_s.max(1e-9),
        wall_ns / ev,
        engine / ev,
        p.placement_ns as f64 / ev,
        p.balance_ns as f64 / ev,
        c.probes as f64 / ev,
        p.balance_rq_reads as f64 / ev,
        c.wakeups as f64 / c.wall_s.max(1e-9),
        c.wall_s / (c.sim_ns.max(1) as f64 / 1e9),
        peak_rss_mib().map_or("unknown".to_string(), |m| format!("{m:.1}")),
    )
}

/// This process's peak resident set (VmHWM in /proc/self/status), MiB.
fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_time_is_wall_time_less_the_policy_calls() {
        let c = HostCost {
            wall_s: 1.0,
            events: 1000,
            wakeups: 10,
            sim_ns: 2_000_000_000,
            probes: 500,
            phases: PhaseTimes {
                placement_ns: 100_000_000,
                placement_calls: 10,
                balance_ns: 300_000_000,
                balance_calls: 5,
                balance_rq_reads: 2000,
            },
        };
        let l = line(&c);
        assert!(l.contains(" ns_per_event=1000000.0 "), "{l}");
        assert!(l.contains(" engine_ns_per_event=600000.0 "), "{l}");
        assert!(l.contains(" placement_ns_per_event=100000.0 "), "{l}");
        assert!(l.contains(" balance_ns_per_event=300000.0 "), "{l}");
        assert!(l.contains(" probes_per_event=0.500 "), "{l}");
        assert!(l.contains(" balance_rq_reads_per_event=2.000 "), "{l}");
        assert!(l.contains(" wall_per_sim=0.500 "), "{l}");
    }

    #[test]
    fn peak_rss_is_read_on_linux() {
        assert!(peak_rss_mib().is_some_and(|m| m > 0.0));
    }
}
