#!/usr/bin/env bash
# How the simulator's cost per event grows with the machine: simulated
# hackbench (-p -T -l LOOPS, groups = CPUs / 10, so tasks = 4 x CPUs) on
# machines from 8 to 1024 CPUs, one row each: CPUs, events, wall ns per
# event, placement probes per event (the modelled kernel's own scan work,
# which grows with the LLC by design), wake-ups per wall second and wall
# time over simulated time. Any build: SCHEDLAB=path/to/schedlab.
#
# Usage: scripts/bench-scale.sh [MACHINE...]   (default: the list below)
# Environment: SCHEDLAB (default: a release build of this tree), LOOPS
# (default 300), RUNS (runs per machine, the median wall time is used;
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
    machines=(kvm-8vcpu kunpeng920-node kunpeng920 epyc-zen3 sapphire-rapids
        "smp:sockets=8,cores=64,threads=2,nodes=8,cost=sapphire-rapids")
fi

printf "%-66s %5s %10s %8s %12s %12s %9s\n" machine cpus events ns/event probes/event wakeups/wall-s wall/sim
for m in "${machines[@]}"; do
    cpus=$("$SCHEDLAB" topology show "$m" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["nr_cpus"])')
    groups=$(( cpus / 10 > 0 ? cpus / 10 : 1 ))
    for _ in $(seq "$runs"); do
        "$SCHEDLAB" sim hackbench -p -T -g "$groups" -l "$loops" --machine "$m" --json
        echo
    done | python3 -c '
import json, sys
text, dec, rows, i = sys.stdin.read(), json.JSONDecoder(), [], 0
while text[i:].strip():
    i += len(text[i:]) - len(text[i:].lstrip())
    d, i = dec.raw_decode(text, i)
    rows.append(d)
rows.sort(key=lambda d: d["wall_s"])
d = rows[len(rows) // 2]
ev, wall = d["events"], d["wall_s"]
print("%-66s %5d %10d %8.1f %12.3f %12.0f %9.2f" % (
    sys.argv[1], int(sys.argv[2]), ev, wall * 1e9 / ev, d["placement"]["probes"] / ev,
    d["wakeups"] / wall, wall / (d["sim_ns"] / 1e9)))
' "$m" "$cpus"
done
