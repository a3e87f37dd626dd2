#!/usr/bin/env bash
# Every command's output written to a full device (/dev/full): exit status 1 and one line
# "vramshim: standard output: No space left on device", never a success after a cut output (a
# textfile collector's `cmd > f.$$ && mv f.$$ f.prom` would install it). A reader that closes its
# pipe early is no error: with SIGPIPE ignored the command still exits 0, silently.
set -euo pipefail

cli=$PWD/analyzer/vramshim
work=$(mktemp -d /tmp/vramshim-stdout-test.XXXXXX)
sockets=$work/vramshim
program_pid=
cleanup() {
  if [[ -n $program_pid ]]; then kill "$program_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# A program under the shim with memory cached, for the commands that ask running processes.
mkfifo "$work/ready"
XDG_RUNTIME_DIR=$work VRAMSHIM_REPORT=off LD_PRELOAD=$PWD/shim/libvramshim.so \
  LD_LIBRARY_PATH=$PWD/tests/fakecuda tests/integration/programs/cached_idle cache 4 1048576 \
  >"$work/ready" 2>/dev/null &
program_pid=$!
read -r line <"$work/ready"
[[ $line == ready ]] || fail "the program did not start: $line"
export XDG_RUNTIME_DIR=$work
"$cli" snapshot "$program_pid" -o "$work/report.json" 2>/dev/null || fail "no snapshot"

# COMMAND…: written to /dev/full, exit status 1 and the one line on stderr.
expect_full_refused() {
  local rc=0
  "$@" >/dev/full 2>"$work/err" </dev/null || rc=$?
  local err
  err=$(cat "$work/err")
  if [[ $rc -ne 1 || $err != "vramshim: standard output: No space left on device" ]]; then
    fail "$* > /dev/full: exit status $rc, stderr: $err"
  else
    echo "ok: $* > /dev/full fails"
  fi
}

expect_full_refused "$cli" ps --dir "$sockets"
expect_full_refused "$cli" ps --dir "$sockets" --format json
expect_full_refused "$cli" top --dir "$sockets"
expect_full_refused "$cli" watch "$program_pid" --once
expect_full_refused "$cli" stats "$program_pid"
expect_full_refused "$cli" stats "$program_pid" --prometheus
expect_full_refused "$cli" stats --all --prometheus --dir "$sockets"
expect_full_refused "$cli" report "$work/report.json"
expect_full_refused "$cli" report "$work/report.json" --format json
expect_full_refused "$cli" version
expect_full_refused "$cli" --help

# A reader that closed its end before the command wrote (more than a pipe holds, so that the write
# is made after the close): with SIGPIPE ignored the write fails with EPIPE, which is no error.
rc=0
(
  trap '' PIPE
  exec "$cli" man-page 2>"$work/err"
) | (exec 0<&-) || rc=$?
if [[ $rc -ne 0 || -s $work/err ]]; then
  fail "man-page into a closed pipe, SIGPIPE ignored: exit status $rc, stderr: $(cat "$work/err")"
else
  echo "ok: a closed pipe is no error"
fi

if ((failures > 0)); then
  echo "standard_output_test: $failures checks failed"
  exit 1
fi
echo "standard_output_test: all checks passed"
