#!/usr/bin/env bash
# vramshim export --format torch-snapshot and vramshim import torch-snapshot. Reports written by the
# shim (the simulated driver) are exported; each pickle is loaded by Python's pickle and checked by
# tests/integration/torch_snapshot_check.py against the structure PyTorch documents and its viewer
# reads (a replay of the viewer's walk over each device's trace), with the report's totals; memory
# outside the pool is there as segments of their own; a merged report gives a device index per
# process. A PyTorch-shaped snapshot (bench/traces/) is imported: its totals are the report's, the
# report commands read it, and its export gives back the snapshot's totals; native frames are
# shown as PyTorch symbolized them. Where PyTorch is
# installed, its own python -m torch.cuda._memory_viz reads the exports. Bad snapshots: one line,
# exit status 1.
set -euo pipefail

cli=analyzer/vramshim
check="/usr/bin/python3 tests/integration/torch_snapshot_check.py"
snapshot=bench/traces/training_snapshot.pickle
work="${TEST_TMPDIR:-$(mktemp -d)}/torch"
mkdir -p "$work"
failures=0
failed() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
under_shim() {  # REPORT PROGRAM ARGS…
  local report=$1
  shift
  LD_PRELOAD="$PWD/shim/libvramshim.so" LD_LIBRARY_PATH="$PWD/tests/fakecuda" \
    VRAMSHIM_REPORT="$report" VRAMSHIM_SOCKET=off "$@"
}

# Every kind of memory, live at exit: device and pitched in the pool; stream-ordered, managed and
# VMM (one kept, one released) outside it; pinned host memory, which is no device's.
under_shim "$work/kinds.json" tests/integration/programs/all_kinds
# A loop that allocates, frees and leaks through the pool.
under_shim "$work/grow.json" tests/integration/programs/growing_sites 40
for name in kinds grow; do
  "$cli" export "$work/$name.json" --format torch-snapshot -o "$work/$name.pickle"
done
MiB=1048576
$check "$work/kinds.pickle" --report "$work/kinds.json" --devices 1 \
  --expect-direct async:$((3 * MiB)) --expect-direct managed:$((4 * MiB)) \
  --expect-direct vmm:$((2 * MiB)) || failed "the export of all_kinds"
$check "$work/grow.pickle" --report "$work/grow.json" --devices 1 || failed "the export of growing_sites"
# The released VMM allocation and the pool's frees are in the trace.
/usr/bin/python3 - "$work/kinds.pickle" "$work/grow.pickle" <<'PY' || failed "trace entries"
import pickle, sys
kinds = pickle.load(open(sys.argv[1], "rb"))["device_traces"][0]
grow = pickle.load(open(sys.argv[2], "rb"))["device_traces"][0]
released = [e for e in kinds if e["action"] == "segment_free" and e["size"] == 4 << 20]
assert len(released) == 1, f"segment_free of the released 4 MiB VMM allocation: {released}"
actions = {e["action"] for e in grow}
assert {"alloc", "free_requested", "free_completed", "segment_alloc", "snapshot"} <= actions, actions
named = {f["name"] for e in grow for f in e["frames"]}
assert any("leak_one_mib_per_step" in n for n in named), sorted(named)[:20]
PY
# Writing to standard output gives the same bytes.
"$cli" export "$work/kinds.json" --format torch-snapshot -o - >"$work/stdout.pickle"
cmp -s "$work/stdout.pickle" "$work/kinds.pickle" || failed "-o - differs from -o FILE"

# A merged report: one device index per process and device, the processes named.
"$cli" merge "$work/kinds.json" "$work/grow.json" -o "$work/merged.json" 2>/dev/null
"$cli" export "$work/merged.json" --format torch-snapshot -o "$work/merged.pickle"
$check "$work/merged.pickle" --devices 2 || failed "the export of a merged report"
/usr/bin/python3 - "$work/merged.pickle" "$work/kinds.json" "$work/grow.json" <<'PY' ||
import json, pickle, sys
snapshot = pickle.load(open(sys.argv[1], "rb"))
pids = [json.load(open(path))["process"]["pid"] for path in sys.argv[2:]]
mapping = [(d["index"], d["pid"], d["device"]) for d in snapshot["vramshim_devices"]]
assert mapping == [(0, pids[0], 0), (1, pids[1], 0)], (mapping, pids)
for index, path in enumerate(sys.argv[2:]):
    report = json.load(open(path))
    reserved = sum(s["total_size"] for s in snapshot["segments"]
                   if s["device"] == index and "vramshim_kind" not in s)
    assert reserved == report["devices"][0]["reserved_bytes"], (index, reserved)
PY
  failed "the merged export's devices"

