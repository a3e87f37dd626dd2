#!/usr/bin/env bash
# vramshim replay on the checked-in training snapshot: the figures it prints match those Python
# computes from the same file on its own (peak in use, PyTorch's peak reserved and segment calls),
# the pool off reserves exactly what is in use, and the default pool meets its target against
# PyTorch. Broken and hostile traces get one line "vramshim: …" and exit status 1.
set -euo pipefail

cli=analyzer/vramshim
trace=bench/traces/training_snapshot.pickle
fixtures=tests/analyzer/trace_fixtures
work="${TEST_TMPDIR:-$(mktemp -d)}/replay"
mkdir -p "$work"
failures=0

"$cli" replay "$trace" >"$work/table.txt"
cat "$work/table.txt"
for expected in 'peak reserved' '/ in use' '/ PyTorch' 'driver allocs' 'free at peak' \
  'fragmentation' 'ns/op' '^  PyTorch ' '^  default ' '^  no-split ' '^  driver-only ' \
  "reserves .* of PyTorch's peak (target <= 1.10x): met"; do
  if ! grep -q -- "$expected" "$work/table.txt"; then
    echo "FAIL: the table has no '$expected'" >&2
    failures=$((failures + 1))
  fi
done

"$cli" replay "$trace" --json --runs 2 >"$work/figures.json"
if ! python3 - "$trace" "$work/figures.json" <<'PY'; then
import json
import pickle
import sys

with open(sys.argv[1], "rb") as f:
    events = pickle.load(f)["device_traces"][0]
replay = json.load(open(sys.argv[2]))

live, in_use, peak_in_use, reserved, peak_reserved, segments = {}, 0, 0, 0, 0, 0
for e in events:
    if e["action"] == "alloc":
        live[e["addr"]] = (e["size"] + 511) // 512 * 512
        in_use += live[e["addr"]]
        peak_in_use = max(peak_in_use, in_use)
    elif e["action"] == "free_completed":
        in_use -= live.pop(e["addr"])
    elif e["action"] == "segment_alloc":
        reserved += e["size"]
        segments += 1
        peak_reserved = max(peak_reserved, reserved)
allocations = sum(e["action"] == "alloc" for e in events)
frees = sum(e["action"] == "free_completed" for e in events)

failures = []
def check(what, got, expected):
    if got != expected:
        failures.append(f"{what}: {got}, expected {expected}")

(device,) = replay["devices"]
check("allocations", device["allocations"], allocations)
check("frees", device["frees"], frees)
check("peak in use", device["peak_in_use_bytes"], peak_in_use)
check("PyTorch's peak reserved", device["recorded"]["peak_reserved_bytes"], peak_reserved)
check("PyTorch's segments", device["recorded"]["driver_alloc_calls"], segments)
policies = {p["policy"]: p for p in device["policies"]}
check("policies", sorted(policies), ["default", "driver-only", "no-split"])
for name, p in policies.items():
    check(f"{name}: peak in use", p["peak_in_use_bytes"], peak_in_use)
    if p["peak_reserved_bytes"] < peak_in_use:
        failures.append(f"{name}: reserves less than is in use")
    if not p["ns_per_operation"] > 0:
        failures.append(f"{name}: no time per operation")
    if p["fragmentation_at_peak"] is not None and not 0 <= p["fragmentation_at_peak"] <= 1:
        failures.append(f"{name}: fragmentation {p['fragmentation_at_peak']}")
    check(f"{name}: against PyTorch", p["peak_reserved_vs_recorded"],
          p["peak_reserved_bytes"] / peak_reserved)
driver = policies["driver-only"]
check("driver-only: peak reserved", driver["peak_reserved_bytes"], peak_in_use)
check("driver-only: driver allocations", driver["driver_alloc_calls"], allocations)
check("driver-only: driver frees", driver["driver_free_calls"], frees)
check("driver-only: free at peak", driver["free_bytes_at_peak"], 0)
if not policies["default"]["peak_reserved_vs_recorded"] <= 1.10:
    failures.append("default: over 1.10x PyTorch's peak reserved")
if not policies["default"]["driver_alloc_calls"] < allocations / 10:
    failures.append("default: the pool hardly pooled")
for failure in failures:
    print("FAIL:", failure, file=sys.stderr)
print(f"ok: peak in use {peak_in_use}, PyTorch reserves {peak_reserved}, default pool reserves "
      f"{policies['default']['peak_reserved_bytes']}")
sys.exit(1 if failures else 0)
PY
  failures=$((failures + 1))
