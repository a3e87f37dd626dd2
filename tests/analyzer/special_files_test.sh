#!/usr/bin/env bash
# Reports, and the binaries a report names, that are not regular files: a FIFO must not hang the
# analyzer, a device must not be read (/dev/zero never ends). As a report each is refused at once with
# one "vramshim: …" line and exit status 1, in little memory; as a module it is not symbolized and the
# report still renders, its frames as module+offset.
set -euo pipefail

cli=tests/analyzer/reading_cli
work="${TEST_TMPDIR:-$(mktemp -d)}/special"
mkdir -p "$work"
tests/analyzer/fixture_report_bin --out "$work/good.json"
mkfifo "$work/fifo.json"

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Runs COMMAND… with 10 s and 200 MiB of address space; sets rc, out and err.
run_bounded() {
  rc=0
  (
    ulimit -v 204800
    exec timeout 10 "$@"
  ) >"$work/out" 2>"$work/err" || rc=$?
  out=$(cat "$work/out")
  err=$(cat "$work/err")
  if ((rc == 124)); then status="timed out after 10 s"; else status="exit status $rc"; fi
}

expect_refused() {  # FILE WHY COMMAND…: refused with "vramshim: FILE: WHY" alone on stderr, exit 1
  local file=$1 why=$2
  shift 2
  run_bounded "$@"
  if [[ $rc -ne 1 || "$err" != "vramshim: $file: $why" ]]; then
    fail "$*: $status, stderr: $(head -c 500 "$work/err")"
  else
    echo "ok: $2 refuses $file"
  fi
}

for special in "$work/fifo.json:is a FIFO, not a regular file" \
  "/dev/zero:is a character device, not a regular file" \
  "/dev/urandom:is a character device, not a regular file" \
  "/dev/null:is a character device, not a regular file"; do
  file=${special%%:*}
  why=${special#*:}
  expect_refused "$file" "$why" "$cli" report "$file"
  expect_refused "$file" "$why" "$cli" diff "$work/good.json" "$file"
  expect_refused "$file" "$why" "$cli" merge "$work/good.json" "$file" -o "$work/merged.json"
  expect_refused "$file" "$why" "$cli" html "$file" -o "$work/page.html"
done
[[ -e "$work/merged.json" || -e "$work/page.html" ]] && fail "an output file was written"

# The fixture's own binary, renamed in the report to a FIFO or a device.
mkfifo "$work/module_fifo"
for module in "$work/module_fifo:is a FIFO, not a regular file" \
  "/dev/zero:is a character device, not a regular file"; do
  path=${module%%:*}
  why=${module#*:}
  python3 - "$work/good.json" "$path" >"$work/named.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for module in report["modules"]:
    if module["path"].endswith("/fixture_report_bin"):
        module["path"] = sys.argv[2]
json.dump(report, sys.stdout)
PY
  run_bounded "$cli" report "$work/named.json"
  name=$(basename "$path")
  if [[ $rc -ne 0 ]]; then
    fail "report naming $path: $status, stderr: $err"
  elif ! grep -q "$name+0x[0-9a-f]" <<<"$out"; then
    fail "report naming $path: no $name+offset frame in: $out"
  elif ! grep -qxF "vramshim: $path: $why; its frames are shown as module+offset" <<<"$err"; then
    fail "report naming $path: no warning about it in: $err"
  else
    echo "ok: report naming $path renders"
  fi
done

if ((failures)); then
  echo "$failures case(s) failed" >&2
  exit 1
fi
