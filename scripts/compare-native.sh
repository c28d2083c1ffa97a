#!/usr/bin/env bash
# Fidelity and cost of schedlab's native benchmark ports against the C
# originals, on this host. A benchmark script, not a test: it takes minutes
# and its figures depend on the machine.
#
# For each case it runs the C original and the Rust port with the same
# arguments, alternating (C, Rust, C, Rust, ...) so that drift in the
# machine's state hits both alike, RUNS times each, and prints the median of
# each and the ratio Rust/C.
#
# Cases marked "cpu0" pin every task of both sides to CPU 0 (`taskset -c 0`
# for C, `--cpus 0` for Rust): no cross-CPU wake-ups or idle exits, so they
# measure the cost per message/operation with little noise. The unpinned
# cases include the scheduler's placement and vary much more between runs
# on a small or busy machine.
#
#   hackbench: rt-tests `hackbench` vs `schedlab bench hackbench`; metric
#              Time (s), lower is better.
#   tbench:    dbench's `tbench` + `tbench_srv` (port 7003) vs
#              `schedlab bench tbench` replaying the same loadfile
#              (/usr/share/dbench/client.txt); metric Throughput (MB/s),
#              higher is better.
#   schbench:  the C schbench, if one is found ($SCHBENCH or `schbench` on
#              PATH; it is not packaged: build masoncl/schbench from
#              source), vs `schedlab bench schbench`; metrics p99 wakeup
#              latency (us) and average rps. Skipped with a message when
#              there is no C schbench.
#
# Usage: scripts/compare-native.sh [-n RUNS] [-t TBENCH_SECONDS] [hackbench|tbench|schbench|all]...
#   The C tools come from Debian: apt-get install -y rt-tests dbench
#   The Rust binary is built with `cargo build --release -p schedlab`
#   (CARGO_TARGET_DIR is honoured), or taken from $SCHEDLAB.
set -euo pipefail

RUNS=5
TBENCH_TIME=5
while getopts "n:t:h" opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    t) TBENCH_TIME=$OPTARG ;;
    *) sed -n '2,27p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
WHAT=("${@:-all}")
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "compare-native: -n: RUNS must be a positive integer" >&2; exit 2; }
[[ "$TBENCH_TIME" =~ ^[1-9][0-9]*$ ]] || { echo "compare-native: -t: seconds must be a positive integer" >&2; exit 2; }

cd "$(dirname "$0")/.."
if [[ -z "${SCHEDLAB:-}" ]]; then
  cargo build --release -q -p schedlab
  SCHEDLAB="${CARGO_TARGET_DIR:-target}/release/schedlab"
fi
[[ -x "$SCHEDLAB" ]] || { echo "compare-native: no schedlab binary at $SCHEDLAB" >&2; exit 2; }

