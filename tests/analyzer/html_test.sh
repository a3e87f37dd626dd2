#!/usr/bin/env bash
# Loads the page `vramshim html` writes in headless Chromium: the script runs without errors, the flame
# graph and the timeline are in the DOM, search highlights frames; a screenshot is kept as a test output.
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

# Zoomed into a function: its callers stay above it as ancestors, its siblings leave the graph.
chrome --dump-dom "file://$work/report.html#zoom=model_forward()" >"$work/zoom.dom.html"
grep -q 'class="ancestor"' "$work/zoom.dom.html" || fail "zoom: no ancestor frames"
grep -q 'init_optimizer_state()</text>' "$work/zoom.dom.html" && fail "zoom: a sibling is still drawn"
grep -q 'attention_block()</text>' "$work/zoom.dom.html" || fail "zoom: a callee is missing"

chrome --screenshot="$outputs/report.png" --window-size=1400,1600 "file://$work/report.html" >/dev/null
chrome --screenshot="$outputs/merged_live.png" --window-size=1400,1600 "file://$work/merged.html#metric=live&search=forward" >/dev/null
for shot in report merged_live; do
  [[ -s "$outputs/$shot.png" ]] || fail "no screenshot $shot.png"
done

if ((failures)); then
  cat "$work/chromium.log" >&2
  exit 1
fi
echo "html checks passed; screenshots in $outputs"
