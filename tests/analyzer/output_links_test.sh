#!/usr/bin/env bash
# The files html and merge write (-o) go through a new temporary file renamed over the name: a link
# another user planted at the name, or at a temporary name they could guess (NAME.tmp.PID), is
# replaced or left alone, never written through.
set -euo pipefail

cli="$PWD/analyzer/vramshim"
work="${TEST_TMPDIR:-$(mktemp -d)}/links"
rm -rf "$work"
mkdir -p "$work"
tests/analyzer/fixture_report_bin --out "$work/good.json"
echo "precious" >"$work/victim"

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# Runs "COMMAND… -o OUTPUT" with links to the victim planted at OUTPUT.tmp.PID: for the pids the
# next processes are likely to get (planted by one process, so as not to use them up), and for the
# command's own pid (planted by the shell that then becomes the command).
run_with_planted_links() {  # OUTPUT COMMAND…
  local output=$1
  shift
  python3 - "$work/victim" "$output" <<'PY'
import os, sys
victim, output = sys.argv[1:]
try:
    last = int(open("/proc/sys/kernel/ns_last_pid").read())
except OSError:
    last = os.getpid()
for pid in range(last + 1, last + 300):
    os.symlink(victim, f"{output}.tmp.{pid}")
PY
  rc=0
  sh -c 'ln -sf "$1" "$2.tmp.$$" && shift 2 && exec "$@"' sh "$work/victim" "$output" \
    "$@" -o "$output" >"$work/out" 2>"$work/err" || rc=$?
}

check_output() {  # NAME OUTPUT TEXT: OUTPUT is a new regular file holding TEXT, the links are intact
  local name=$1 output=$2 text=$3
  if [[ $rc -ne 0 ]]; then
    fail "$name: exit status $rc: $(cat "$work/err")"
  elif [[ -L "$output" || ! -f "$output" ]] || ! grep -q "$text" "$output"; then
    fail "$name: $output is not the new file: $(ls -l "$output")"
  fi
  if [[ "$(cat "$work/victim")" != "precious" ]]; then
    fail "$name: written through a planted link: the victim now starts $(head -c 80 "$work/victim")"
    echo "precious" >"$work/victim"
  fi
  local link
  for link in "$output".tmp.*; do
    [[ -L "$link" && "$(readlink "$link")" == "$work/victim" ]] || fail "$name: $link was replaced or left behind"
  done
}

# A link at the output name itself.
ln -s "$work/victim" "$work/page.html"
run_with_planted_links "$work/page.html" "$cli" html "$work/good.json"
check_output "html over a link" "$work/page.html" "<html"

ln -s "$work/victim" "$work/job.json"
run_with_planted_links "$work/job.json" "$cli" merge "$work/good.json" "$work/good.json"
check_output "merge over a link" "$work/job.json" '"format":"vramshim-report"'

# No link at the name, only at the temporary names.
run_with_planted_links "$work/new.json" "$cli" merge "$work/good.json"
check_output "merge next to planted links" "$work/new.json" '"merged_from"'

# A file replaced keeps its permissions and, for root in the file owner's own directory, its owner:
# a private report stays private.
echo "old" >"$work/private.json"
chmod 600 "$work/private.json"
rc=0
(umask 022 && "$cli" merge "$work/good.json" -o "$work/private.json") 2>"$work/err" || rc=$?
mode=$(stat -c %a "$work/private.json")
[[ $rc -eq 0 && $mode == 600 ]] || fail "merge over a 0600 file: exit status $rc, mode $mode: $(cat "$work/err")"
if [[ $(id -u) -eq 0 ]]; then
  mkdir "$work/theirs"
  echo "old" >"$work/theirs/page.html"
  chown 12345:12345 "$work/theirs" "$work/theirs/page.html"
  chmod 600 "$work/theirs/page.html"
  rc=0
  (umask 022 && "$cli" html "$work/good.json" -o "$work/theirs/page.html") 2>"$work/err" || rc=$?
  owner_mode=$(stat -c '%u:%g %a' "$work/theirs/page.html")
  [[ $rc -eq 0 && $owner_mode == "12345:12345 600" ]] ||
    fail "root's html over another user's 0600 file: exit status $rc, now $owner_mode: $(cat "$work/err")"
  grep -q "<html" "$work/theirs/page.html" || fail "root's html over another user's file: not the page"
fi

# Where the output cannot be written: one line, exit status 1, nothing left behind.
rc=0
"$cli" merge "$work/good.json" -o "$work/missing/job.json" 2>"$work/err" || rc=$?
if [[ $rc -ne 1 || "$(cat "$work/err")" != "vramshim: $work/missing/job.json: cannot write: No such file or directory" ]]; then
  fail "merge into a missing directory: exit status $rc: $(cat "$work/err")"
fi
mkdir "$work/page_dir.html"
rc=0
"$cli" html "$work/good.json" -o "$work/page_dir.html" 2>"$work/err" || rc=$?
[[ $rc -eq 1 ]] || fail "html onto a directory: exit status $rc"
leftovers=$(find "$work" -name '*.tmp.*' ! -type l)
[[ -z "$leftovers" ]] || fail "temporary files left behind: $leftovers"

if ((failures)); then
  echo "$failures case(s) failed" >&2
  exit 1
fi
echo "output link checks passed"
