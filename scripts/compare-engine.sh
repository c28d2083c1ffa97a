#!/usr/bin/env bash
# Check that two schedlab binaries simulate identically: same stdout for a
# set of `sim` runs covering the policies, kernels, SMT widths, --costs off
# and --check. Meant for behaviour-preserving changes to the engine (a
# refactor must not move a single event). The JSON fields `wall_s` and
# `events_per_s` measure the host, not the simulation, and `commit` names the
# build, not the run: all three are ignored.
#
# Usage: scripts/compare-engine.sh OLD_BINARY NEW_BINARY
#   e.g. scripts/compare-engine.sh /tmp/schedlab-base target/release/schedlab
# Exits non-zero if any case differs (or a run fails), printing a diff
# excerpt for each differing case.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 OLD_BINARY NEW_BINARY" >&2
    exit 2
fi
old=$1
new=$2
for b in "$old" "$new"; do
    if [ ! -x "$b" ]; then
        echo "$0: $b is not an executable" >&2
        exit 2
    fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cases=()
for s in 1 2 3; do
    cases+=("hackbench -p -T -g 4 -l 500 --machine kunpeng920-node --seed $s")
    cases+=("hackbench -p -T -g 4 -l 500 --machine kunpeng920-node --seed $s --json")
done
cases+=(
    "hackbench -g 4 -l 200 -T --machine kunpeng920-node --seed 4 --json"
    "hackbench -g 2 -l 200 --machine power9-smt8 --kernel linux-5.6 --json"
    "hackbench -p -g 2 -l 200 --machine xeon-12c24t --kernel linux-5.12 --json --check"
    "hackbench -p -T -g 2 -l 200 --machine kvm-8vcpu --kernel linux-6.7 --json"
    "hackbench -p -T -g 2 -l 200 --machine kunpeng920-node --policy scx --json"
    "hackbench -p -T -g 2 -l 200 --machine kunpeng920-node --costs off --json"
    # more than 64 CPUs: the line model's rows of holder bits
    "hackbench -p -T -g 12 -l 100 --machine epyc-zen3 --json"
    "hackbench -p -T -g 102 -l 5 --machine smp:sockets=8,cores=64,threads=2,nodes=8,cost=sapphire-rapids --json"
)

# Host-dependent lines of the JSON record.
host_fields='"(wall_s|events_per_s|commit)"'

fail=0
for c in "${cases[@]}"; do
    # shellcheck disable=SC2086 # the case is a word list on purpose
    if ! "$old" sim $c >"$tmp/old.raw" 2>"$tmp/old.err"; then
        echo "FAIL (old binary exited non-zero): sim $c"
        sed -n 1,5p "$tmp/old.err"
        fail=1
        continue
    fi
    # shellcheck disable=SC2086
    if ! "$new" sim $c >"$tmp/new.raw" 2>"$tmp/new.err"; then
        echo "FAIL (new binary exited non-zero): sim $c"
        sed -n 1,5p "$tmp/new.err"
        fail=1
        continue
    fi
    grep -v -E "$host_fields" "$tmp/old.raw" >"$tmp/old.out"
    grep -v -E "$host_fields" "$tmp/new.raw" >"$tmp/new.out"
    if cmp -s "$tmp/old.out" "$tmp/new.out"; then
        echo "same   sim $c"
    else
        echo "DIFFER sim $c"
        diff "$tmp/old.out" "$tmp/new.out" | head -20
        fail=1
    fi
done

if [ $fail -ne 0 ]; then
    echo "compare-engine: outputs differ" >&2
    exit 1
fi
echo "compare-engine: all ${#cases[@]} cases identical"
