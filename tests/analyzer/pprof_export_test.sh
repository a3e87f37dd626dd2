#!/usr/bin/env bash
# `vramshim export --format pprof` read by pprof itself (Debian's golang-go: `go tool pprof`), run as
# README runs it (pprof symbolizes and demangles by default, as -http does): the leaking function first
# with its bytes, stacks with inlined frames as lines of one location and Python frames with their
# files, every name as the report gives it, the growth between two exports, a merged report's ranks.
set -euo pipefail

cli=analyzer/vramshim
work="${TEST_TMPDIR:-$(mktemp -d)}/pprof"
mkdir -p "$work"
export HOME="$work" GOCACHE="$work/gocache" GOFLAGS=-mod=mod GOTOOLCHAIN=local
pprof() { go tool pprof "$@" 2>/dev/null; }

failures=0
expect() {  # DESCRIPTION PATTERN TEXT
  if ! grep -Eq -- "$2" <<<"$3"; then
    echo "FAIL: $1: no match for /$2/ in:" >&2
    echo "$3" >&2
    failures=$((failures + 1))
  fi
}

bash tests/analyzer/fixture_reports.sh "$work"
# Names pprof takes for demangled C++ when the export calls them undemangled (system_name = name):
# Python's <listcomp> (3 MiB) and <lambda> (5 MiB) under <module>, and a function of an anonymous
# namespace, resolved before the report (7 MiB).
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
doc = json.load(open(work + "/base.json"))
doc["version"] = 3
module = next(f["id"] for f in doc["frames"] if f.get("function") == "<module>")
def frame(**fields):
    fields["id"] = len(doc["frames"])
    doc["frames"].append(fields)
    return fields["id"]
def site(frames, mib):
    doc["stacks"].append({"id": len(doc["stacks"]), "frames": frames})
    size = mib << 20
    doc["sites"].append({"stack": len(doc["stacks"]) - 1, "kind": "device", "live_bytes": size,
                         "live_count": 1, "total_bytes": size, "total_count": 1,
                         "peak_bytes": size, "bytes_at_peak": size})
site([frame(python=True, file="data.py", line=7, function="<listcomp>"), module], 3)
site([frame(python=True, file="data.py", line=9, function="<lambda>"), module], 5)
site([frame(symbolized=True, file="model.cc", line=12,
            function="model::(anonymous namespace)::make_buffer(unsigned long)")], 7)
json.dump(doc, open(work + "/names.json", "w"))
PY
"$cli" merge "$work"/rank{0,1,2}.json -o "$work/merged.json" >/dev/null 2>&1
for name in base leak merged names; do
  "$cli" export "$work/$name.json" --format pprof -o "$work/$name.pb.gz" 2>/dev/null
done
# --function and --module keep the sites of a frame they match (they were ignored: every site).
"$cli" export "$work/base.json" --format pprof --function leak_in_model_forward \
  -o "$work/function.pb.gz" 2>/dev/null
"$cli" export "$work/base.json" --format pprof --module 'libmissing_vendor*' \
  -o "$work/module.pb.gz" 2>/dev/null

# The live bytes at exit by function: the largest holder first, with its 16 MiB.
top=$(pprof -top -unit=MB -nodecount=1 "$work/base.pb.gz" | tail -1)
expect "top" '^ +16MB .* init_optimizer_state\(\)$' "$top"
# The other sample types are there too: bytes ever allocated by Linear::forward (24 MiB).
alloc=$(pprof -top -unit=MB -sample_index=alloc_space "$work/base.pb.gz")
expect "alloc_space" '24MB .*model::Linear::forward\(int\)' "$alloc"

# Stacks: an inlined frame is a line of its caller's location; Python frames keep their files.
raw=$(pprof -raw "$work/base.pb.gz")
expect "inlined lines" 'allocate_workspace\(long\) tests/analyzer/fixture_report.cc:458 s=0(\(\))?
 +attention_block\(\) tests/analyzer/fixture_report.cc:462' "$raw"
traces=$(pprof -traces -lines "$work/base.pb.gz")
expect "python frames" 'forward model.py:42' "$traces"
expect "kind label" 'kind: +device' "$traces"

# Names as the report gives them, not cut as pprof simplifies demangled C++: the two Python
# functions apart (both were <unknown>), the anonymous namespace kept (was model::::make_buffer).
names=$(pprof -top -unit=MB "$work/names.pb.gz")
expect "listcomp" '^ +3MB .* <listcomp>$' "$names"
expect "lambda" '^ +5MB .* <lambda>$' "$names"
expect "module" ' 8\.50MB .* <module>$' "$names"
expect "anonymous namespace" '^ +7MB .* model::\(anonymous namespace\)::make_buffer\(unsigned long\)$' "$names"
if grep -qF '<unknown>' <<<"$names"; then
  echo "FAIL: a function named <unknown> in:" >&2
  echo "$names" >&2
  failures=$((failures + 1))
fi
traces=$(pprof -traces "$work/names.pb.gz")
expect "python stack" '5MB +<lambda>
 +<module>' "$traces"

# Only the sites --function or --module keep.
only=$(pprof -top -unit=MB "$work/function.pb.gz")
expect "--function" ' 100% of 3MB total' "$only"
expect "--function's site" '^ +3MB .* leak_in_model_forward\(\)$' "$only"
only=$(pprof -top -unit=kB "$work/module.pb.gz")
expect "--module" ' 100% of 64kB total' "$only"
# A torch-snapshot holds every block of the pool's segments: the options are refused (status 2).
status=0
refused=$("$cli" export "$work/base.json" --format torch-snapshot --function leak_in_model_forward \
  -o "$work/refused.pickle" 2>&1) || status=$?
expect "torch-snapshot refuses --function" 'torch-snapshot holds every block' "$refused"
((status == 2)) || {
  echo "FAIL: export --format torch-snapshot --function: exit status $status, not 2" >&2
  failures=$((failures + 1))
}
[[ ! -e "$work/refused.pickle" ]] || {
  echo "FAIL: export --format torch-snapshot --function wrote its output" >&2
  failures=$((failures + 1))
}

# Two exports diffed: the growth is the leak added in the second run, 15 MiB.
diff=$(pprof -top -unit=MB -nodecount=1 -diff_base="$work/base.pb.gz" "$work/leak.pb.gz" | tail -1)
expect "diff_base" '^ +15MB .* leak_in_optimizer_step\(\)$' "$diff"

# A merged report is one profile with the rank as a label.
tags=$(pprof -tags "$work/merged.pb.gz")
ranks=$(grep -A4 'rank: Total' <<<"$tags")
expect "rank label" 'rank: Total 117.4MB' "$ranks"
for rank in 0 1 2; do expect "rank $rank" ": $rank\$" "$ranks"; done

if ((failures)); then
  echo "$failures checks failed" >&2
  exit 1
fi
echo "pprof reads the exports"
