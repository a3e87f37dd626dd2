#!/usr/bin/env bash
# Golden tests of the report-reading commands on reports the fixture program writes about itself.
# Compares each rendering with tests/analyzer/golden/NAME.txt after replacing temporary paths.
# To regenerate the expected files (then review them with git diff):
#   bazel run //tests/analyzer:golden_test -- --update
set -euo pipefail

cli=tests/analyzer/reading_cli
fixture=tests/analyzer/fixture_report_bin
golden=tests/analyzer/golden
update=0
if [[ "${1:-}" == "--update" ]]; then
  update=1
  golden="${BUILD_WORKSPACE_DIRECTORY:?run with bazel run}/tests/analyzer/golden"
fi
if ((update)); then
  work=$(mktemp -d)  # bazel run: TEST_TMPDIR belongs to whichever Bazel command runs next
else
  work="${TEST_TMPDIR:-$(mktemp -d)}/golden"
fi
mkdir -p "$work"

"$fixture" --out "$work/base.json"
"$fixture" --out "$work/leak.json" --pid 4243 --extra-leak
for rank in 0 1 2; do
  "$fixture" --out "$work/rank$rank.json" --pid $((100 + rank)) --rank $rank --scale $((rank + 1))
done

normalize() {
  sed -e "s#$work/#<tmp>/#g" -e 's#exe /.*/fixture_report_bin$#exe <fixture>/fixture_report_bin#'
}

failures=0
check() {  # NAME COMMAND… : runs the command, compares its normalized stdout with golden/NAME.txt
  local name=$1
  shift
  "$@" 2>"$work/$name.stderr" | normalize >"$work/$name.txt"
  if ((update)); then
    cp "$work/$name.txt" "$golden/$name.txt"
  elif ! diff -u "$golden/$name.txt" "$work/$name.txt"; then
    echo "FAIL: $name differs from $golden/$name.txt" >&2
    failures=$((failures + 1))
  fi
}

check report "$cli" report "$work/base.json"
check report_leaks "$cli" report "$work/base.json" --leaks --top 3
check report_allocations_no_hide "$cli" report "$work/base.json" --allocations --no-hide --top 2
check report_function_filter "$cli" report "$work/base.json" --function 'leak_*' --top 5
check report_hide "$cli" report "$work/base.json" --hide 'run_training*' --hide 'main' --top 2
check tree "$cli" report "$work/base.json" --tree
check folded "$cli" report "$work/base.json" --format folded
check folded_leaks "$cli" report "$work/base.json" --format folded --leaks
check diff "$cli" diff "$work/base.json" "$work/leak.json"
"$cli" merge "$work/rank0.json" "$work/rank1.json" "$work/rank2.json" -o "$work/merged.json" 2>"$work/merge.stderr"
check merged_report "$cli" report "$work/merged.json" --top 3
check merged_diff "$cli" diff "$work/rank0.json" "$work/merged.json" --top 2

((update)) && { echo "updated $golden"; exit 0; }

# The missing vendor library is reported once, on one line, and nothing else is said.
if [[ "$(cat "$work/report.stderr")" != "vramshim: /opt/vendor/lib/libmissing_vendor.so: binary not found; its frames are shown as module+offset" ]]; then
  echo "FAIL: unexpected stderr of report:" >&2
  cat "$work/report.stderr" >&2
  failures=$((failures + 1))
fi

# The new leak is the diff's top line.
if ! grep -A3 '^#1 ' "$work/diff.txt" | grep -q 'NEW .*leak_in_optimizer_step\|leak_in_optimizer_step()'; then
  echo "FAIL: the new leak is not the top of the diff" >&2
  failures=$((failures + 1))
fi

# JSON: the top site by live bytes, with its symbolized frames.
"$cli" report "$work/base.json" --leaks --format json 2>/dev/null >"$work/leaks.json"
python3 - "$work/leaks.json" <<'PY' || failures=$((failures + 1))
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["metric"] == "live_bytes", doc["metric"]
top = doc["sites"][0]
assert top["live_bytes"] == 16 << 20 and top["kind"] == "device", top
frame = top["frames"][0]
assert frame["function"] == "init_optimizer_state()", frame
assert frame["file"] == "tests/analyzer/fixture_report.cc" and frame["line"] > 0, frame
assert [s["live_bytes"] for s in doc["sites"]] == sorted((s["live_bytes"] for s in doc["sites"]), reverse=True)
PY

# The merged report keeps each rank's figures and the processes it came from.
python3 - "$work/merged.json" <<'PY' || failures=$((failures + 1))
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["format"] == "vramshim-report" and doc["version"] == 1, "header"
assert [p["rank"] for p in doc["merged_from"]] == [0, 1, 2], doc["merged_from"]
for site in doc["sites"]:
    ranks = site["ranks"]
    assert sum(r["live_bytes"] for r in ranks) == site["live_bytes"], site
    assert sum(r["total_count"] for r in ranks) == site["total_count"], site
big = max(doc["sites"], key=lambda s: s["bytes_at_peak"])
assert [r["bytes_at_peak"] for r in big["ranks"]] == [16 << 20, 32 << 20, 48 << 20], big["ranks"]
PY

if ((failures)); then
  echo "$failures golden check(s) failed" >&2
  exit 1
fi
echo "all golden checks passed"
