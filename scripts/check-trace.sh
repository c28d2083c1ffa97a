#!/bin/sh
# Check a `schedlab sim --trace` file with Perfetto's own tools:
#  1. decode it with the protobuf bindings the `perfetto` Python package
#     ships (perfetto.protos.perfetto.trace.perfetto_trace_pb2: Perfetto's
#     schema, not this project's messages) and hold its event counts against
#     the run's `--json` counters (switches, wake-ups, migrations);
#  2. load it in Perfetto's trace_processor (the same package's
#     TraceProcessor) and count the sched and thread_state rows. The package
#     downloads the trace_processor binary on first use; where that cannot
#     be fetched (no network), step 2 says so and is skipped, exit status 0
#     if step 1 passed. TRACE_PROCESSOR=/path/to/trace_processor_shell uses
#     a binary you have.
#
#   scripts/check-trace.sh                 # runs hackbench -g 2 -l 100 itself
#   scripts/check-trace.sh TRACE RUN.json  # a trace and the run's --json
#
# Needs python3 with venv; installs the `perfetto` package (PyPI) into
# ${PERFETTO_VENV:-$HOME/.cache/schedlab-perfetto-venv}.
set -eu
VENV=${PERFETTO_VENV:-$HOME/.cache/schedlab-perfetto-venv}
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import perfetto' 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q perfetto protobuf
fi
if [ $# -eq 0 ]; then
    dir=$(mktemp -d)
    cargo run --release -q -p schedlab -- sim hackbench -g 2 -l 100 \
        --trace "$dir/t.pftrace" --json >"$dir/run.json"
    set -- "$dir/t.pftrace" "$dir/run.json"
fi
[ $# -eq 2 ] || { echo "usage: $0 [TRACE RUN.json]" >&2; exit 2; }
"$VENV/bin/python" - "$1" "$2" <<'PY'
import json, os, sys
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

trace_path, run_path = sys.argv[1], sys.argv[2]
run = json.load(open(run_path))
t = pb.Trace()
t.ParseFromString(open(trace_path, 'rb').read())
n = dict(to_task=0, to_idle=0, to_stopper=0, waking=0, wakeup=0, wakeup_new=0,
         migrate=0, idle=0, fork_moves=0, balance_moves=0, counters=0)
stoppers = set()
for p in t.packet:
    if p.HasField('process_tree'):
        stoppers |= {pr.pid for pr in p.process_tree.processes
                     if pr.cmdline and pr.cmdline[0].startswith('migration/')}
for p in t.packet:
    if p.HasField('ftrace_events'):
        for e in p.ftrace_events.event:
            k = e.WhichOneof('event')
            if k == 'sched_switch':
                pid = e.sched_switch.next_pid
                n['to_idle' if pid == 0 else 'to_stopper' if pid in stoppers else 'to_task'] += 1
            elif k == 'sched_waking': n['waking'] += 1
            elif k == 'sched_wakeup': n['wakeup'] += 1
            elif k == 'sched_wakeup_new': n['wakeup_new'] += 1
            elif k == 'sched_migrate_task': n['migrate'] += 1
            elif k == 'cpu_idle': n['idle'] += 1
    elif p.HasField('track_event'):
        te = p.track_event
        if te.type == pb.TrackEvent.TYPE_COUNTER:
            n['counters'] += 1
        elif te.name.startswith('select_task_rq'):
            a = {d.name: (d.string_value or d.uint_value) for d in te.debug_annotations}
            if a.get('kind') == 'fork' and a.get('prev_cpu', 0) != a.get('target_cpu', 0):
                n['fork_moves'] += 1
        elif te.name == 'load_balance: move':
            n['balance_moves'] += 1
print('decoded with perfetto_trace_pb2:', ', '.join(f'{k}={v}' for k, v in n.items()))
# every field is one Perfetto's schema knows (a wrong field number would
# show as an unknown field of its message)
from google.protobuf.unknown_fields import UnknownFieldSet
def unknown(m, path, out):
    u = UnknownFieldSet(m)
    if len(u):
        out.add((path, tuple(sorted({f.field_number for f in u}))))
    for fd, v in m.ListFields():
        if fd.message_type is not None:
            for x in (v if fd.is_repeated else [v]):
                unknown(x, path + '.' + fd.name, out)
strange = set()
for p in t.packet:
    unknown(p, 'packet', strange)
moved = run['balance']['moved']
checks = [
    ('sched_switch to a task = context_switches', n['to_task'], run['context_switches']),
    ('sched_wakeup + sched_wakeup_new = wakeups', n['wakeup'] + n['wakeup_new'], run['wakeups']),
    ('sched_waking = sched_wakeup', n['waking'], n['wakeup']),
    ('sched_migrate_task + fork moves = migrations + balancer moves',
     n['migrate'] + n['fork_moves'], run['migrations'] + moved),
]
bad = 0
if strange:
    bad += 1
    print('FAIL fields unknown to Perfetto: ' + ', '.join(f'{p} {n}' for p, n in sorted(strange)))
else:
    print('ok   every field is in Perfetto\'s schema')
for what, got, want in checks:
    ok = got == want
    bad += not ok
    print(('ok   ' if ok else 'FAIL ') + f'{what}: {got} vs {want}')
if bad:
    sys.exit(1)

# 2. trace_processor
try:
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
    binary = os.environ.get('TRACE_PROCESSOR')
    cfg = TraceProcessorConfig(bin_path=binary) if binary else TraceProcessorConfig()
    tp = TraceProcessor(trace=trace_path, config=cfg)
except Exception as e:  # the binary cannot be fetched here
    print(f'skip trace_processor: it could not be started ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ""})')
    sys.exit(0)
q = lambda s: list(tp.query(s))
sched = q("select count(*) as n from sched where utid != 0")[0].n
states = q("select count(*) as n from thread_state")[0].n
idle = q("select count(*) as n from counter join cpu_counter_track t on counter.track_id = t.id where t.name = 'cpuidle'")[0].n
print(f'trace_processor: {sched} sched slices of tasks, {states} thread_state rows, {idle} cpuidle values')
ok = sched == run['context_switches']
print(('ok   ' if ok else 'FAIL ') + f'sched slices of tasks = context_switches: {sched} vs {run["context_switches"]}')
sys.exit(0 if ok else 1)
PY
