#!/usr/bin/env bash
# A profile-guided build of schedlab: the fastest simulator this tree
# makes, for long sweeps and for speed measurements.
#
# rustc's profile-guided optimisation (PGO, `-Cprofile-generate` then
# `-Cprofile-use`) lays out and inlines the code by where a training run
# spent its time. It changes no result: the compiler keeps every operation's
# meaning, and this script checks it by running `scripts/compare-engine.sh`
# (twelve `sim` runs compared byte for byte, host timings aside) between the
# plain release build and the new one, and fails if any output differs.
#
# Steps: an instrumented build (target/pgo-gen), a training set of short
# simulations covering hackbench (threads and processes, pipes and sockets,
# 24 to 1024 CPUs, several kernels), schbench, tbench, an NPB kernel, an
# rt-app file and a virtual machine, the profiles merged with the
# toolchain's llvm-profdata, the optimised build (target/pgo), the check.
# Measured 2026-12-01 on `sim hackbench -p -T -g 10 -l 2000 --machine
# kunpeng920-node`: 1,119 -> 876 instructions per event, 11.8 -> 13.4 M
# events/s (docs/performance.md).
#
# Usage: scripts/build-pgo.sh         prints the optimised binary's path last
# Environment: CARGO_TARGET_DIR (default: target; the builds go to
#   $CARGO_TARGET_DIR/pgo-gen and $CARGO_TARGET_DIR/pgo). Needs rustup's
#   llvm-tools component, installed here if missing (network access once).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
gen_dir=$target/pgo-gen
opt_dir=$target/pgo
data=$target/pgo-data
profile=$target/pgo-data/merged.profdata

die() {
    echo "build-pgo: $*" >&2
    exit 2
}

command -v rustup >/dev/null || die "needs rustup (for the llvm-tools component)"
sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$sysroot/lib/rustlib/$host/bin/llvm-profdata
if [ ! -x "$profdata" ]; then
    echo "build-pgo: installing rustup's llvm-tools (llvm-profdata)" >&2
    rustup component add llvm-tools >/dev/null 2>&1 || die "could not install llvm-tools: run \`rustup component add llvm-tools\`"
    [ -x "$profdata" ] || die "llvm-tools installed but $profdata is missing"
fi

echo "build-pgo: plain release build" >&2
cargo build --release -q -p schedlab
plain=$target/release/schedlab

echo "build-pgo: instrumented build ($gen_dir)" >&2
rm -rf "$data"
mkdir -p "$data"
RUSTFLAGS="-Cprofile-generate=$data" CARGO_TARGET_DIR=$gen_dir cargo build --release -q -p schedlab
gen=$gen_dir/release/schedlab

echo "build-pgo: training runs" >&2
big="smp:sockets=8,cores=64,threads=2,nodes=8,cost=sapphire-rapids"
training=(
    "hackbench -p -T -g 10 -l 300 --machine kunpeng920-node"
    "hackbench -g 4 -l 200 --machine kunpeng920-node --kernel linux-5.12"
    "hackbench -T -g 4 -l 200 --machine xeon-12c24t --kernel linux-6.6"
    "hackbench -p -g 4 -l 200 --machine kunpeng920 --kernel linux-5.11"
    "hackbench -p -T -g 22 -l 40 --machine sapphire-rapids"
    "hackbench -p -T -g 102 -l 10 --machine $big"
    "hackbench -p -T -g 4 -l 200 --host vm2x8"
    "schbench -m 2 -t 4 -r 1 --machine epyc-zen3"
    "tbench 8 -t 1 --machine kunpeng920-node"
    "npb cg --class S --machine broadwell-ep"
    "rtapp examples/rtapp/thread-pool.json --logdir $data/rtapp-logs"
)
mkdir -p "$data/rtapp-logs"
for run in "${training[@]}"; do
    # shellcheck disable=SC2086 # a run is a word list on purpose
    "$gen" sim $run >/dev/null || die "training run failed: schedlab sim $run"
done
"$profdata" merge -o "$profile" "$data"/*.profraw

echo "build-pgo: optimised build ($opt_dir)" >&2
RUSTFLAGS="-Cprofile-use=$profile" CARGO_TARGET_DIR=$opt_dir cargo build --release -q -p schedlab
opt=$opt_dir/release/schedlab

echo "build-pgo: checking outputs against the plain build" >&2
"$root/scripts/compare-engine.sh" "$plain" "$opt" >"$data/compare.txt" \
    || { cat "$data/compare.txt" >&2; die "the optimised build's outputs differ from the plain build's"; }
tail -1 "$data/compare.txt" >&2
echo "$opt"
