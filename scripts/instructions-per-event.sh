#!/usr/bin/env bash
# Instructions per simulated event, counted by valgrind's callgrind: a
# figure that does not move with the host's load, unlike wall time (which
# varies by 5-20 % from one set of runs to the next on a shared VM). For
# every BINARY given, runs the same simulation under callgrind and prints
# the instructions executed, the events simulated and their ratio. The
# count includes the start-up (topology, workload), so compare builds on
# the same run, not runs of different lengths.
#
# Usage: scripts/instructions-per-event.sh [BINARY...]
#   (default: a release build of this tree)
# Environment: RUN, the `sim` arguments (default: the issue's hackbench
#   case at 300 loops: `hackbench -p -T -g 10 -l 300 --machine
#   kunpeng920-node`); CACHE=1 also simulates the caches (this host's L1
#   data and instruction caches and its L2 as the last level, read from
#   /sys/devices/system/cpu/cpu0/cache; 48 KiB, 32 KiB and 2 MiB where it
#   says nothing) and prints first-level and last-level data misses per
#   event.
# Needs valgrind (`apt-get install -y valgrind`).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
command -v valgrind >/dev/null || { echo "instructions-per-event: needs valgrind (apt-get install -y valgrind)" >&2; exit 2; }
if [ $# -eq 0 ]; then
    (cd "$root" && cargo build --release -q -p schedlab)
    set -- "${CARGO_TARGET_DIR:-$root/target}/release/schedlab"
fi
run=${RUN:-hackbench -p -T -g 10 -l 300 --machine kunpeng920-node}
for b in "$@"; do
    [ -x "$b" ] || { echo "instructions-per-event: $b: not an executable" >&2; exit 2; }
done
# valgrind's SIZE,WAYS,LINE for the cache of LEVEL and TYPE on cpu0, or DEFAULT
cache_geometry() {
    local level=$1 type=$2 default=$3 d
    for d in /sys/devices/system/cpu/cpu0/cache/index*; do
        [ "$(cat "$d/level" 2>/dev/null)" = "$level" ] && [ "$(cat "$d/type" 2>/dev/null)" = "$type" ] || continue
        local size ways line
        size=$(cat "$d/size"); ways=$(cat "$d/ways_of_associativity"); line=$(cat "$d/coherency_line_size")
        case $size in *K) size=$(( ${size%K} * 1024 )) ;; *M) size=$(( ${size%M} * 1048576 )) ;; esac
        echo "$size,$ways,$line"
        return
    done
    echo "$default"
}
cache=()
if [ "${CACHE:-0}" = 1 ]; then
    cache=(--cache-sim=yes
        "--D1=$(cache_geometry 1 Data 49152,12,64)"
        "--I1=$(cache_geometry 1 Instruction 32768,8,64)"
        "--LL=$(cache_geometry 2 Unified 2097152,16,64)")
    echo "caches: ${cache[*]:1}" >&2
fi
printf "%-50s %15s %12s %10s" binary instructions events per-event
[ ${#cache[@]} -gt 0 ] && printf " %10s %10s" l1-miss/ev ll-miss/ev
printf "\n"
for b in "$@"; do
    # shellcheck disable=SC2086 # RUN is a word list on purpose
    out=$(valgrind --tool=callgrind "${cache[@]}" --callgrind-out-file=/dev/null "$b" sim $run --stats 2>&1 >/dev/null) || {
        echo "instructions-per-event: \`$b sim $run\` failed:" >&2
        echo "$out" | grep -v '^==' | head -3 >&2
        exit 2
    }
    echo "$out" | python3 -c '
import re, sys
text = sys.stdin.read()
stats = [l for l in text.splitlines() if l.startswith("stats: ")]
coll = re.search(r"Collected : ([\d ]+)", text)
if not stats or not coll:
    sys.stderr.write("instructions-per-event: %s: no --stats line or callgrind total (is the run valid?)\n" % sys.argv[1])
    sys.exit(2)
kv = dict(f.split("=", 1) for f in stats[-1].split()[1:])
ev = int(kv["events"])
c = [int(x) for x in coll.group(1).split()]
line = "%-50s %15d %12d %10.1f" % (sys.argv[1][-50:], c[0], ev, c[0] / ev)
if len(c) >= 9:
    # Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
    line += " %10.2f %10.3f" % ((c[4] + c[5]) / ev, (c[7] + c[8]) / ev)
print(line)
' "$b"
done
