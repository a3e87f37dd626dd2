#!/usr/bin/env bash
# Golden tests of the report-reading commands on reports the fixture program writes about itself.
# Compares each rendering with tests/analyzer/golden/NAME.txt after replacing temporary paths.
# To regenerate the expected files (then review them with git diff):
#   bazel run //tests/analyzer:golden_test -- --update
set -euo pipefail

cli=analyzer/vramshim
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

bash tests/analyzer/fixture_reports.sh "$work"

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
check report_stacks "$cli" report "$work/base.json" --stacks --leaks --top 2
check report_hide "$cli" report "$work/base.json" --hide 'run_training*' --hide 'main' --top 2
check tree "$cli" report "$work/base.json" --tree
check folded "$cli" report "$work/base.json" --format folded
check folded_leaks "$cli" report "$work/base.json" --format folded --leaks
check diff "$cli" diff "$work/base.json" "$work/leak.json"
"$cli" merge "$work/rank0.json" "$work/rank1.json" "$work/rank2.json" -o "$work/merged.json" 2>"$work/merge.stderr"
check merged_report "$cli" report "$work/merged.json" --top 3
check merged_diff "$cli" diff "$work/rank0.json" "$work/merged.json" --top 2
check report_oom "$cli" report "$work/oom.json" --top 2
# The out-of-memory report second: its stack ids are not the merged report's.
"$cli" merge "$work/leak.json" "$work/oom.json" -o "$work/merged_oom.json" 2>"$work/merge_oom.stderr"
check merged_oom_report "$cli" report "$work/merged_oom.json" --top 1
# What the shim could not learn: the device's figures, the failing call's stack, other processes.
python3 - "$work/oom.json" "$work/oom_unknowns.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
oom = doc["oom"]
oom.update(device_total_bytes=None, device_free_bytes=None, held_elsewhere_bytes=0, failures=3,
           limit_bytes=24 << 20, other_processes=[], unasked=[], segments=[])
oom.update(verdict="limit", explanation="limit: VRAMSHIM_LIMIT is 24.0 MiB and this process has 19.1 MiB in use")
oom["request"].update(stack=-1, cause="limit")
oom["leading_sites"] = oom["leading_sites"][:1]
json.dump(doc, open(sys.argv[2], "w"))
PY
check report_oom_unknowns "$cli" report "$work/oom_unknowns.json" --top 1

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

# JSON of an out-of-memory report: the section with symbolized frames and the fragmentation summed
# up; a report without one has none.
"$cli" report "$work/oom.json" --format json 2>/dev/null >"$work/oom_view.json"
"$cli" report "$work/base.json" --format json 2>/dev/null >"$work/base_view.json"
python3 - "$work/oom_view.json" "$work/base_view.json" <<'PY' || failures=$((failures + 1))
import json, sys
doc = json.load(open(sys.argv[1]))
assert json.load(open(sys.argv[2]))["out_of_memory"] == [], "a report without an oom section"
[oom] = doc["out_of_memory"]
assert oom["process"] == 0 and oom["verdict"] == "fragmentation", oom
request = oom["request"]
assert request["bytes"] == 6 << 20 and request["call"] == "cuMemAlloc", request
frames = request["frames"]
assert [f["function"] for f in frames] == ["decode_step(int)"] * 11 + ["main"], frames
assert frames[0]["file"] == "tests/analyzer/fixture_report.cc" and frames[0]["line"] > 0, frames[0]
lead = oom["leading_sites"]
assert [s["frames"][0]["function"] for s in lead] == [
    "init_optimizer_state()", "leak_in_model_forward()", "python_extension_op()"], lead
assert lead[2]["frames"][-1] == {"function": "<module>", "file": "train.py", "line": 3, "kind": "python",
                                 "library": None, "offset": None, "inlined": False}
frag = oom["fragmentation"]
assert (frag["segments"], frag["free_blocks"], frag["pending_blocks"]) == (4, 6, 1), frag
assert frag["free_bytes"] == oom["pool_free_bytes"] and frag["largest_free_block"] == 3 << 20, frag
assert [c["min_bytes"] for c in frag["free_block_sizes"]] == [64 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20], frag
assert [c["blocks"] for c in frag["free_block_sizes"]] == [1, 1, 1, 2, 1], frag
assert oom["other_processes"][0]["pid"] == 4343 and oom["unasked"] == ["libnvidia-ml.so.1 is not installed"]
PY

# Merged, the out-of-memory section stays with its process, its stacks those of the merged report.
"$cli" report "$work/merged_oom.json" --format json 2>/dev/null >"$work/merged_oom_view.json"
python3 - "$work/merged_oom.json" "$work/merged_oom_view.json" <<'PY' || failures=$((failures + 1))
import json, sys
merged = json.load(open(sys.argv[1]))
assert "oom" not in merged and "oom" not in merged["merged_from"][0], "only the failed process has one"
assert merged["merged_from"][1]["oom"]["verdict"] == "fragmentation"
[oom] = json.load(open(sys.argv[2]))["out_of_memory"]
assert oom["process"] == 1, oom["process"]
assert oom["request"]["frames"][0]["function"] == "decode_step(int)", oom["request"]["frames"][0]
assert oom["leading_sites"][2]["frames"][0]["function"] == "python_extension_op()", oom["leading_sites"][2]
PY

# The merged report keeps each rank's figures and the processes it came from.
python3 - "$work/merged.json" <<'PY' || failures=$((failures + 1))
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["format"] == "vramshim-report" and doc["version"] == 3, "header"
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
