#!/usr/bin/env bash
# Which of two schedlab builds simulates faster, on a noisy shared host.
#
# Run one after the other, two runs of the same build on this VM differ by up
# to 25 % (the host's other tenants share its caches and memory), so a
# difference of a few per cent between builds drowns. Here the two builds run
# at the same time, one on each of two CPUs, so whatever the host does, it
# does to both; each round's figure is the ratio of their events per wall
# second. Rounds cycle through the four arrangements (which build on which
# CPU, which one starts first), which cancels a CPU's or the first start's
# advantage; the median of the ratios is printed with all of them.
#
# Usage: scripts/ab-speed.sh OLD_BINARY NEW_BINARY
# Environment: RUN, the `sim` arguments (default: the issue's hackbench case
#   at 1000 loops: `hackbench -p -T -g 10 -l 1000 --machine kunpeng920-node`);
#   ROUNDS (default 8, a multiple of 4 keeps the arrangements balanced);
#   CPUS, the two CPUs to use (default "0 1").
# Prints: median NEW/OLD ratio of events per wall second (above 1: NEW is
# faster), and each build's median events per second.
# Run an old build against itself first: the spread of those ratios is the
# noise floor of this host at that moment.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 OLD_BINARY NEW_BINARY" >&2
    exit 2
fi
old=$1
new=$2
for b in "$old" "$new"; do
    [ -x "$b" ] || { echo "ab-speed: $b is not an executable" >&2; exit 2; }
done
command -v taskset >/dev/null || { echo "ab-speed: needs taskset (util-linux)" >&2; exit 2; }
run=${RUN:-hackbench -p -T -g 10 -l 1000 --machine kunpeng920-node}
rounds=${ROUNDS:-8}
read -r cpu_a cpu_b <<<"${CPUS:-0 1}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# events per wall second from a `sim --stats` line on stderr
rate() { grep -o 'events_per_s=[0-9]*' "$1" | cut -d= -f2; }

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

ratios=()
old_rates=()
new_rates=()
for i in $(seq 0 $((rounds - 1))); do
    # arrangement i % 4: bit 0 swaps the CPUs, bit 1 which build starts first
    if [ $((i & 1)) = 0 ]; then c_old=$cpu_a c_new=$cpu_b; else c_old=$cpu_b c_new=$cpu_a; fi
    start_old() { taskset -c "$c_old" "$old" sim $run --stats >/dev/null 2>"$tmp/old" & }
    start_new() { taskset -c "$c_new" "$new" sim $run --stats >/dev/null 2>"$tmp/new" & }
    if [ $((i & 2)) = 0 ]; then start_old; start_new; else start_new; start_old; fi
    wait
    o=$(rate "$tmp/old") n=$(rate "$tmp/new")
    if [ -z "$o" ] || [ -z "$n" ]; then
        echo "ab-speed: a run printed no stats line (\`sim $run\`):" >&2
        head -3 "$tmp/old" "$tmp/new" >&2
        exit 2
    fi
    old_rates+=("$o")
    new_rates+=("$n")
    ratios+=("$(awk -v n="$n" -v o="$o" 'BEGIN {printf "%.4f", n / o}')")
done
echo "new/old events per second: median $(median "${ratios[@]}") (rounds: ${ratios[*]})"
echo "old $old: median $(median "${old_rates[@]}") events/s"
echo "new $new: median $(median "${new_rates[@]}") events/s"
