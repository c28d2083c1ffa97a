#!/usr/bin/env bash
# How close is the simulator to the real rt-app on this host? Measures the
# host's costs with `schedlab calibrate`, then runs each rt-app example
# (examples/rtapp/*.json) simulated on the `host` machine with that profile
# and natively with the real rt-app (apt-get install rt-app), through
# `schedlab compare`, and prints per thread the simulated and measured CPU
# share (CPU time over the thread's logged span) and the simulator's error.
#
# Usage: scripts/rtapp-fidelity.sh [OUTDIR]        (default: ./rtapp-fidelity)
# Environment: SCHEDLAB (the binary; default: a release build of this
# tree), ITERATIONS (runs per variant, default 3), CALIBRATE_FLAGS (e.g.
# --quick), NATIVE_NICE (default -20 as root, else none: rt-app and its
# autogroup at that nice, so other load on a shared host disturbs the
# measurement less).
#
# Nothing is tuned: the profile is what calibrate measured. Every file the
# run uses or writes is left in OUTDIR.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-rtapp-fidelity}
mkdir -p "$out"
cd "$out"

if [ -z "${SCHEDLAB:-}" ]; then
    (cd "$root" && cargo build --release -q -p schedlab)
    SCHEDLAB="${CARGO_TARGET_DIR:-$root/target}/release/schedlab"
fi
if ! command -v rt-app >/dev/null; then
    echo "rt-app is not installed (apt-get install rt-app)" >&2
    exit 2
fi
nice_default=""
[ "$(id -u)" = 0 ] && nice_default=-20
native_nice=${NATIVE_NICE-$nice_default}

# shellcheck disable=SC2086 # CALIBRATE_FLAGS is a list of flags
"$SCHEDLAB" calibrate -o host.toml ${CALIBRATE_FLAGS:-} > calibrate.txt

for json in "$root"/examples/rtapp/*.json; do
    name=$(basename "$json" .json)
    {
        echo "name = \"rtapp-$name\""
        echo "description = \"$name.json: simulated on machine host with its calibrated profile, and rt-app on this host\""
        echo "iterations = ${ITERATIONS:-3}"
        echo 'metrics = ["rtapp-threads"]'
        echo '[run]'
        echo 'benchmark = "rtapp"'
        echo "file = \"$json\""
        [ -n "$native_nice" ] && echo "native_nice = $native_nice"
        echo '[[variant]]'
        echo 'name = "rt-app"'
        echo 'mode = "native"'
        echo '[[variant]]'
        echo 'name = "sim-host"'
        echo 'machine = "host"'
        echo 'cost_profile = "host.toml"'
    } > "$name.toml"
    "$SCHEDLAB" compare "$name.toml" --json "$name.json" > "$name.report.txt"
    echo "== $name: CPU share per thread (rt-app, then simulated; error = (simulated - measured) / measured)"
    grep -E '^(Amean|Hmean) +cpu-share:|^Sim error .* cpu-share:' "$name.report.txt" |
        sed -E 's/^Sim error vs rt-app: sim-host +/    error: /; s/ +overall .*//'
done
