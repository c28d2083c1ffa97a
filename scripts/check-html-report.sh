#!/bin/sh
# Check a `schedlab compare --html` page in headless Chromium: it loads with
# no console errors, fetches no resource (everything is inline), starts
# with the verdict (before the experiment's facts), shows as many plots of
# the means (inline SVG), gain-per-point plots (one per metric when a
# variant is compared with the baseline, each drawn: an 800x500 box with
# its error bars) and tables as the page has metrics, and a screenshot of
# its top is taken and is of a sane size.
#
#   scripts/check-html-report.sh r.html [shot.png]
#   scripts/check-html-report.sh --demo [shot.png]  # makes the page with
#        compare builtin:test-idle-cores-nosmt --quick --html first
#
# Needs chromium (Debian: apt-get install chromium) and python3.
set -eu
CHROMIUM=${CHROMIUM:-chromium}
command -v "$CHROMIUM" >/dev/null || { echo "check-html-report: $CHROMIUM not found (apt-get install chromium)" >&2; exit 2; }
if [ "${1:-}" = "--demo" ]; then
    dir=$(mktemp -d)
    cargo run --release -q -p schedlab -- compare builtin:test-idle-cores-nosmt --quick \
        --html "$dir/r.html" --log "$dir/runs.jsonl" >/dev/null
    shift
    set -- "$dir/r.html" "$@"
fi
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 FILE.html [SHOT.png] | --demo [SHOT.png]" >&2; exit 2; }
page=$1
shot=${2:-${page%.html}.png}
[ -f "$page" ] || { echo "check-html-report: $page: no such file" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# a copy with a probe at its end: what loaded, what the page holds
python3 - "$page" "$work/probe.html" <<'PY'
import sys
src, dst = sys.argv[1], sys.argv[2]
h = open(src, encoding='utf-8').read()
probe = '''<script>
window.addEventListener('load', () => {
  const r = performance.getEntriesByType('resource').length;
  const svg = document.querySelectorAll('figure:not(.gain) > svg').length;
  const gains = [...document.querySelectorAll('figure.gain > svg')];
  // a gain plot is drawn when it has its box and at least one error bar
  // (plotters draws each as a path or polyline of the variant's colour)
  const drawn = gains.filter(g => {
    const b = g.getBoundingClientRect();
    return b.width > 100 && b.height > 60 && g.querySelectorAll('polyline, path, line').length > 3;
  }).length;
  const pre = document.querySelectorAll('pre:not(.verdict)').length;
  const h3 = document.querySelectorAll('h3[id^="metric-"]').length;
  const v = document.querySelector('pre.verdict');
  const facts = document.getElementById('experiment');
  const first = v && facts && (v.compareDocumentPosition(facts) & Node.DOCUMENT_POSITION_FOLLOWING)
    && v.textContent.startsWith('Verdict on ') ? 1 : 0;
  const compared = v ? v.dataset.compared : -1;
  const p = document.createElement('pre');
  p.id = 'probe';
  p.textContent = 'PROBE resources=' + r + ' svg=' + svg + ' gain=' + gains.length + ' drawn=' + drawn
    + ' tables=' + pre + ' metrics=' + h3 + ' verdict=' + first + ' compared=' + compared;
  document.body.appendChild(p);
});
</script>'''
i = h.rfind('</body>')
open(dst, 'w', encoding='utf-8').write(h[:i] + probe + h[i:])
PY
"$CHROMIUM" --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 \
    "--host-resolver-rules=MAP * ~NOTFOUND" --virtual-time-budget=10000 \
    --dump-dom "file://$work/probe.html" >"$work/dom" 2>"$work/log" || true
probe=$(grep -o 'id="probe">[^<]*' "$work/dom" | sed 's/^id="probe">//' || true)
console=$(grep 'CONSOLE' "$work/log" || true)
"$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    "--host-resolver-rules=MAP * ~NOTFOUND" --window-size=1200,2400 \
    --screenshot="$shot" "file://$(realpath "$page")" >/dev/null 2>&1 || true
python3 - "$shot" "$probe" "$console" <<'PY'
import os, struct, sys
shot, probe, console = sys.argv[1], sys.argv[2], sys.argv[3]
bad = []
kv = dict(x.split('=') for x in probe.split()[1:]) if probe else {}
if not kv:
    bad.append('the page did not load (no probe result)')
else:
    n = int(kv['metrics'])
    if int(kv['resources']) != 0:
        bad.append(f"it fetched {kv['resources']} resources")
    if n == 0 or int(kv['svg']) != n or int(kv['tables']) != n:
        bad.append(f"{n} metrics but {kv['svg']} plots and {kv['tables']} tables")
    if kv['verdict'] != '1':
        bad.append('no verdict before the experiment')
    want = n if int(kv['compared']) > 0 else 0
    if int(kv['gain']) != want or int(kv['drawn']) != want:
        bad.append(f"{n} metrics, {kv['compared']} variant(s) compared, but {kv['gain']} gain plots ({kv['drawn']} drawn)")
if console.strip():
    bad.append('console messages: ' + console.strip().replace('\n', ' | '))
size = os.path.getsize(shot) if os.path.exists(shot) else 0
w = h = 0
if size > 24:
    with open(shot, 'rb') as f:
        head = f.read(24)
    if head[:8] == b'\x89PNG\r\n\x1a\n':
        w, h = struct.unpack('>II', head[16:24])
if (w, h) != (1200, 2400) or not (20_000 < size < 20_000_000):
    bad.append(f'screenshot {shot}: {w}x{h}, {size} bytes')
if bad:
    print('FAIL ' + '; '.join(bad), file=sys.stderr)
    sys.exit(1)
print(f"ok   {probe[6:]}, no console messages, screenshot {shot} {w}x{h} {size} bytes")
PY
