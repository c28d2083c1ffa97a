#!/usr/bin/env bash
# Time schedlab builds one after the other, alternating, each run pinned to
# one CPU, and print each build's minimum and median of the `--stats`
# figures: ns per event, and its engine, placement and balance parts.
#
# `scripts/ab-speed.sh` runs two builds at the same time, one per CPU, so
# that the host's noise hits both alike; but the two runs then share the
# host's last-level cache, which is what a change to the simulator's
# memory footprint on a large simulated machine is about. Here the runs do
# not overlap: alternating spreads slow stretches of the shared host over
# every build, and the minimum is the run the host disturbed least. Sets
# taken minutes apart can still differ by 10 %; compare builds within one
# set, and repeat the set with the builds in the other order.
#
# Usage: scripts/alternate-runs.sh BINARY...
# Environment: RUN, the `sim` arguments (default: hackbench at 1024 CPUs,
#   `hackbench -p -T -g 102 -l 60 --machine
#   smp:sockets=8,cores=64,threads=2,nodes=8,cost=sapphire-rapids`);
#   N, runs of each build (default 8); CPU, the CPU to pin to (default 1).
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 BINARY..." >&2
    exit 2
fi
for b in "$@"; do
    if [ ! -x "$b" ]; then
        echo "$0: $b is not an executable" >&2
        exit 2
    fi
done
run=${RUN:-hackbench -p -T -g 102 -l 60 --machine smp:sockets=8,cores=64,threads=2,nodes=8,cost=sapphire-rapids}
n=${N:-8}
cpu=${CPU:-1}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

for _ in $(seq "$n"); do
    for i in $(seq 0 $(($# - 1))); do
        b=${*:$((i + 1)):1}
        # shellcheck disable=SC2086 # RUN is a word list on purpose
        line=$(taskset -c "$cpu" "$b" sim $run --stats 2>&1 >/dev/null | grep '^stats: ') || {
            echo "$0: \`$b sim $run --stats\` failed" >&2
            exit 1
        }
        echo "$i $line" >>"$raw"
    done
done
python3 - "$raw" "$@" <<'EOF'
import statistics, sys
raw, builds = sys.argv[1], sys.argv[2:]
runs = {}
for line in open(raw):
    parts = line.split()
    runs.setdefault(int(parts[0]), []).append(dict(f.split("=", 1) for f in parts[2:]))
keys = [("ns_per_event", "ns/event"), ("engine_ns_per_event", "engine"),
        ("placement_ns_per_event", "place"), ("balance_ns_per_event", "bal")]
print("%-40s" % "build" + "".join("%18s" % (k[1] + " min/med") for k in keys))
for i, b in enumerate(builds):
    col = lambda k: [float(r[k]) for r in runs[i]]
    print("%-40s" % b[-40:] + "".join(
        "%18s" % ("%.1f / %.1f" % (min(col(k)), statistics.median(col(k)))) for k, _ in keys))
EOF
