#!/usr/bin/env bash
# Every report-reading command (report, diff, merge, html, export) answers bad input with one line
# "vramshim: …" on stderr and exit status 1: never a crash, a hang or a partial output file.
set -euo pipefail

cli=analyzer/vramshim
work="${TEST_TMPDIR:-$(mktemp -d)}/bad"
mkdir -p "$work"
tests/analyzer/fixture_report_bin --out "$work/good.json"

: >"$work/empty.json"
head -c "$(($(wc -c <"$work/good.json") / 2))" "$work/good.json" >"$work/truncated.json"
printf 'PK\003\004\000\000binary garbage\377\376' >"$work/not_json.json"
printf '[1, 2, 3]\n' >"$work/array.json"
sed 's/"vramshim-report"/"memray-report"/' "$work/good.json" >"$work/wrong_format.json"
sed 's/"version":1/"version":99/' "$work/good.json" >"$work/newer_version.json"
sed 's/"sites":/"sights":/' "$work/good.json" >"$work/missing_sites.json"
sed 's/"kind":"device"/"kind":17/' "$work/good.json" >"$work/wrong_type.json"
# A count below zero, and an integer whose magnitude no int64_t holds.
sed 's/"pool_hits":[0-9]*/"pool_hits":-5/' "$work/good.json" >"$work/negative_count.json"
sed 's/"device":0/"device":-9223372036854775808/' "$work/good.json" >"$work/most_negative.json"
# A device number no machine has: an export would make room for that many devices.
sed 's/"device":0/"device":9007199254740992/' "$work/good.json" >"$work/huge_device.json"
tests/analyzer/fixture_report_bin --out "$work/oom.json" --oom
sed 's/"verdict":"fragmentation"/"verdict":7/' "$work/oom.json" >"$work/malformed_oom.json"
python3 -c 'print("[" * 100000 + "]" * 100000)' >"$work/deep.json"
# The good report with stack 0 (its first site's) as FRAMES copies of its outermost frame, which
# is shown.
with_long_stack() {  # FRAMES
  python3 - "$work/good.json" "$1" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
stack = report["stacks"][0]
stack["frames"] = stack["frames"][-1:] * int(sys.argv[2])
json.dump(report, sys.stdout)
PY
}
# Histories past what the shim writes: more slots than 4096 (the growth analysis walked every slot
# of every series: 2,000 series of a million slots took 8 s), and two series for one site.
with_history() {  # SLOTS SERIES
  python3 - "$work/good.json" "$1" "$2" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
slots, series = int(sys.argv[2]), int(sys.argv[3])
report["history"] = {"budget_bytes": 1 << 20, "ticks": slots, "ticks_per_slot": 1,
                     "slot_times": list(range(slots)),
                     "sites": [{"site": 0, "points": [[0, 1, 1]]}] * series}
json.dump(report, sys.stdout)
PY
}
with_history 4097 1 >"$work/history_slots.json"
# Sites the shim never writes: a kind of allocation it does not know, a second site of one stack
# and kind (50,000 of them on one long stack took 1.65 GB).
sed 's/"kind":"device"/"kind":"k1"/' "$work/good.json" >"$work/unknown_kind.json"
python3 -c '
import json, sys
report = json.load(open(sys.argv[1]))
report["sites"].append(dict(report["sites"][0]))
json.dump(report, sys.stdout)' "$work/good.json" >"$work/second_site.json"
# A module's base below zero: a merge wrote it back as 2^64 - 1, which no reader takes.
sed 's/"base":[0-9]*/"base":-1/' "$work/good.json" >"$work/negative_base.json"
with_history 2 2 >"$work/history_twice.json"
with_long_stack 200000 >"$work/deep_stack.json"  # about 1 MB: the call tree recursed once per frame
python3 -c 'import sys; sys.stdout.write("{\"format\": \"" + "A" * (64 << 20) + "\"}")' >"$work/huge_string.json"
printf '{' >"$work/huge_file.json"
truncate -s 5G "$work/huge_file.json"  # sparse
mkdir -p "$work/directory.json"

failures=0
expect_rejected() {  # NAME COMMAND…
  local name=$1
  shift
  local rc=0
  "$@" >"$work/out" 2>"$work/err" || rc=$?
  local lines
  lines=$(wc -l <"$work/err")
  if [[ $rc -ne 1 || $lines -ne 1 ]] || ! grep -q '^vramshim: ' "$work/err"; then
    echo "FAIL: $name: exit status $rc, stderr:" >&2
    head -c 2000 "$work/err" >&2
    failures=$((failures + 1))
  else
    echo "ok: $name: $(head -c 200 "$work/err")"
  fi
}