want() { local w; for w in "${WHAT[@]}"; do [[ $w == all || $w == "$1" ]] && return 0; done; return 1; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# report NAME UNIT C_VALUES RUST_VALUES
report() {
  local mc mr
  mc=$(tr ' ' '\n' <<<"$3" | grep . | median)
  mr=$(tr ' ' '\n' <<<"$4" | grep . | median)
  awk -v n="$1" -v u="$2" -v c="$mc" -v r="$mr" -v k="$RUNS" \
    'BEGIN {printf "%-44s %-6s C %10.3f   Rust %10.3f   Rust/C %.3f   (median of %d)\n", n, u, c, r, (c > 0 ? r / c : 0), k}'
}

TMP=$(mktemp -d)
SRV_PID=""
cleanup() {
  if [[ -n "$SRV_PID" ]]; then kill "$SRV_PID" 2>/dev/null || true; wait "$SRV_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "host: $(nproc) CPUs, $(uname -r); $RUNS runs per side, alternating"

# --- hackbench -------------------------------------------------------------
if want hackbench; then
  if ! command -v hackbench >/dev/null; then
    echo "hackbench: skipped (install rt-tests for the C hackbench)"
  else
    for pin in "" 0; do
      for args in "-g 4 -l 1000" "-p -g 4 -l 1000" "-T -g 4 -l 1000" "-p -T -g 4 -l 1000"; do
        c="" r=""
        for _ in $(seq "$RUNS"); do
          # shellcheck disable=SC2086
          c+=" $(${pin:+taskset -c $pin} hackbench $args | awk '/^Time:/ {print $2}')"
          # shellcheck disable=SC2086
          r+=" $("$SCHEDLAB" bench hackbench $args ${pin:+--cpus $pin} | awk '/^Time:/ {print $2}')"
        done
        report "hackbench $args${pin:+ cpu$pin}" "Time s" "$c" "$r"
      done
    done
  fi
fi

# --- tbench ----------------------------------------------------------------
if want tbench; then
  LOADFILE=/usr/share/dbench/client.txt
  if ! command -v tbench >/dev/null || ! command -v tbench_srv >/dev/null || [[ ! -r $LOADFILE ]]; then
    echo "tbench: skipped (install dbench for tbench, tbench_srv and $LOADFILE)"
  else
    for pin in 0 ""; do
      # tbench_srv listens on port 7003 and forks a server per client; it
      # is restarted for each affinity.
      # shellcheck disable=SC2086
      (cd "$TMP" && exec ${pin:+taskset -c $pin} tbench_srv) >/dev/null 2>&1 &
      SRV_PID=$!
      sleep 0.5
      kill -0 "$SRV_PID" 2>/dev/null || { echo "tbench: tbench_srv did not start (port 7003 busy?)"; SRV_PID=""; break; }
      for n in 1 2 4; do
        [[ -n $pin && $n != 1 ]] && continue
        c="" r=""
        for _ in $(seq "$RUNS"); do
          # shellcheck disable=SC2086
          c+=" $(cd "$TMP" && ${pin:+taskset -c $pin} tbench -t "$TBENCH_TIME" -c "$LOADFILE" "$n" 127.0.0.1 2>&1 | awk '/^Throughput/ {print $2}')"
          # shellcheck disable=SC2086
          r+=" $("$SCHEDLAB" bench tbench "$n" --time "$TBENCH_TIME" --loadfile "$LOADFILE" ${pin:+--cpus $pin} | awk '/^Throughput/ {print $2}')"
        done
        report "tbench $n clients, -t $TBENCH_TIME, client.txt${pin:+ cpu$pin}" "MB/s" "$c" "$r"
      done
      kill "$SRV_PID" 2>/dev/null || true
      wait "$SRV_PID" 2>/dev/null || true
      SRV_PID=""
    done
  fi
fi

# --- schbench --------------------------------------------------------------
if want schbench; then
  SCH=${SCHBENCH:-$(command -v schbench || true)}
  if [[ -z "$SCH" || ! -x "$SCH" ]]; then
    echo "schbench: skipped (no C schbench: it is not packaged; build masoncl/schbench and set SCHBENCH=/path/to/schbench)"
  else
    args="-m 1 -t 2 -r 10"
    w_c="" w_r="" a_c="" a_r=""
    for _ in $(seq "$RUNS"); do
      # shellcheck disable=SC2086
      "$SCH" $args >"$TMP/c.txt" 2>&1 || true
      # shellcheck disable=SC2086
      "$SCHEDLAB" bench schbench $args >"$TMP/r.txt" 2>&1
      for side in c r; do
        w=$(awk '/^Wakeup Latencies/ {t=1} t && /\* 99.0th:/ {print $3; exit}' "$TMP/$side.txt")
        a=$(awk '/^average rps:/ {print $3}' "$TMP/$side.txt")
        eval "w_$side+=' $w'; a_$side+=' $a'"
      done
    done
    report "schbench $args: wakeup p99" "us" "$w_c" "$w_r"
    report "schbench $args: average rps" "rps" "$a_c" "$a_r"
  fi
fi
