#!/usr/bin/env bash
# How the simulator's cost per event grows with the machine: simulated
# hackbench (-p -T -l LOOPS, groups = CPUs / 10, so tasks = 4 x CPUs) on
# machines from 8 to 1024 CPUs, one row each, from `sim --stats`: CPUs,
# events, wall ns per event, split into the engine's own part and the part
# spent inside the modelled kernel's decisions (wake-up placement and load
# balancing, whose scan work grows with the LLC and the domains by design),
# that scan work per event (placement probes, balancer run-queue reads),
# wake-ups per wall second, wall time over simulated time and peak RSS.
# Any build with `--stats`: SCHEDLAB=path/to/schedlab.
#
# Usage: scripts/bench-scale.sh [MACHINE...]   (default: the list below)
# Environment: SCHEDLAB (default: a release build of this tree), KERNEL
# (a kernel profile for every run, e.g. linux-5.12 for a CFS one; default:
# the simulator's default profile), LOOPS
# (default 300), RUNS (rounds over all the machines, the median wall time
# of each machine's runs is used;
# default 3).
#
# Timing depends on the host and its load: compare builds on one quiet
# machine, back to back.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${SCHEDLAB:-}" ]; then
    (cd "$root" && cargo build --release -q -p schedlab)
    SCHEDLAB="${CARGO_TARGET_DIR:-$root/target}/release/schedlab"
fi
loops=${LOOPS:-300}
runs=${RUNS:-3}
if [ $# -gt 0 ]; then
    machines=("$@")
else
    # the 1024-CPU machine's own shape at 24 CPUs (one socket of SMT
    # pairs, the same cost profile) comes after kunpeng920-node: the growth
    # of the cost per event with the machine's size alone, apart from what
    # SMT and the idle states of a machine add to each event
    machines=(kvm-8vcpu kunpeng920-node "smp:sockets=1,cores=12,threads=2,cost=sapphire-rapids"
        kunpeng920 epyc-zen3 sapphire-rapids
        "smp:sockets=8,cores=64,threads=2,nodes=8,cost=sapphire-rapids")
fi
rows=$(mktemp)
raw=$(mktemp)
trap 'rm -f "$rows" "$raw"' EXIT

printf "%-66s %5s %10s %9s %9s %9s %9s %8s %8s %12s %8s %8s\n" machine cpus events ns/event engine-ns place-ns bal-ns probes/ev rqreads/ev wakeups/wall-s wall/sim rss-MiB
# Rounds over all the machines, not all the runs of one machine and then the
# next: a stretch of load on the shared host then slows one run of every
# machine, not every run of one (and the ratios below compare like with like).
cpus_of=()
for m in "${machines[@]}"; do
    cpus_of+=("$("$SCHEDLAB" topology show "$m" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["nr_cpus"])')")
done
for _ in $(seq "$runs"); do
    for i in "${!machines[@]}"; do
        m=${machines[$i]}
        cpus=${cpus_of[$i]}
        groups=$(( cpus / 10 > 0 ? cpus / 10 : 1 ))
        "$SCHEDLAB" sim hackbench -p -T -g "$groups" -l "$loops" --machine "$m" \
            ${KERNEL:+--kernel "$KERNEL"} --stats 2>&1 >/dev/null \
            | grep '^stats: ' | sed "s|^|$i |" >>"$raw"
    done
done
for i in "${!machines[@]}"; do
    grep "^$i stats: " "$raw" | python3 -c '
import sys
rows = []
for line in sys.stdin:
    kv = dict(f.split("=", 1) for f in line.split()[2:])
    rows.append(kv)
rows.sort(key=lambda d: float(d["wall_s"]))
d = rows[len(rows) // 2]
f = lambda k: float(d[k])
print("%-66s %5d %10d %9.1f %9.1f %9.1f %9.1f %8.3f %8.3f %12.0f %8.2f %8s" % (
    sys.argv[1], int(sys.argv[2]), int(d["events"]), f("ns_per_event"), f("engine_ns_per_event"),
    f("placement_ns_per_event"), f("balance_ns_per_event"), f("probes_per_event"),
    f("balance_rq_reads_per_event"), f("wakeups_per_wall_s"), f("wall_per_sim"), d["peak_rss_mib"]))
' "${machines[$i]}" "${cpus_of[$i]}" | tee -a "$rows"
done
# The growth of the engine's own cost (scan work excluded): the largest
# machine against each 24-CPU one.
python3 -c '
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
if not rows:
    sys.exit(0)
big = max(rows, key=lambda r: int(r[1]))
for r in rows:
    if int(r[1]) == 24 and int(big[1]) > 24 and float(r[4]) > 0:
        print("engine ns/event at %s CPUs over %s: %.2f" % (big[1], r[0], float(big[4]) / float(r[4])))
' "$rows"