for bad in empty truncated not_json array wrong_format newer_version missing_sites wrong_type \
  negative_count most_negative huge_device malformed_oom history_slots history_twice negative_base unknown_kind second_site deep deep_stack \
  huge_string huge_file directory \
  does_not_exist; do
  file="$work/$bad.json"
  expect_rejected "report $bad" "$cli" report "$file"
  expect_rejected "report --tree $bad" "$cli" report "$file" --tree
  expect_rejected "report --format json $bad" "$cli" report "$file" --format json
  expect_rejected "diff $bad" "$cli" diff "$work/good.json" "$file"
  expect_rejected "merge $bad" "$cli" merge "$work/good.json" "$file" -o "$work/merged.json"
  expect_rejected "html $bad" "$cli" html "$file" -o "$work/page.html"
  expect_rejected "export torch-snapshot $bad" "$cli" export "$file" --format torch-snapshot \
    -o "$work/snapshot.pickle"
  expect_rejected "export pprof $bad" "$cli" export "$file" --format pprof -o "$work/profile.pb.gz"
  if [[ -e "$work/merged.json" || -e "$work/page.html" || -e "$work/snapshot.pickle" ||
    -e "$work/profile.pb.gz" ]]; then
    echo "FAIL: $bad: an output file was written" >&2
    failures=$((failures + 1))
  fi
done
rm -f "$work/huge_file.json"

# The stack too long is named.
"$cli" report "$work/deep_stack.json" --tree >/dev/null 2>"$work/err" || true
if ! grep -qF "vramshim: $work/deep_stack.json: stacks[0].frames: 200000 frames, more than the 4096" \
  "$work/err"; then
  echo "FAIL: deep_stack: the stack is not named: $(head -c 500 "$work/err")" >&2
  failures=$((failures + 1))
fi

# The longest stack a report may hold still renders as a tree and a page.
with_long_stack 4096 >"$work/longest_stack.json"
if ! "$cli" report "$work/longest_stack.json" --tree >/dev/null 2>"$work/err" ||
  ! "$cli" html "$work/longest_stack.json" -o "$work/longest.html" >/dev/null 2>"$work/err"; then
  echo "FAIL: a stack of 4096 frames: $(head -c 500 "$work/err")" >&2
  failures=$((failures + 1))
fi

# A small report of long names in deep stacks, many of them listed by the page's rows: the stacks
# the page lists are bounded (20 stacks of 4,096 frames named by 4 KiB each, 343 KB of report,
# made a page of 333 MB and took 1.6 GB; 4.9 MB and 37 MB now).
python3 - "$work/good.json" >"$work/listed_stacks.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
report["version"] = 3  # symbolized frames: named in the report itself
site = report["sites"][0]
def frame(function):
    report["frames"].append({"id": len(report["frames"]), "symbolized": True, "file": "a.cc",
                             "line": 1, "function": function})
    return report["frames"][-1]["id"]
long_name = frame("F" + "x" * 4000)
for k in range(20):
    stack = {"id": len(report["stacks"]), "frames": [frame("leaf%d" % k)] + [long_name] * 4095}
    report["stacks"].append(stack)
    report["sites"].append(dict(site, stack=stack["id"]))
json.dump(report, sys.stdout)
PY
if ! "$cli" html "$work/listed_stacks.json" -o "$work/listed.html" >/dev/null 2>"$work/err"; then
  echo "FAIL: a page of long listed stacks: $(head -c 500 "$work/err")" >&2
  failures=$((failures + 1))
elif (($(wc -c <"$work/listed.html") > 32 << 20)); then
  echo "FAIL: a page of long listed stacks is $(wc -c <"$work/listed.html") bytes" >&2
  failures=$((failures + 1))
fi

# A newline in the command line, the host or the executable's path would add a line of the
# program's choosing to the header, read as the report's own: shown as \n.
python3 - "$work/good.json" >"$work/spoofed.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
report["process"]["cmdline"].append("\nPeak in use: 0 B (spoofed)")
report["process"]["host"] = "node\nspoofed host line"
report["process"]["exe"] = "/bin/x\nspoofed exe line"
json.dump(report, sys.stdout)
PY
"$cli" report "$work/spoofed.json" >"$work/out" 2>/dev/null || true
if grep -q '^Peak in use: 0 B (spoofed)\|^spoofed' "$work/out"; then
  echo "FAIL: a newline in the process's strings made a header line: $(head -c 500 "$work/out")" >&2
  failures=$((failures + 1))
fi

# Names that would act on a terminal (a window title, a clipboard write, a screen clear, U+009B):
# report, diff and report --tree print them with '?' for the controls.
python3 - "$work/good.json" >"$work/escapes.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
evil = "\x1b]0;TITLE\x07\x1b]52;c;ZXZpbA==\x07\x1b[2J\u009b31m"
report["process"]["cmdline"][0] = evil
report["process"]["host"] = evil
for frame in report["frames"]:
    if isinstance(frame, dict) and frame.get("function"):
        frame["function"] = evil + frame["function"]
