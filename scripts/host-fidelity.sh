#!/usr/bin/env bash
# How close is the simulator to this host? Measures the host's costs with
# `schedlab calibrate`, then runs the same hackbench points natively and
# simulated on the `host` machine (this host's topology from /sys) with
# the calibrated cost profile, through `schedlab compare`, and prints
# per point the native and simulated mean time and the simulator's error.
#
# Usage: scripts/host-fidelity.sh [OUTDIR]        (default: ./host-fidelity)
# Environment: SCHEDLAB (the binary; default: a release build of this
# tree), LOOPS (hackbench -l, default 200), ITERATIONS (runs per point and
# variant, default 3), CALIBRATE_FLAGS (e.g. --quick).
#
# Nothing is tuned: the profile is what calibrate measured. Every file the
# run uses or writes is left in OUTDIR (host.toml, host-fidelity.toml, the
# report, JSON and CSV).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-host-fidelity}
mkdir -p "$out"
cd "$out"

if [ -z "${SCHEDLAB:-}" ]; then
    (cd "$root" && cargo build --release -q -p schedlab)
    SCHEDLAB="${CARGO_TARGET_DIR:-$root/target}/release/schedlab"
fi

# Other work on the machine inflates the native times and skews the
# kernel's placement (a busy CPU is not idle for select_idle_sibling), and
# it moves calibrate's figures: say so rather than print a misleading table.
busy_warning() {
    # CPU time used by anything over one second (/proc/stat), not the load
    # average, which still holds the benchmark's own tasks for minutes
    local a b
    a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat)
    sleep 1
    b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat)
    if awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ");
            busy = y[1] - x[1]; idle = y[2] - x[2];
            exit !(busy + idle > 0 && busy > 0.1 * (busy + idle)) }'; then
        echo "host-fidelity: warning: the CPUs were more than 10 % busy in the second before the $1: other work on this machine skews the measurements" >&2
    fi
}
# A cloud VM's CPUs can change speed for minutes at a time (a fixed
# compute loop took 0.40 s and 1.16 s on this project's 2-vCPU guest on
# the same day, at nice -20 both times): the profile and the native runs must see
# the same machine. A fixed awk loop is timed before the calibration,
# between it and the native runs, and after them.
speed_probe() {
    local t0 t1
    t0=$(date +%s%N)
    awk 'BEGIN { for (i = 0; i < 20000000; i++) s += i % 7 }'
    t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000000 ))
}
probes=("$(speed_probe)")
busy_warning calibration
# shellcheck disable=SC2086 # CALIBRATE_FLAGS is a list of flags
"$SCHEDLAB" calibrate -o host.toml ${CALIBRATE_FLAGS:-}

cat > host-fidelity.toml <<TOML
name = "host-fidelity"
description = "hackbench -l ${LOOPS:-200} on this host: native, and simulated on machine host with its calibrated cost profile"
iterations = ${ITERATIONS:-3}
metrics = ["time"]

[run]
benchmark = "hackbench"
loops = ${LOOPS:-200}

[sweep]
pipe = [true, false]
threads = [true, false]
groups = [1, 2, 4, 8]

[[variant]]            # the baseline: the error is the simulator's against it
name = "native"
mode = "native"

[[variant]]
name = "sim-host"
machine = "host"
cost_profile = "host.toml"
TOML

probes+=("$(speed_probe)")
busy_warning "native runs"
"$SCHEDLAB" compare host-fidelity.toml --json host-fidelity.json --csv host-fidelity.csv \
    > report.txt
cat report.txt

probes+=("$(speed_probe)")
echo "CPU speed probe (ms; before calibrate, before the native runs, after them): ${probes[*]}"
if ! printf '%s\n' "${probes[@]}" | awk 'NR == 1 { lo = hi = $1 } { if ($1 < lo) lo = $1; if ($1 > hi) hi = $1 } END { exit !(hi <= 1.15 * lo) }'; then
    echo "host-fidelity: warning: the CPU speed changed by more than 15 % during the run: the profile and the native times are from different machines" >&2
fi

# Per point: mean native and simulated time, error = (sim - native) / native.
echo
echo "Per point (mean of the iterations; error = (simulated - native) / native):"
awk -F, '
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
{
    key = $col["pipe"] "," $col["threads"] "," $col["groups"]
    if (!(key in seen)) { seen[key] = 1; order[n++] = key }
    sum[key, $col["variant"]] += $col["time"]; cnt[key, $col["variant"]]++
}
END {
    printf "%-5s %-7s %6s %10s %10s %8s\n", "pipe", "threads", "groups", "native_s", "sim_s", "error"
    for (i = 0; i < n; i++) {
        k = order[i]; split(k, p, ",")
        nat = sum[k, "native"] / cnt[k, "native"]; sim = sum[k, "sim-host"] / cnt[k, "sim-host"]
        err = (sim - nat) / nat * 100; abs += (err < 0 ? -err : err)
        printf "%-5s %-7s %6s %10.4f %10.4f %+7.1f%%\n", p[1], p[2], p[3], nat, sim, err
    }
    printf "mean |error| over %d points: %.1f%%\n", n, abs / n
}' host-fidelity.csv
