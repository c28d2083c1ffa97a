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
#              source with its Makefile), vs `schedlab bench schbench`;
#              metrics average rps, request latency p99, p50 and min, and
#              wakeup latency p99 (us), from the final tables. Two cases:
#              `-m 1 -t 2 -r 10`, and `-C -m 1 -t 1 -r 10` on CPU 0, whose
#              request latency is the matrix work alone (see "How the
#              schbench port's CPU load was checked" in docs/workloads.md).
#              Skipped with a message when there is no C schbench.
#
# Usage: scripts/compare-native.sh [-n RUNS] [-t TBENCH_SECONDS] [-v] [hackbench|tbench|schbench|all]...
#   -v also prints every run's value, sorted, under each line.
#   The C tools come from Debian: apt-get install -y rt-tests dbench
#   The Rust binary is built with `cargo build --release -p schedlab`
#   (CARGO_TARGET_DIR is honoured), or taken from $SCHEDLAB.
set -euo pipefail

RUNS=5
TBENCH_TIME=5
VERBOSE=""
while getopts "n:t:vh" opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    v) VERBOSE=1 ;;
    t) TBENCH_TIME=$OPTARG ;;
    *) sed -n '2,37p' "$0"; exit 2 ;;
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
    'BEGIN {printf "%-52s %-6s C %10.3f   Rust %10.3f   Rust/C %.3f   (median of %d)\n", n, u, c, r, (c > 0 ? r / c : 0), k}'
  if [[ -n $VERBOSE ]]; then
    echo "    C:   $(tr ' ' '\n' <<<"$3" | grep . | sort -g | tr '\n' ' ')"
    echo "    Rust:$(tr ' ' '\n' <<<"$4" | grep . | sort -g | tr '\n' ' ' | sed 's/^/ /')"
  fi
}

TMP=$(mktemp -d)
SRV_PID=""
cleanup() {
  if [[ -n "$SRV_PID" ]]; then kill "$SRV_PID" 2>/dev/null || true; wait "$SRV_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "host: $(nproc) CPUs, $(uname -r); $RUNS runs per side, alternating; load average $(cut -d' ' -f1-3 /proc/loadavg)"

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
# sch_metrics FILE: "WAKEUP_P99 REQ_P50 REQ_P99 REQ_MIN AVG_RPS" from the
# last (final) tables of a schbench report; an interval report at the end of
# the run may precede them.
sch_metrics() {
  awk '
    /^Wakeup Latencies/ {sec = "w"}
    /^Request Latencies/ {sec = "r"}
    /^RPS percentiles/ {sec = "p"}
    sec == "w" && /\* 99.0th:/ {w99 = $3}
    sec == "r" && /50.0th:/ {r50 = $2}
    sec == "r" && /\* 99.0th:/ {r99 = $3}
    sec == "r" && /min=/ {sub(/^.*min=/, ""); sub(/,.*$/, ""); rmin = $0}
    /^average rps:/ {rps = $3}
    function v(x) {return x == "" ? "nan" : x}
    END {print v(w99), v(r50), v(r99), v(rmin), v(rps)}
  ' "$1"
}

# inner_loop BINARY FUNCTION: the address of FUNCTION's innermost loop (the
# target of the first branch after its multiply by a memory operand) and the loop's offset in
# its 64-byte block of code, as "0xADDR, offset N"; empty without objdump or
# the symbol.
inner_loop() {
  command -v objdump >/dev/null || return 0
  local a
  a=$(objdump -d --no-show-raw-insn -C "$1" 2>/dev/null | awk -v f="<$2>:" '
    index($0, f) {on = 1; next}
    on && /^$/ {exit}
    on && /imul[ \t]+\(/ {seen = 1}
    on && seen && $2 ~ /^j/ {print $3; exit}')
  [[ -n $a ]] && echo "0x$a, offset $((16#$a % 64))"
}

if want schbench; then
  SCH=${SCHBENCH:-$(command -v schbench || true)}
  if [[ -z "$SCH" || ! -x "$SCH" ]]; then
    echo "schbench: skipped (no C schbench: it is not packaged; build masoncl/schbench and set SCHBENCH=/path/to/schbench)"
  else
    # The port reproduces the C build's machine code for the matrix work,
    # including where its inner loop sits in a 64-byte block (48 for the
    # Makefile's gcc 12 -O2 build), which changes its speed on some CPUs
    # (crates/native/src/schbench_math.rs).
    echo "schbench inner loop: C do_some_math at $(inner_loop "$SCH" do_some_math || true);" \
      "Rust at $(inner_loop "$SCHEDLAB" native::schbench_math::multiply_x86_64 || true)"
    # The first case is the default closed loop; the second (-C: no lock,
    # the sleep outside the clock) times the work function alone, one worker
    # pinned to CPU 0 with its message thread.
    for case in "-m 1 -t 2 -r 10|" "-C -m 1 -t 1 -r 10|0"; do
      args=${case%|*} pin=${case#*|}
      declare -A v=()
      for _ in $(seq "$RUNS"); do
        # shellcheck disable=SC2086
        ${pin:+taskset -c $pin} "$SCH" $args >"$TMP/c.txt" 2>&1 || true
        # shellcheck disable=SC2086
        "$SCHEDLAB" bench schbench $args ${pin:+--cpus $pin} >"$TMP/r.txt" 2>&1
        for side in c r; do
          read -r w99 r50 r99 rmin rps < <(sch_metrics "$TMP/$side.txt")
          v[w99$side]+=" $w99" v[r50$side]+=" $r50" v[r99$side]+=" $r99"
          v[rmin$side]+=" $rmin" v[rps$side]+=" $rps"
        done
      done
      name="schbench $args${pin:+ cpu$pin}"
      report "$name: average rps" "rps" "${v[rpsc]}" "${v[rpsr]}"
      report "$name: request p99" "us" "${v[r99c]}" "${v[r99r]}"
      report "$name: request p50" "us" "${v[r50c]}" "${v[r50r]}"
      report "$name: request min" "us" "${v[rminc]}" "${v[rminr]}"
      report "$name: wakeup p99" "us" "${v[w99c]}" "${v[w99r]}"
      unset v
    done
  fi
fi

echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
