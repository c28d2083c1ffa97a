//! What runs inside the guest and how its reports come back.
//!
//! The kernel's console is the first serial port (the host keeps it as a
//! log); reports go over the second (`/dev/ttyS1`, set raw) between marker
//! lines `@@SCHEDLAB-BEGIN name` and `@@SCHEDLAB-END name`. `@@SCHEDLAB-UP`
//! says the guest's userspace started (the boot time limit ends there),
//! `@@SCHEDLAB-STATUS n` is the command's exit status and `@@SCHEDLAB-DONE`
//! closes the stream; then the guest powers off.
//!
//! Sections: `uname` (`uname -r`), `domains` (one line per CPU and domain
//! from /sys/kernel/debug/sched/domains), `output` (the command's stdout),
//! `trace` (the tracefs `trace` file, events sched_waking, sched_wakeup,
//! sched_wakeup_new, sched_migrate_task, sched_switch), `dmesg` (with the
//! `sched_verbose` domain listing of the boot).

use crate::error::OracleError;
use std::collections::BTreeMap;

/// The kernel command line: console on ttyS0, the domain listing in the
/// log, a panic powers the guest off at once (qemu runs with -no-reboot).
pub const APPEND: &str = "console=ttyS0 loglevel=6 sched_verbose panic=-1 rdinit=/init";

/// The init script (busybox sh).
pub const INIT: &str = r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
OUT=/dev/ttyS1
stty -F $OUT raw -echo 2>/dev/null
echo "@@SCHEDLAB-UP" > $OUT
begin() { echo "@@SCHEDLAB-BEGIN $1" > $OUT; }
end() { echo "@@SCHEDLAB-END $1" > $OUT; }
begin uname; uname -r > $OUT; end uname
begin domains
for c in /sys/kernel/debug/sched/domains/cpu*; do
  for d in $c/domain*; do
    [ -d "$d" ] || continue
    echo "${c##*/} ${d##*/} name=$(cat $d/name) imb=$(cat $d/imbalance_pct) min_int=$(cat $d/min_interval) max_int=$(cat $d/max_interval) flags=$(cat $d/flags)" > $OUT
  done
done
end domains
T=/sys/kernel/tracing
echo 0 > $T/tracing_on
echo "$(cat /trace_kb 2>/dev/null || echo 2048)" > $T/buffer_size_kb
echo > $T/trace
for e in sched_waking sched_wakeup sched_wakeup_new sched_migrate_task sched_switch; do
  echo 1 > $T/events/sched/$e/enable
done
echo 1 > $T/tracing_on
begin output
sh /cmd > $OUT 2>/tmp/stderr
st=$?
end output
echo 0 > $T/tracing_on
echo "@@SCHEDLAB-STATUS $st" > $OUT
begin stderr; cat /tmp/stderr > $OUT; end stderr
begin trace; cat $T/trace > $OUT; end trace
begin dmesg; dmesg > $OUT; end dmesg
echo "@@SCHEDLAB-DONE" > $OUT
sync
poweroff -f
"#;

/// `/cmd`: `exec /bin/schedlab ARGS...` with every argument single-quoted.
pub fn command_file(args: &[String]) -> String {
    let mut s = String::from("exec /bin/schedlab");
    for a in args {
        s.push_str(" '");
        s.push_str(&a.replace('\'', r"'\''"));
        s.push('\'');
    }
    s.push('\n');
    s
}

/// The reports of one boot, read from the data port.
#[derive(Debug, Default)]
pub struct Reports {
    /// Whether userspace came up.
    pub up: bool,
    /// The command's exit status, once reported.
    pub status: Option<i32>,
    /// Whether the stream was closed.
    pub done: bool,
    /// Sections by name.
    pub sections: BTreeMap<String, String>,
}

impl Reports {
    /// A section's text (empty when absent).
    pub fn section(&self, name: &str) -> &str {
        self.sections.get(name).map(String::as_str).unwrap_or("")
    }

    /// A section that must be there.
    pub fn require(&self, name: &str) -> Result<&str, OracleError> {
        self.sections
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| OracleError::Report(format!("the guest sent no {name} section")))
    }
}

/// Parse the data port's bytes (serial line endings tolerated).
pub fn parse_reports(data: &str) -> Reports {
    let mut r = Reports::default();
    let mut open: Option<(String, String)> = None;
    for raw in data.split('\n') {
        let line = raw.trim_end_matches('\r');
        if let Some((name, body)) = open.as_mut() {
            if line.strip_prefix("@@SCHEDLAB-END ") == Some(name.as_str()) {
                let (n, b) = open.take().unwrap();
                r.sections.insert(n, b);
            } else {
                body.push_str(line);
                body.push('\n');
            }
            continue;
        }
        if line == "@@SCHEDLAB-UP" {
            r.up = true;
        } else if line == "@@SCHEDLAB-DONE" {
            r.done = true;
        } else if let Some(n) = line.strip_prefix("@@SCHEDLAB-BEGIN ") {
            open = Some((n.to_string(), String::new()));
        } else if let Some(s) = line.strip_prefix("@@SCHEDLAB-STATUS ") {
            r.status = s.trim().parse().ok();
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        let c = command_file(&["kernel".into(), "it's".into()]);
        assert_eq!(c, "exec /bin/schedlab 'kernel' 'it'\\''s'\n");
    }

    #[test]
    fn sections_and_markers() {
        let d = "noise\r\n@@SCHEDLAB-UP\r\n@@SCHEDLAB-BEGIN uname\r\n6.1.0\r\n@@SCHEDLAB-END uname\r\n\
                 @@SCHEDLAB-STATUS 3\r\n@@SCHEDLAB-BEGIN trace\r\na\r\nb\r\n@@SCHEDLAB-END trace\r\n@@SCHEDLAB-DONE\r\n";
        let r = parse_reports(d);
        assert!(r.up && r.done);
        assert_eq!(r.status, Some(3));
        assert_eq!(r.section("uname"), "6.1.0\n");
        assert_eq!(r.section("trace"), "a\nb\n");
        assert!(r.require("dmesg").is_err());
    }

    #[test]
    fn unterminated_section_is_dropped() {
        let r = parse_reports("@@SCHEDLAB-UP\n@@SCHEDLAB-BEGIN trace\nhalf");
        assert!(r.up && !r.done);
        assert!(r.sections.is_empty());
    }
}
