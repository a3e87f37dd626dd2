#!/usr/bin/env bash
# Loads the page `vramshim html` writes in headless Chromium: the script runs without errors, the flame
# graph and the timeline are in the DOM, search highlights frames, an out-of-memory report opens with
# its panel; a report of a program that leaks 1 MiB per step opens on its growing sites, with the
# sites' live bytes stacked over time (steps) and the trace's allocations as bands; a report that
# leaked opens on the live bytes, others on the peak; screenshots are kept as test outputs.
set -euo pipefail

cli=analyzer/vramshim
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
# A real report (history, trace) of a program that leaks 1 MiB per step among churn, a warm-up and a
# bounded cache, run under the shim on the simulated driver; a copy with a flush and an
# out-of-memory failure in its trace.
LD_PRELOAD="$PWD/shim/libvramshim.so" LD_LIBRARY_PATH="$PWD/tests/fakecuda" VRAMSHIM_SOCKET=off \
  VRAMSHIM_REPORT="$work/growing.json" tests/integration/programs/growing_sites 200
"$cli" html "$work/growing.json" -o "$work/growing.html" 2>/dev/null
python3 - "$work/growing.json" "$work/marked.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
events = doc["trace"]["events"]
middle = events[len(events) // 2][0]
events.insert(len(events) // 2, [middle, "flush", None, 3 << 20, None, None, -1])
events.insert(len(events) * 3 // 4, [events[len(events) * 3 // 4][0], "oom", None, 1 << 30, 0, None, -1])
json.dump(doc, open(sys.argv[2], "w"))
PY
"$cli" html "$work/marked.json" -o "$work/marked.html" 2>/dev/null

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

# The growing report opens on its growing sites, the leak first, above the flame graph.
chrome --dump-dom "file://$work/growing.html" >"$work/growing.dom.html"
dom="$work/growing.dom.html"
grep -q '<div id="script-error"' "$dom" && fail "growing: script error: $(grep -o 'Script error[^<]*' "$dom")"
grep -q 'data-rendered="yes"' "$dom" || fail "growing: the script did not finish rendering"
grep -q '<body data-view="growing"' "$dom" || fail "growing: the page does not open on the growing sites"
[[ "$(grep -o '<section id="[a-z]*-section">' "$dom" | head -2 | tr -d '\n')" == \
  '<section id="growing-section"><section id="history-section">' ]] ||
  fail "growing: the growing sites and their history are not first"
python3 - "$dom" <<'PY' || fail "growing: the growing sites table does not name the leak first"
import re, sys
dom = open(sys.argv[1]).read()
table = dom[dom.index('<table id="growing">'):]
table = table[:table.index("</table>")]
rows = re.findall(r"<tr><td>1</td><td>\+([0-9.]+) MiB</td>.*?<summary>(?:<span[^>]*></span>)?([^<]*)</summary>", table)
assert rows and rows[0][1].startswith("leak_one_mib_per_step"), rows
assert "1.0 MiB</td>" in table, "no rate of 1.0 MiB per step"
PY
# The stacked chart: one step path per series (no straight lines between samples), the leak's
# name on hover.
paths=$(grep -o '<g class="series"><path d="[^"]*"' "$dom" || true)
series=$(grep -c . <<<"$paths" || true)
((series >= 3)) || fail "growing: only $series series in the stacked chart"
grep -q 'L' <<<"$paths" && fail "growing: a series drawn with straight lines"
steps=$(grep -c 'H[0-9.]*V[0-9.]*H' <<<"$paths" || true)
((steps == series)) || fail "growing: $steps of $series series drawn as steps"
grep -q '<title>leak_one_mib_per_step' "$dom" || fail "growing: no site name on hover"
# The trace window's allocations as bands: at most 1,000 drawn, the page says how many it sums.
bands=$(grep -o '<g class="band"><path' "$dom" | wc -l)
((bands >= 500 && bands <= 1000)) || fail "growing: $bands bands drawn, not 500 to 1,000"
grep -q 'class="band-other"' "$dom" || fail "growing: no band for the allocations not drawn"
# The leak's long-lived blocks are among the bands drawn, named on hover.
leak_bands=$(grep -o '<g class="band"><path [^>]*></path><title>leak_one_mib_per_step' "$dom" | wc -l)
((leak_bands >= 100)) || fail "growing: only $leak_bands bands of the leak"
grep -qE 'allocations in the trace window \([0-9.]+ s to [0-9.]+ s after the start\); the 1,000 that held the most bytes for the longest \(bytes × lifetime\) are drawn as bands, the other [0-9,]+ summed in the grey band at the bottom' "$dom" ||
  fail "growing: the page does not say that it drew only 1,000 of the allocations"
grep -q 'class="marker marker-report"' "$dom" || fail "growing: no marker for the report"
# A click on the leak's series and on one of its bands shows its stack. The clicks are a script
# added to the page, which its Content-Security-Policy refuses to run (the page runs only its own
# scripts, whatever a report's string might become): the copy that clicks goes without the policy,
# the copy that keeps it must show no click.
python3 - "$work/growing.html" "$work/clicked.html" "$work/injected.html" <<'PY'
import re, sys
page = open(sys.argv[1]).read()
click = """<script>
function clickOn(selector) {
  var all = document.querySelectorAll(selector);
  for (var i = 0; i < all.length; ++i) {
    if (all[i].querySelector('title').textContent.indexOf('leak_one_mib_per_step') === 0) {
      all[i].querySelector('path').dispatchEvent(new MouseEvent('click'));
      return;
    }
  }
}
clickOn('#history g.series');
clickOn('#bands g.band');
</script>
</body>"""
policy = re.compile(r'<meta http-equiv="Content-Security-Policy"[^>]*>')
if not policy.search(page):
    sys.exit("the page has no Content-Security-Policy")
open(sys.argv[2], "w").write(policy.sub("", page).replace("</body>", click))
open(sys.argv[3], "w").write(page.replace("</body>", click))
PY
chrome --dump-dom "file://$work/clicked.html" >"$work/clicked.dom.html"
chrome --dump-dom "file://$work/injected.html" >"$work/injected.dom.html"
for panel in history-detail bands-detail; do
  shown="<div class=\"detail\" id=\"$panel\"><p class=\"detail-title\">leak_one_mib_per_step[^<]*</p><ol><li>leak_one_mib_per_step \(tests/integration/programs/growing_sites.cc:[0-9]+\)</li><li>main"
  grep -qE "$shown" "$work/clicked.dom.html" || fail "clicked: $panel does not show the leak's stack"
  grep -qE "$shown" "$work/injected.dom.html" && fail "injected: a script added to the page ran"
  grep -q 'class="marker marker-report"' "$work/injected.dom.html" || fail "injected: the page's own script did not run"
done
chrome --dump-dom "file://$work/marked.html" >"$work/marked.dom.html"
for type in flush oom report; do
  grep -q "class=\"marker marker-$type\"" "$work/marked.dom.html" || fail "marked: no $type marker"
done
grep -q '<title>flush: released 3.0 MiB at' "$work/marked.dom.html" || fail "marked: the flush marker does not say what it released"
# A report that leaked opens on the live bytes, one that did not on the peak; the address wins.
grep -q '<body data-view="live"' "$work/report.dom.html" || fail "report: the leaking report does not open on the live view"
grep -q '<body data-view="peak"' "$work/oom.dom.html" || fail "oom: the report does not open on the peak view"
chrome --dump-dom "file://$work/growing.html#view=peak" >"$work/growing_peak.dom.html"
grep -q '<body data-view="peak"' "$work/growing_peak.dom.html" || fail "growing: #view=peak does not open on the peak"

chrome --screenshot="$outputs/growing.png" --window-size=1400,2400 "file://$work/growing.html" >/dev/null
chrome --screenshot="$outputs/report.png" --window-size=1400,1600 "file://$work/report.html" >/dev/null
chrome --screenshot="$outputs/merged_live.png" --window-size=1400,1600 "file://$work/merged.html#metric=live&search=forward" >/dev/null
chrome --screenshot="$outputs/oom.png" --window-size=1400,1600 "file://$work/oom.html" >/dev/null
for shot in growing report merged_live oom; do
  [[ -s "$outputs/$shot.png" ]] || fail "no screenshot $shot.png"
done

if ((failures)); then
  cat "$work/chromium.log" >&2
  exit 1
fi
echo "html checks passed; screenshots in $outputs"