# merge --no-trace: the same merged figures, without the processes' segments and traces.
"$cli" merge --no-trace "$work/kinds.json" "$work/grow.json" -o "$work/lean.json" 2>/dev/null
/usr/bin/python3 - "$work/merged.json" "$work/lean.json" <<'PY' || failed "merge --no-trace"
import json, sys
full, lean = (json.load(open(path)) for path in sys.argv[1:])
assert all("segments" in p and "trace" in p for p in full["merged_from"]), "the full merge lost them"
assert not any("segments" in p or "trace" in p for p in lean["merged_from"]), lean["merged_from"]
assert lean["sites"] == full["sites"] and lean["peak"] == full["peak"]
PY

# Import: the snapshot's totals are the report's.
"$cli" import torch-snapshot "$snapshot" -o "$work/imported.json"
/usr/bin/python3 - "$snapshot" "$work/imported.json" <<'PY' || failed "the imported report's totals"
import json, pickle, sys
snapshot = pickle.load(open(sys.argv[1], "rb"))
report = json.load(open(sys.argv[2]))
assert report["version"] == 3 and report["reason"] == "import", (report["version"], report["reason"])
blocks = [b for s in snapshot["segments"] for b in s["blocks"]]
in_use = sum(b["requested_size"] for b in blocks if b["state"] == "active_allocated")
reserved = sum(s["total_size"] for s in snapshot["segments"])
device = report["devices"][0]
assert (device["in_use_bytes"], device["reserved_bytes"]) == (in_use, reserved), (device, in_use, reserved)
assert sum(s["live_bytes"] for s in report["sites"]) == in_use
allocs = sum(1 for e in snapshot["device_traces"][0] if e["action"] == "alloc")
assert sum(1 for e in report["trace"]["events"] if e[1] == "alloc") == allocs
symbolized = [f for f in report["frames"] if f.get("python")]
assert {f["file"] for f in symbolized} == {"train.py"}, symbolized[:3]
PY
# A snapshot of PyTorch's expandable segments: a reserved range mapped in pieces. Its export keeps
# them (is_expandable, segment_map and segment_unmap), and the viewer's walk over it holds.
/usr/bin/python3 - "$work/expandable.pickle" <<'PY'
import pickle, sys
MiB, base = 1 << 20, 0x7F0000000000
def event(action, addr, size, t):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t,
            "frames": [{"filename": "train.py", "line": 5, "name": "step"}]}
blocks = [{"address": base, "size": 4 * MiB, "requested_size": 4 * MiB, "state": "active_allocated",
           "frames": []},
          {"address": base + 4 * MiB, "size": 36 * MiB, "requested_size": 0, "state": "inactive",
           "frames": []}]
segment = {"device": 0, "address": base, "total_size": 40 * MiB, "allocated_size": 4 * MiB,
           "active_size": 4 * MiB, "requested_size": 4 * MiB, "stream": 0, "segment_type": "large",
           "segment_pool_id": (0, 0), "is_expandable": True, "frames": [], "blocks": blocks}
trace = [event("segment_map", base, 20 * MiB, 1), event("alloc", base, 4 * MiB, 2),
         event("segment_map", base + 20 * MiB, 20 * MiB, 3),
         event("alloc", base + 20 * MiB, 8 * MiB, 4),
         event("free_requested", base + 20 * MiB, 8 * MiB, 5),
         event("free_completed", base + 20 * MiB, 8 * MiB, 6),
         event("segment_unmap", base + 30 * MiB, 10 * MiB, 7),
         event("segment_map", base + 30 * MiB, 10 * MiB, 8)]
settings = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "max_split_size": -1,
            "garbage_collection_threshold": 0.0, "expandable_segments": True}
pickle.dump({"segments": [segment], "device_traces": [trace], "allocator_settings": settings},
            open(sys.argv[1], "wb"), protocol=4)
PY
$check "$work/expandable.pickle" || failed "the expandable snapshot as written"
"$cli" import torch-snapshot "$work/expandable.pickle" -o "$work/expandable.json" &&
  "$cli" export "$work/expandable.json" --format torch-snapshot -o "$work/expandable.export.pickle" ||
  failed "the round trip of the expandable snapshot"
$check "$work/expandable.export.pickle" --report "$work/expandable.json" --devices 1 ||
  failed "the export of the expandable snapshot"
/usr/bin/python3 - "$work/expandable.export.pickle" <<'PY' || failed "the expandable segment exported"
import pickle, sys
snapshot = pickle.load(open(sys.argv[1], "rb"))
assert [s["is_expandable"] for s in snapshot["segments"]] == [True], snapshot["segments"]
assert snapshot["allocator_settings"]["expandable_segments"] is True
actions = [e["action"] for e in snapshot["device_traces"][0] if e["action"].startswith("segment")]
assert actions == ["segment_map", "segment_map", "segment_unmap", "segment_map"], actions
PY

