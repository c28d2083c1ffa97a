#!/bin/sh
# Check that every SVG given renders in headless Chromium: each is loaded as
# an image, drawn on a canvas, and must come out 800x500 with enough inked
# pixels and several colours (axes, text, one line per variant).
#
#   scripts/check-svg-renders.sh plot.svg [more.svg ...]
#   scripts/check-svg-renders.sh --demo     # make plots with `schedlab compare` first
#
# Needs chromium (Debian: apt-get install chromium) and python3.
set -eu
CHROMIUM=${CHROMIUM:-chromium}
command -v "$CHROMIUM" >/dev/null || { echo "check-svg-renders: $CHROMIUM not found (apt-get install chromium)" >&2; exit 2; }
if [ "${1:-}" = "--demo" ]; then
    dir=$(mktemp -d)
    cargo run --release -q -p schedlab -- compare builtin:test-idle-cores-nosmt --quick \
        --plot "$dir/plot.svg" --log "$dir/runs.jsonl" >/dev/null
    set -- "$dir"/*.svg
fi
[ $# -gt 0 ] || { echo "usage: $0 FILE.svg... | --demo" >&2; exit 2; }
status=0
for svg in "$@"; do
    page=$(mktemp --suffix=.html)
    python3 - "$svg" "$page" <<'PY'
import base64, sys
svg, page = sys.argv[1], sys.argv[2]
data = base64.b64encode(open(svg, 'rb').read()).decode()
open(page, 'w').write(f'''<!doctype html><html><body><script>
const img = new Image();
img.onload = () => {{
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d');
  g.fillStyle = '#fff'; g.fillRect(0, 0, c.width, c.height);
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  let ink = 0; const colours = new Set();
  for (let i = 0; i < d.length; i += 4) {{
    if (d[i] < 250 || d[i+1] < 250 || d[i+2] < 250) {{ ink++; colours.add((d[i]>>4)+','+(d[i+1]>>4)+','+(d[i+2]>>4)); }}
  }}
  document.body.innerHTML = '<pre id=r>RESULT ' + c.width + ' ' + c.height + ' ' + ink + ' ' + colours.size + '</pre>';
}};
img.onerror = () => {{ document.body.innerHTML = '<pre id=r>RESULT error</pre>'; }};
img.src = 'data:image/svg+xml;base64,{data}';
</script></body></html>''')
PY
    out=$("$CHROMIUM" --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 \
        --dump-dom "file://$page" 2>/dev/null | grep -o 'RESULT[^<]*' || true)
    rm -f "$page"
    set -- $out
    if [ "${1:-}" = RESULT ] && [ "${2:-}" = 800 ] && [ "${3:-}" = 500 ] && [ "${4:-0}" -gt 5000 ] && [ "${5:-0}" -ge 4 ]; then
        echo "ok   $svg: ${2}x${3}, ${4} inked pixels, ${5} colours"
    else
        echo "FAIL $svg: ${out:-chromium printed nothing}" >&2
        status=1
    fi
done
exit $status
