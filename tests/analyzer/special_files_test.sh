#!/usr/bin/env bash
# Reports, and the binaries a report names, that are not regular files: a FIFO must not hang the
# analyzer, a device must not be read (/dev/zero never ends). As a report each is refused at once with
# one "vramshim: …" line and exit status 1, in little memory; as a module it is not symbolized and the
# report still renders, its frames as module+offset. The same for a module's separate debug file: a
# FIFO at its name is passed over, and so are a regular file of another build and one too large to
# check.
set -euo pipefail

cli=analyzer/vramshim
work="${TEST_TMPDIR:-$(mktemp -d)}/special"
mkdir -p "$work"
tests/analyzer/fixture_report_bin --out "$work/good.json"
mkfifo "$work/fifo.json"
# A kernel interface that looks like a regular file, as another user could link it among the reports:
# /proc/self/pagemap never ends (and /proc/kmsg blocks).
ln -s /proc/self/pagemap "$work/pagemap.json"

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
  "/dev/null:is a character device, not a regular file" \
  "/proc/self/pagemap:is a file of the kernel's procfs, not a regular file" \
  "$work/pagemap.json:is a file of the kernel's procfs, not a regular file"; do
  file=${special%%:*}
  why=${special#*:}
  expect_refused "$file" "$why" "$cli" report "$file"
  expect_refused "$file" "$why" "$cli" diff "$work/good.json" "$file"
  expect_refused "$file" "$why" "$cli" merge "$work/good.json" "$file" -o "$work/merged.json"
  expect_refused "$file" "$why" "$cli" html "$file" -o "$work/page.html"
done
# The readers of PyTorch snapshots too.
why="is a file of the kernel's procfs, not a regular file"
expect_refused "$work/pagemap.json" "$why" "$cli" replay "$work/pagemap.json"
expect_refused "$work/pagemap.json" "$why" "$cli" import torch-snapshot "$work/pagemap.json" \
  -o "$work/imported.json"
[[ -e "$work/merged.json" || -e "$work/page.html" || -e "$work/imported.json" ]] &&
  fail "an output file was written"

# Writes REPORT with the module named …/BINARY renamed to PATH.
rename_module() {  # REPORT BINARY PATH
  python3 - "$@" <<'PY'
import json, sys
report, binary, path = sys.argv[1:]
report = json.load(open(report))
for module in report["modules"]:
    if module["path"].endswith("/" + binary):
        module["path"] = path
json.dump(report, sys.stdout)
PY
}

# The fixture's own binary, renamed in the report to a FIFO or a device.
mkfifo "$work/module_fifo"
for module in "$work/module_fifo:is a FIFO, not a regular file" \
  "/dev/zero:is a character device, not a regular file"; do
  path=${module%%:*}
  why=${module#*:}
  rename_module "$work/good.json" fixture_report_bin "$path" >"$work/named.json"
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

# The fixture's binary split as distributions ship binaries: DIR/BINARY keeps its dynamic symbols
# alone and a .gnu_debuglink to DIR/BINARY.debug, which holds its symbol table and DWARF. Function
# names and lines can only come from that debug file.
split_debug_file() {  # BINARY DIR
  mkdir -p "$2"
  cp "tests/analyzer/$1" "$2/$1"
  chmod u+w "$2/$1"
  objcopy --only-keep-debug "$2/$1" "$2/$1.debug"
  objcopy --strip-all --add-gnu-debuglink="$2/$1.debug" "$2/$1"
}

# How `report` shows a frame of init_optimizer_state() symbolized from the fixture's DWARF.
function_line=$(grep -n '^__attribute__((noinline)) void init_optimizer_state()' \
  tests/analyzer/fixture_report.cc | cut -d: -f1)
symbolized="init_optimizer_state() (tests/analyzer/fixture_report.cc:$function_line)"

# CASE REPORT BINARY MODULE symbolized|unsymbolized: `report` names MODULE for BINARY, finishes in
# 10 s and shows the fixture's frames by function and line, or as MODULE's basename+offset only.
expect_rendered() {
  local case=$1 report=$2 binary=$3 module=$4 expected=$5
  local module_offset
  module_offset="$(basename "$module")+0x[0-9a-f]"
  rename_module "$report" "$binary" "$module" >"$work/named.json"
  run_bounded "$cli" report "$work/named.json"
  if [[ $rc -ne 0 ]]; then
    fail "$case: $status, stderr: $err"
  elif [[ $expected == symbolized ]] && ! grep -qF "$symbolized" <<<"$out"; then
    fail "$case: no \"$symbolized\" in: $out"
  elif [[ $expected == unsymbolized ]] && grep -qF "init_optimizer_state" <<<"$out"; then
    fail "$case: symbolized although no debug file should be used: $out"
  elif [[ $expected == unsymbolized ]] && ! grep -q "$module_offset" <<<"$out"; then
    fail "$case: no $(basename "$module")+offset frame in: $out"
  else
    echo "ok: $case"
  fi
}

debug="$work/debug"
build_id=$(python3 -c 'import json, sys
print(next(m["build_id"] for m in json.load(open(sys.argv[1]))["modules"]
           if m["path"].endswith("/fixture_report_bin")))' "$work/good.json")
[[ -n $build_id ]] || fail "the fixture's report has no build-id"

split_debug_file fixture_report_bin "$debug/beside"
expect_rendered "debug file beside the module" \
  "$work/good.json" fixture_report_bin "$debug/beside/fixture_report_bin" symbolized

mkdir -p "$debug/link"
ln -s "$debug/beside/fixture_report_bin" "$debug/link/fixture_report_bin"
expect_rendered "debug file beside a symbolic link's target" \
  "$work/good.json" fixture_report_bin "$debug/link/fixture_report_bin" symbolized

split_debug_file fixture_report_bin "$debug/fifos"
rm "$debug/fifos/fixture_report_bin.debug"
mkdir "$debug/fifos/.debug"
mkfifo "$debug/fifos/fixture_report_bin.debug" "$debug/fifos/.debug/fixture_report_bin.debug"
expect_rendered "FIFOs at the debuglink name, in the module's directory and in .debug/" \
  "$work/good.json" fixture_report_bin "$debug/fifos/fixture_report_bin" unsymbolized

split_debug_file fixture_report_bin "$debug/fifo_then_file"
mkdir "$debug/fifo_then_file/.debug"
mv "$debug/fifo_then_file/fixture_report_bin.debug" "$debug/fifo_then_file/.debug/"
mkfifo "$debug/fifo_then_file/fixture_report_bin.debug"
expect_rendered "a FIFO at the debuglink name, the debug file in .debug/" \
  "$work/good.json" fixture_report_bin "$debug/fifo_then_file/fixture_report_bin" symbolized

# The same DWARF under another build-id: only the build-id tells it from the module's.
split_debug_file fixture_report_bin "$debug/other_build_id"
python3 - "$debug/other_build_id/fixture_report_bin.debug" "$build_id" <<'PY'
import sys
path, build_id = sys.argv[1], bytes.fromhex(sys.argv[2])
data = open(path, "rb").read()
assert data.count(build_id) == 1, "the build-id is not in the debug file exactly once"
other = build_id[:-1] + bytes([build_id[-1] ^ 0xff])
open(path, "wb").write(data.replace(build_id, other))
PY
expect_rendered "a debug file with another build-id at the debuglink name" \
  "$work/good.json" fixture_report_bin "$debug/other_build_id/fixture_report_bin" unsymbolized

# Without a build-id the debuglink's CRC of the debug file decides.
tests/analyzer/fixture_report_without_build_id_bin --out "$work/without_build_id.json"
split_debug_file fixture_report_without_build_id_bin "$debug/crc"
expect_rendered "a module without build-id, its debug file beside it" \
  "$work/without_build_id.json" fixture_report_without_build_id_bin \
  "$debug/crc/fixture_report_without_build_id_bin" symbolized
split_debug_file fixture_report_without_build_id_bin "$debug/other_crc"
printf 'changed' >>"$debug/other_crc/fixture_report_without_build_id_bin.debug"
expect_rendered "a module without build-id, a debug file of other contents beside it" \
  "$work/without_build_id.json" fixture_report_without_build_id_bin \
  "$debug/other_crc/fixture_report_without_build_id_bin" unsymbolized
# Its CRC is over the whole file: a file at the debuglink name larger than any debug file (sparse,
# taking no room) is passed over unread, and the debug file in .debug/ is used.
split_debug_file fixture_report_without_build_id_bin "$debug/huge_crc"
mkdir "$debug/huge_crc/.debug"
mv "$debug/huge_crc/fixture_report_without_build_id_bin.debug" "$debug/huge_crc/.debug/"
truncate -s 1T "$debug/huge_crc/fixture_report_without_build_id_bin.debug"
expect_rendered "a module without build-id, a sparse 1 TiB file at the debuglink name" \
  "$work/without_build_id.json" fixture_report_without_build_id_bin \
  "$debug/huge_crc/fixture_report_without_build_id_bin" symbolized
rm -f "$debug/huge_crc/fixture_report_without_build_id_bin.debug"

# A report naming more binaries than the open-file limit allows: each module is read with a
# descriptor, and the page must still be written (1,200 modules with `ulimit -n 1024` made it
# unwritable, "Too many open files"). COUNT modules at PATH ("%d" in it numbers them), named by the
# fixture's frame, with BUILD_ID ("wrong": another build's, one each).
many_modules() {  # COUNT BUILD_ID PATH
  python3 - "$work/good.json" "$@" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
count, build_id, path = int(sys.argv[2]), sys.argv[3], sys.argv[4]
fixture = next(m for m in report["modules"] if m["path"].endswith("/fixture_report_bin"))
frame = next(f for f in report["frames"] if f.get("module") == fixture["id"])
frames = []
for k in range(count):
    module = dict(fixture, id=len(report["modules"]), path=path.replace("%d", str(k)))
    module.pop("segments", None)  # the build-id tells the binary
    module["build_id"] = "%040x" % (k + 1) if build_id == "wrong" else build_id
    report["modules"].append(module)
    report["frames"].append(dict(frame, id=len(report["frames"]), module=module["id"]))
    frames.append(report["frames"][-1]["id"])
report["stacks"].append({"id": len(report["stacks"]), "frames": frames})
report["sites"].append(dict(report["sites"][0], stack=report["stacks"][-1]["id"]))
json.dump(report, sys.stdout)
PY
}
# LIMITS CASE REPORT: `html REPORT -o` under `ulimit LIMITS` writes the page.
expect_page_written() {
  local limits=$1 case=$2 report=$3
  rm -f "$work/many.html"
  rc=0
  (
    # shellcheck disable=SC2086
    ulimit $limits
    exec timeout 60 "$cli" html "$report" -o "$work/many.html"
  ) >/dev/null 2>"$work/err" || rc=$?
  if [[ $rc -ne 0 || ! -s "$work/many.html" ]]; then
    fail "$case: exit status $rc, stderr: $(grep -v 'its frames are shown' "$work/err" | head -c 500)"
  else
    echo "ok: $case"
  fi
}
# 200 modules of the fixture's binary, each under another build-id: no load succeeds, and none
# keeps the binary open.
many_modules 200 wrong "$(pwd)/tests/analyzer/fixture_report_bin" >"$work/many_failed.json"
expect_page_written "-n 64" "200 modules that cannot be used, 64 open files at most" \
  "$work/many_failed.json"
# 200 binaries that are used (copies of a small library): the CLI raises its soft limit to the
# hard one, and the binaries are read whole, not kept open.
if (($(ulimit -Hn) >= 1024)); then
  mkdir -p "$work/binaries"
  for k in $(seq 0 199); do cp tests/analyzer/libversioned_symbol.so "$work/binaries/lib$k.so"; done
  library_build_id=$(readelf -n tests/analyzer/libversioned_symbol.so | awk '/Build ID/ {print $3}')
  many_modules 200 "$library_build_id" "$work/binaries/lib%d.so" >"$work/many_used.json"
  expect_page_written "-Sn 64" "200 modules used, a soft limit of 64 open files" \
    "$work/many_used.json"
  # Nor does a module in use keep its binary open.
  expect_page_written "-n 64" "200 modules used, 64 open files at most" "$work/many_used.json"
  rm -rf "$work/binaries"
fi

if ((failures)); then
  echo "$failures case(s) failed" >&2
  exit 1
fi