# The report commands read it.
"$cli" report "$work/imported.json" >"$work/imported.txt" || failed "report of the imported report"
grep -q "train.py:31" "$work/imported.txt" || failed "the report names no train.py line: $(head -20 "$work/imported.txt")"
"$cli" report "$work/imported.json" --growth >/dev/null || failed "report --growth of the imported report"
"$cli" diff "$work/imported.json" "$work/grow.json" >/dev/null || failed "diff of the imported report"
"$cli" merge "$work/imported.json" "$work/grow.json" -o "$work/merged2.json" 2>/dev/null ||
  failed "merge of the imported report"
"$cli" html "$work/imported.json" -o "$work/imported.html" || failed "html of the imported report"
# Native frames come as PyTorch symbolized them, and are shown so.
/usr/bin/python3 - "$work/native.pickle" <<'PY'
import pickle, sys
frames = [{"filename": "/pytorch/aten/src/ATen/Empty.cpp", "line": 42, "name": "at::empty"},
          {"filename": "model.py", "line": 7, "name": "forward"}]
block = {"address": 1 << 40, "size": 2 << 20, "requested_size": 2 << 20,
         "state": "active_allocated", "frames": frames}
pickle.dump({"segments": [{"device": 0, "address": 1 << 40, "total_size": 2 << 20,
                           "blocks": [block]}], "device_traces": [[]]},
            open(sys.argv[1], "wb"), protocol=4)
PY
"$cli" import torch-snapshot "$work/native.pickle" -o "$work/native.json"
native=$("$cli" report "$work/native.json" --stacks)
grep -Eq 'at::empty \(/pytorch/aten/src/ATen/Empty.cpp:42\)' <<<"$native" ||
  failed "the symbolized frame is not shown as it is: $native"
grep -Eq 'forward \(model.py:7\)' <<<"$native" || failed "the Python frame: $native"
# The round trip: the export of the imported report has the snapshot's totals.
"$cli" export "$work/imported.json" --format torch-snapshot -o "$work/round_trip.pickle"
$check "$work/round_trip.pickle" --same-totals "$snapshot" --devices 1 || failed "the round trip"

# Bad snapshots: one line, exit status 1, nothing written.
expect_rejected() {  # NAME MESSAGE FILE
  local rc=0
  "$cli" import torch-snapshot "$3" -o "$work/bad.json" >"$work/out" 2>"$work/err" || rc=$?
  if [[ $rc -ne 1 || $(wc -l <"$work/err") -ne 1 || -s "$work/out" || -e "$work/bad.json" ]] ||
    ! grep -q "^vramshim: .*$2" "$work/err"; then
    failed "$1: exit status $rc, stderr: $(head -c 500 "$work/err")"
  fi
}
head -c 5000 "$snapshot" >"$work/truncated.pickle"
: >"$work/empty.pickle"
/usr/bin/python3 -c 'import pickle, sys; pickle.dump("text", open(sys.argv[1], "wb"), protocol=4)' \
  "$work/text.pickle"
# A list is the segments alone (torch.cuda.memory_snapshot()): each must be a segment.
/usr/bin/python3 -c 'import pickle, sys; pickle.dump([1, 2], open(sys.argv[1], "wb"), protocol=4)' \
  "$work/list.pickle"
/usr/bin/python3 -c '
import pickle, sys
pickle.dump({"segments": [{"device": 0, "address": 4096, "total_size": 512,
             "blocks": [{"size": 1024, "state": "inactive"}]}]}, open(sys.argv[1], "wb"), protocol=4)' \
  "$work/outside.pickle"
expect_rejected "truncated" "truncated" "$work/truncated.pickle"
expect_rejected "empty" "empty" "$work/empty.pickle"
expect_rejected "a report" "a JSON file" "$work/kinds.json"
expect_rejected "not a snapshot" "not a PyTorch memory snapshot" "$work/text.pickle"
expect_rejected "a list of other things than segments" "segments\[0\]: is a int, not a dict" \
  "$work/list.pickle"
expect_rejected "a block outside its segment" "segments\[0\].blocks\[0\]: lies outside its segment" \
  "$work/outside.pickle"
rc=0
"$cli" import pprof "$snapshot" -o "$work/bad.json" 2>"$work/err" || rc=$?
[[ $rc -eq 2 ]] || failed "import of an unknown format: exit status $rc"

# PyTorch's own reader, where PyTorch is installed.
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  for name in kinds grow merged round_trip; do
    for view in stats trace; do
      /usr/bin/python3 -m torch.cuda._memory_viz "$view" "$work/$name.pickle" >"$work/$name.$view" ||
        failed "torch.cuda._memory_viz $view $name.pickle"
    done
  done
  /usr/bin/python3 - "$work" <<'PY' || failed "torch.cuda._memory_viz's totals"
