#!/usr/bin/env bash
# PyTorch memory snapshots of under 1 MB that share one segment, block or event list so often that
# a reader walking every reference as a copy would go through billions of them: import and
# replay refuse each at once with one line "vramshim: …" naming the bound, and exit status 1, as
# they refuse traces of more devices than there are device numbers. A snapshot with a segment on
# each of 65536 devices imports in time.
set -euo pipefail

cli=analyzer/vramshim
fixtures=tests/analyzer/trace_fixtures
work="${TEST_TMPDIR:-$(mktemp -d)}/expansion"
mkdir -p "$work"
failures=0

# NAME MESSAGE COMMAND…: refused within 10 s and 2 GiB of address space.
expect_refused() {
  local name=$1 message=$2
  shift 2
  local rc=0
  (
    ulimit -v 2097152
    exec timeout 10 "$@"
  ) >"$work/out" 2>"$work/err" || rc=$?
  if [[ $rc -ne 1 || $(wc -l <"$work/err") -ne 1 || -s "$work/out" ]] ||
    ! grep -qF "$message" "$work/err" || ! grep -q '^vramshim: ' "$work/err"; then
    echo "FAIL: $name: exit status $rc (124: timed out), stderr:" >&2
    head -c 2000 "$work/err" >&2
    failures=$((failures + 1))
  else
    echo "ok: $name: $(cat "$work/err")"
  fi
}

listed="(a shared one counted each time it is listed)"
expect_refused "import, one block 10^10 times" \
  "snapshot_shared_blocks.pickle: lists more than 20000000 segments, blocks and trace events $listed" \
  "$cli" import torch-snapshot "$fixtures/snapshot_shared_blocks.pickle" -o "$work/blocks.json"
expect_refused "import, one event 6 * 10^9 times" \
  "snapshot_shared_events.pickle: lists more than 20000000 segments, blocks and trace events $listed" \
  "$cli" import torch-snapshot "$fixtures/snapshot_shared_events.pickle" -o "$work/events.json"
expect_refused "replay, one event 6 * 10^9 times" \
  "snapshot_shared_events.pickle: lists more than 20000000 trace events $listed" \
  "$cli" replay "$fixtures/snapshot_shared_events.pickle"
expect_refused "import, 65537 devices" \
  "snapshot_more_devices.pickle: device_traces: lists more devices than there are device numbers" \
  "$cli" import torch-snapshot "$fixtures/snapshot_more_devices.pickle" -o "$work/more.json"
expect_refused "replay, 65537 devices" \
  "snapshot_more_devices.pickle: device_traces: lists more devices than there are device numbers" \
  "$cli" replay "$fixtures/snapshot_more_devices.pickle"
if [[ -e "$work/blocks.json" || -e "$work/events.json" || -e "$work/more.json" ]]; then
  echo "FAIL: an import refused wrote its report" >&2
  failures=$((failures + 1))
fi

rc=0
timeout 20 "$cli" import torch-snapshot "$fixtures/snapshot_many_devices.pickle" \
  -o "$work/devices.json" 2>"$work/err" || rc=$?
if [[ $rc -ne 0 ]]; then
  echo "FAIL: import, 65536 devices: exit status $rc (124: timed out), stderr:" >&2
  head -c 2000 "$work/err" >&2
  failures=$((failures + 1))
else
  echo "ok: import, 65536 devices"
fi

if ((failures)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
