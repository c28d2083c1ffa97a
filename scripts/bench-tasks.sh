#!/usr/bin/env bash
# How the simulator's cost per event grows with the number of tasks on one
# machine (issue 38 item 4): simulated hackbench (-g GROUPS, 40 tasks a
# group) on the default machine, one row each, from `sim --stats`: groups,
# tasks, events, wall ns per event, the engine's own part, the parts spent
# in wake-up placement and load balancing, and the wake-ups per event (the
# simulated kernel's work per event: it grows with the tasks in these runs,
# as more of them wait on longer queues). Start-up runs (-l 1: the forks
# and the first messages, thousands of tasks queued at once) for 100, 250,
# 625 and 1250 groups, and steady-state runs (-l 50) for 100 and 400; then
# the growth of the engine's ns per event, largest over smallest, for each
# set, also per wake-up. The modelled kernel's run-queue work is O(log n)
# in the tasks queued, and so is the engine's (its timeline is a tree).
#
# Usage: scripts/bench-tasks.sh
# Environment: SCHEDLAB (default: a release build of this tree), KERNEL (a
# kernel profile for every run, e.g. linux-5.15 for a CFS one; default: the
# simulator's default profile), RUNS (rounds over all the runs; the median
# wall time of each run's rounds is used; default 3), START (the start-up
# group counts, default "100 250 625 1250"), STEADY (the steady-state group
# counts, default "100 400").
#
# Timing depends on the host and its load: compare builds on one quiet
# machine, back to back.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${SCHEDLAB:-}" ]; then
    (cd "$root" && cargo build --release -q -p schedlab)
    SCHEDLAB="${CARGO_TARGET_DIR:-$root/target}/release/schedlab"
fi
runs=${RUNS:-3}
read -r -a start <<<"${START:-100 250 625 1250}"
read -r -a steady <<<"${STEADY:-100 400}"
cases=()
for g in "${start[@]}"; do cases+=("$g 1"); done
for g in "${steady[@]}"; do cases+=("$g 50"); done
rows=$(mktemp)
raw=$(mktemp)
trap 'rm -f "$rows" "$raw"' EXIT

printf "%6s %6s %6s %10s %9s %9s %9s %9s %9s %8s\n" groups loops tasks events ns/event engine-ns place-ns bal-ns wakeups/ev rss-MiB
# Rounds over all the cases, not all the runs of one case and then the next:
# a stretch of load on the shared host then slows one run of every case.
for _ in $(seq "$runs"); do
    for i in "${!cases[@]}"; do
        read -r g l <<<"${cases[$i]}"
        "$SCHEDLAB" sim hackbench -g "$g" -l "$l" ${KERNEL:+--kernel "$KERNEL"} --stats 2>&1 >/dev/null \
            | grep '^stats: ' | sed "s|^|$i |" >>"$raw"
    done
done
for i in "${!cases[@]}"; do
    read -r g l <<<"${cases[$i]}"
    grep "^$i stats: " "$raw" | python3 -c '
import sys
rows = []
for line in sys.stdin:
    rows.append(dict(f.split("=", 1) for f in line.split()[2:]))
rows.sort(key=lambda d: float(d["wall_s"]))
d = rows[len(rows) // 2]
f = lambda k: float(d[k])
g, l = int(sys.argv[1]), int(sys.argv[2])
wakeups = f("wakeups_per_wall_s") * f("wall_s") / f("events")
print("%6d %6d %6d %10d %9.1f %9.1f %9.1f %9.1f %9.3f %8s" % (
    g, l, 40 * g, int(d["events"]), f("ns_per_event"), f("engine_ns_per_event"),
    f("placement_ns_per_event"), f("balance_ns_per_event"), wakeups, d["peak_rss_mib"]))
' "$g" "$l" | tee -a "$rows"
done
# The growth of the engine's own cost with the tasks, per set of runs.
python3 -c '
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for loops in sorted({r[1] for r in rows}, key=int):
    set_ = [r for r in rows if r[1] == loops]
    lo = min(set_, key=lambda r: int(r[0]))
    hi = max(set_, key=lambda r: int(r[0]))
    if hi is not lo and float(lo[5]) > 0:
        per_event = float(hi[5]) / float(lo[5])
        per_wakeup = per_event * float(lo[8]) / float(hi[8])
        print("engine ns/event, -l %s: -g %s over -g %s: %.2f (per wake-up: %.2f)" % (loops, hi[0], lo[0], per_event, per_wakeup))
' "$rows"