import pickle, sys
from torch.cuda import _memory_viz as viz
for name in ("kinds", "grow", "merged", "round_trip"):
    data = pickle.load(open(f"{sys.argv[1]}/{name}.pickle", "rb"))
    reserved = sum(s["total_size"] for s in data["segments"])
    allocated = sum(s["requested_size"] for s in data["segments"])
    stats = open(f"{sys.argv[1]}/{name}.stats").read()
    assert f"total_reserved: {viz.Bytes(reserved)}" in stats, (name, stats[-400:])
    assert f"total_allocated: {viz.Bytes(allocated)}" in stats, (name, stats[-400:])
    # segments and memory need flamegraph.pl, fetched from the network: give them the lines.
    for view in (viz.segments, viz.memory):
        lines = view(data, format_flamegraph=lambda text: text)
        assert sum(int(line.rsplit(" ", 1)[1]) for line in lines.splitlines()) == reserved, name
PY
  echo "ok: PyTorch's torch.cuda._memory_viz reads the exports"
else
  echo "skipped: torch.cuda._memory_viz (PyTorch is not installed for /usr/bin/python3)"
fi

# Snapshots dumped after an out-of-memory error, of two ranks, as PyTorch before 2.2 wrote them
# (no time_us): each import explains its own failure; merged, each process keeps its own (imports
# are all pid 0, and were taken for one process: rank 1's failure shown under rank 0); exported and
# imported again, the failing call keeps its frames.
/usr/bin/python3 - "$work" <<'PY'
import pickle, sys
MiB, base = 1 << 20, 0x7F0000000000
frames = lambda line: [{"filename": "train.py", "line": line, "name": "step"}]
for rank, failing in ((0, False), (1, True)):
    blocks = [{"address": base, "size": 8 * MiB, "requested_size": 8 * MiB,
               "state": "active_allocated", "frames": frames(10 + rank)},
              {"address": base + 8 * MiB, "size": 12 * MiB, "requested_size": 0,
               "state": "inactive", "frames": []}]
    segment = {"device": 0, "address": base, "total_size": 20 * MiB, "stream": 0,
               "segment_type": "large", "blocks": blocks}
    trace = [{"action": "segment_alloc", "addr": base, "size": 20 * MiB, "stream": 0,
              "frames": frames(1)},
             {"action": "alloc", "addr": base, "size": 8 * MiB, "stream": 0,
              "frames": frames(10 + rank)}]
    if failing:
        trace.append({"action": "oom", "device_free": 0, "size": 16 * MiB, "stream": 0,
                      "frames": frames(40)})
    pickle.dump({"segments": [segment], "device_traces": [trace]},
                open(f"{sys.argv[1]}/rank{rank}.pickle", "wb"), protocol=4)
PY
for rank in 0 1; do
  "$cli" import torch-snapshot "$work/rank$rank.pickle" -o "$work/rank$rank.json" ||
    failed "import of rank $rank's snapshot"
done
"$cli" merge "$work/rank0.json" "$work/rank1.json" -o "$work/ranks.json" 2>"$work/ranks.err" ||
  failed "merge of the imported ranks"
"$cli" export "$work/rank1.json" --format torch-snapshot -o "$work/rank1.export.pickle" &&
  "$cli" import torch-snapshot "$work/rank1.export.pickle" -o "$work/rank1.again.json" ||
  failed "export and import again of rank 1's"
/usr/bin/python3 - "$work" <<'PY' || failed "the imported out-of-memory sections"
import json, sys
work = sys.argv[1]
rank0, rank1, merged, again = (json.load(open(f"{work}/{name}.json"))
                               for name in ("rank0", "rank1", "ranks", "rank1.again"))
assert "oom" not in rank0, rank0.get("oom")
oom = rank1["oom"]
assert (oom["verdict"], oom["pool_free_bytes"], oom["pool_largest_free_block"]) == \
    ("exhaustion", 12 << 20, 12 << 20), oom
processes = merged["merged_from"]
assert len(processes) == 2, [p.get("reason") for p in processes]
assert "oom" not in processes[0] and processes[1]["oom"]["request"]["bytes"] == 16 << 20
def failing_frame(report):
    stack = report["stacks"][report["oom"]["request"]["stack"]]["frames"]
    return report["frames"][stack[0]]["line"]
assert failing_frame(rank1) == 40 and failing_frame(again) == 40
PY

if ((failures)); then
  echo "$failures checks failed" >&2
  exit 1
fi
echo "ok: exports load, match their reports and replay as the viewer walks them; imports match"