json.dump(report, sys.stdout)
PY
for command in "report $work/escapes.json" "report $work/escapes.json --tree" \
  "diff $work/good.json $work/escapes.json"; do
  # shellcheck disable=SC2086
  "$cli" $command >"$work/out" 2>"$work/err" || true
  if grep -qP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$work/out" "$work/err" ||
    ! grep -qF '?]0;TITLE?' "$work/out"; then
    echo "FAIL: vramshim $command printed a terminal control, or not the name: $(head -c 300 "$work/out" | od -c | head -5)" >&2
    failures=$((failures + 1))
  fi
done

# Two builds of one program whose 40 sites have stacks of 4,096 frames named by 4 KiB each: every
# line moved, so the sites match by their functions alone, in bounded memory (a key of the names
# themselves was kept per site: 700 MB for this report of 1.8 MB).
wide_sites() {  # LINE_SHIFT
  python3 - "$work/good.json" "$1" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
report["version"] = 3  # symbolized frames: named in the report itself
first = len(report["frames"])
for j in range(256):
    report["frames"].append({"id": first + j, "symbolized": True, "file": "a.cc",
                             "line": j + int(sys.argv[2]), "function": "F%d" % j + "x" * 4000})
for k in range(40):
    stack = {"id": len(report["stacks"]), "frames": [first + (k + i) % 256 for i in range(4096)]}
    report["stacks"].append(stack)
    report["sites"].append(dict(report["sites"][0], stack=stack["id"], live_bytes=1000 + k))
json.dump(report, sys.stdout)
PY
}
# Not under AddressSanitizer (tools/sanitizer-tests.sh): its shadow memory alone is over the limit.
if [[ -z ${ASAN_OPTIONS:-} ]]; then
  wide_sites 0 >"$work/wide_old.json"
  wide_sites 1 >"$work/wide_new.json"
  rc=0
  (
    ulimit -v 262144
    exec "$cli" diff "$work/wide_old.json" "$work/wide_new.json"
  ) >"$work/out" 2>"$work/err" || rc=$?
  if ((rc != 0)) || ! grep -q "^Top 0 of 0 changed sites" "$work/out"; then
    echo "FAIL: diff of sites with wide stacks in 256 MiB: exit status $rc, $(grep -v 'shown as' "$work/err" | head -c 300)" >&2
    failures=$((failures + 1))
  fi
fi

# An output past the limit on a file's size (ulimit -f 8: 8 KiB): the write fails with one line, the
# file replaced is left as it was, and no temporary file is left (SIGXFSZ ended the CLI and left
# NAME.tmp.* behind).
printf 'kept\n' >"$work/kept"
rc=0
(
  ulimit -f 8
  exec "$cli" html "$work/good.json" -o "$work/kept"
) >/dev/null 2>"$work/err" || rc=$?
err=$(grep -v 'its frames are shown as module+offset' "$work/err" || true)
if [[ $rc -ne 1 || "$err" != "vramshim: $work/kept: cannot write: File too large" ||
  "$(cat "$work/kept")" != kept ]] || compgen -G "$work/kept.tmp.*" >/dev/null; then
  echo "FAIL: html -o past ulimit -f: exit status $rc, stderr: $(head -c 300 "$work/err"), files: $(ls "$work" | grep kept)" >&2
  failures=$((failures + 1))
fi

# An empty file name is named "" (the message began ": No such file or directory").
"$cli" report "" >/dev/null 2>"$work/err" || true
"$cli" html "$work/good.json" -o "" >/dev/null 2>>"$work/err" || true
if [[ "$(grep -v 'shown as module+offset' "$work/err")" != 'vramshim: "": No such file or directory
vramshim: "": cannot write: No such file or directory' ]]; then
  echo "FAIL: an empty file name: $(head -c 500 "$work/err")" >&2
  failures=$((failures + 1))
fi

# A report with nothing a PyTorch snapshot is made of (format 1: no segments, no trace): one line,
# naming the file, before any warning of the frames' symbolization.
expect_rejected "export torch-snapshot of a report without segments" \
  "$cli" export "$work/good.json" --format torch-snapshot -o "$work/snapshot.pickle"
if ! grep -qxF "vramshim: $work/good.json: the report has no segments and no trace (a report of format version 1, or one written with VRAMSHIM_TRACE=off before the pool held a segment)" \
  "$work/err"; then
  echo "FAIL: export of a report without segments: $(head -c 500 "$work/err")" >&2
  failures=$((failures + 1))
fi

if ((failures)); then
  echo "$failures case(s) failed" >&2
  exit 1
fi