fi

"$cli" replay "$trace" --policy max-cached=64MiB,default --runs 1 --json >"$work/two.json"
if [[ "$(python3 -c 'import json, sys; print(",".join(p["policy"] for p in
    json.load(open(sys.argv[1]))["devices"][0]["policies"]))' "$work/two.json")" != \
  "max-cached=64MiB,default" ]]; then
  echo "FAIL: --policy max-cached=64MiB,default" >&2
  failures=$((failures + 1))
fi

# A history of the last events only (make_trace_fixtures.py's window_snapshot): what the device held
# before them (2 segments of 2 MiB; 1000, 700 and 300 B allocated) is replayed first.
"$cli" replay "$fixtures/snapshot_window.pickle" --runs 1 --json >"$work/window.json"
if ! python3 - "$work/window.json" <<'PY'; then
import json, sys
(device,) = json.load(open(sys.argv[1]))["devices"]
got = (device["allocations"], device["allocations_before_trace"], device["frees"],
       device["peak_in_use_bytes"], device["recorded"]["peak_reserved_bytes"])
assert got == (4, 3, 2, 1024 + 1024 + 512, 4 << 20), got  # peak: before the first free
PY
  echo "FAIL: the replay of a history of the last events" >&2
  failures=$((failures + 1))
fi
grep -q "3 allocations were live before the trace's first event" \
  <("$cli" replay "$fixtures/snapshot_window.pickle" --runs 1) ||
  { echo "FAIL: the replay does not say what was live before the trace" >&2; failures=$((failures + 1)); }

expect_rejected() {  # NAME MESSAGE COMMAND…
  local name=$1 message=$2
  shift 2
  local rc=0
  "$@" >"$work/out" 2>"$work/err" || rc=$?
  if [[ $rc -ne 1 || $(wc -l <"$work/err") -ne 1 || -s "$work/out" ]] ||
    ! grep -q "^vramshim: .*$message" "$work/err"; then
    echo "FAIL: $name: exit status $rc, stdout $(wc -c <"$work/out") bytes, stderr:" >&2
    head -c 2000 "$work/err" >&2
    failures=$((failures + 1))
  else
    echo "ok: $name: $(cat "$work/err")"
  fi
}

printf '{"format": "vramshim-report", "version": 1}' >"$work/report.json"
printf 'not a trace\n' >"$work/text.txt"
head -c 1000 "$trace" >"$work/truncated.pickle"
mkfifo "$work/fifo.pickle"
expect_rejected "unknown action" "device_traces\[1\]\[5\]: unknown action 'allocate'" \
  "$cli" replay "$fixtures/snapshot_unknown_action.pickle"
expect_rejected "a free of a freed allocation" \
  "free_completed of 0x7f0000000000, which is not allocated then" \
  "$cli" replay "$fixtures/snapshot_unknown_free.pickle"
expect_rejected "alloc at a live address" "which is already allocated" \
  "$cli" replay "$fixtures/snapshot_double_alloc.pickle"
expect_rejected "code in the pickle" "(GLOBAL) refused: it names posix.system" \
  "$cli" replay "$fixtures/refused_global.pickle"
expect_rejected "an object in the pickle" "(STACK_GLOBAL) refused" \
  "$cli" replay "$fixtures/refused_object.pickle"
expect_rejected "truncated" "truncated" "$cli" replay "$work/truncated.pickle"
expect_rejected "a vramshim report" "records no event trace yet" "$cli" replay "$work/report.json"
expect_rejected "text" "not a PyTorch memory snapshot" "$cli" replay "$work/text.txt"
expect_rejected "missing" "No such file" "$cli" replay "$work/missing.pickle"
expect_rejected "a directory" "is a directory" "$cli" replay "$work"
expect_rejected "a FIFO" "not a regular file" timeout 10 "$cli" replay "$work/fifo.pickle"
expect_rejected "unknown policy" "unknown policy 'fast'" "$cli" replay "$trace" --policy fast
# Sizes no device holds: their sums wrapped (a peak reserved of -2 B).
python3 -c '
import pickle, sys
events = [{"action": "segment_map", "addr": i << 40, "size": (1 << 63) - 1, "stream": 0,
           "time_us": i, "frames": []} for i in range(3)]
pickle.dump({"segments": [], "device_traces": [events]}, open(sys.argv[1], "wb"))
' "$work/huge_sizes.pickle"
expect_rejected "sizes no device holds" "more than any device holds" \
  "$cli" replay "$work/huge_sizes.pickle"

if ((failures)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
