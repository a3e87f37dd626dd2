#!/usr/bin/env bash
# Loads the page `vramshim html` writes in headless Chromium: the script runs without errors, the flame
# graph and the timeline are in the DOM, search highlights frames, an out-of-memory report opens with
# its panel; screenshots are kept as test outputs.
set -euo pipefail

cli=tests/analyzer/reading_cli
work="${TEST_TMPDIR:-$(mktemp -d)}/html"
outputs="${TEST_UNDECLARED_OUTPUTS_DIR:-$work}"
mkdir -p "$work" "$outputs"
tests/analyzer/fixture_report_bin --out "$work/report.json"
for rank in 0 1; do
  tests/analyzer/fixture_report_bin --out "$work/rank$rank.json" --rank $rank --scale $((rank + 1))
done
"$cli" merge "$work/rank0.json" "$work/rank1.json" -o "$work/merged.json" 2>/dev/null
"$cli" html "$work/report.json" -o "$work/report.html" 2>/dev/null
"$cli" html "$work/merged.json" -o "$work/merged.html" 2>/dev/null
tests/analyzer/fixture_report_bin --out "$work/oom.json" --oom
"$cli" html "$work/oom.json" -o "$work/oom.html" 2>/dev/null
# A pool of 100 segments: the map draws the first 64 and says so.
python3 - "$work/oom.json" "$work/many_segments.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["oom"]["segments"] = [{"base": (1 << 40) + i * (2 << 20), "size": 2 << 20,
                           "blocks": [[0, 1 << 20, "free"]]} for i in range(100)]
json.dump(doc, open(sys.argv[2], "w"))
PY
"$cli" html "$work/many_segments.json" -o "$work/many_segments.html" 2>/dev/null

chrome() {
  timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$work/profile" "$@" 2>>"$work/chromium.log"
}

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

if grep -oiE '<script[^>]+src=|<link[^>]+href=|https?://[a-z0-9./]+' "$work/report.html" |
  grep -v '^http://www.w3.org/2000/svg$' | grep -q .; then
  fail "the page refers to something outside itself"
fi

for page in report merged; do
  chrome --dump-dom "file://$work/$page.html#search=leak_in" >"$work/$page.dom.html"
  dom="$work/$page.dom.html"
  grep -q '<div id="script-error"' "$dom" && fail "$page: script error: $(grep -o 'Script error[^<]*' "$dom")"
  grep -q 'data-rendered="yes"' "$dom" || fail "$page: the script did not finish rendering"
  rects=$(grep -o '<rect ' "$dom" | wc -l)
  ((rects >= 8)) || fail "$page: only $rects flame graph rectangles"
  grep -q 'id="timeline-in-use" d="M' "$dom" || fail "$page: no timeline path"
  grep -q 'class="match"' "$dom" || fail "$page: searching for leak_in highlighted nothing"
  grep -q 'leak_in_model_forward()' "$dom" || fail "$page: the leaking function is not on the page"
  tbody_rows=$(grep -o '<tr><td>' "$dom" | wc -l)
  ((tbody_rows >= 5)) || fail "$page: only $tbody_rows rows in the top-sites table"
done

# The report was written at exit with 19.6 MiB still held: the page opens on the live bytes.
grep -q '<span class="hint" id="status">19.6 MiB in all sites; matched' "$work/report.dom.html" ||
  fail "report: the page written at exit with memory held does not open on the live bytes"
# One row per site label, its stacks a click away.
grep -q '<summary>leak_in_model_forward() (tests/analyzer/fixture_report.cc:[0-9]*)</summary><ol><li>leak_in_model_forward()' \
  "$work/report.dom.html" || fail "report: the leaking site's row does not hold its stack"

grep -q '<section id="oom" hidden=""></section>' "$work/report.dom.html" ||
  fail "report: the out-of-memory panel of a report without one is not hidden and empty"

# The out-of-memory panel, at the top: the failure, the verdict, the symbolized stacks, the segments.
chrome --dump-dom "file://$work/oom.html" >"$work/oom.dom.html"
dom="$work/oom.dom.html"
grep -q '<div id="script-error"' "$dom" && fail "oom: script error: $(grep -o 'Script error[^<]*' "$dom")"
grep -q 'data-rendered="yes"' "$dom" || fail "oom: the script did not finish rendering"
panel=$(python3 -c '
import sys
dom = open(sys.argv[1]).read()
start = dom.find("<section id=\"oom\">")
print(dom[start:dom.index("</section>", start)] if start >= 0 else "")' "$dom")
[[ -n "$panel" ]] || fail "oom: no visible out-of-memory panel"
[[ "$(grep -o '<h1 id="title">\|<section id="oom">\|<h2>Flame graph' "$dom" | head -2 | tr -d '\n')" == \
  '<h1 id="title"><section id="oom">' ]] || fail "oom: the panel is not at the top of the page"
for text in '<h2>Out of memory</h2>' \
  '<p class="verdict">fragmentation: the pool holds 6.4 MiB free, but no free block of 6.0 MiB' \
  'Out of memory: cuMemAlloc of 6.0 MiB [device] on device 0 failed' \
  'decode_step(int) (tests/analyzer/fixture_report.cc:' \
  'init_optimizer_state() (tests/analyzer/fixture_report.cc:' \
  'pid 4343 python serve.py: 21.5 MiB in use' 'not asked: libnvidia-ml.so.1 is not installed' \
  'fragmentation: 4 segments of 26.0 MiB in all' 'All 4 segments, in address order.'; do
  grep -qF "$text" <<<"$panel" || fail "oom: the panel lacks: $text"
done
free_rects=$(grep -o '<rect [^>]*fill="#2ecc71"' <<<"$panel" | wc -l)
pending_rects=$(grep -o '<rect [^>]*fill="#f0a830"' <<<"$panel" | wc -l)
((free_rects == 6 && pending_rects == 1)) ||
  fail "oom: the segment map has $free_rects free and $pending_rects pending blocks, not 6 and 1"
chrome --dump-dom "file://$work/many_segments.html" >"$work/many_segments.dom.html"
grep -qF 'The first 64 of 100 segments, in address order.' "$work/many_segments.dom.html" ||
  fail "many segments: no note that the map shows the first 64"
segment_rows=$(grep -o '<rect [^>]*fill="#2ecc71"' "$work/many_segments.dom.html" | wc -l)
((segment_rows == 64)) || fail "many segments: $segment_rows segments drawn, not 64"

# Zoomed into a function: its callers stay above it as ancestors, its siblings leave the graph.
chrome --dump-dom "file://$work/report.html#zoom=model_forward()&metric=peak" >"$work/zoom.dom.html"
grep -q 'class="ancestor"' "$work/zoom.dom.html" || fail "zoom: no ancestor frames"
grep -q 'init_optimizer_state()</text>' "$work/zoom.dom.html" && fail "zoom: a sibling is still drawn"
grep -q 'attention_block()</text>' "$work/zoom.dom.html" || fail "zoom: a callee is missing"

chrome --screenshot="$outputs/report.png" --window-size=1400,1600 "file://$work/report.html" >/dev/null
chrome --screenshot="$outputs/merged_live.png" --window-size=1400,1600 "file://$work/merged.html#metric=live&search=forward" >/dev/null
chrome --screenshot="$outputs/oom.png" --window-size=1400,1600 "file://$work/oom.html" >/dev/null
for shot in report merged_live oom; do
  [[ -s "$outputs/$shot.png" ]] || fail "no screenshot $shot.png"
done

if ((failures)); then
  cat "$work/chromium.log" >&2
  exit 1
fi
echo "html checks passed; screenshots in $outputs"
