#!/usr/bin/env bash
# The shim under a newer glibc than the one it was built against (the GPU machine's Ubuntu 24.04 has
# 2.39; these machines build on Debian 12's 2.36): each door program, run by Debian sid's loader and
# libc where tools/install-sid-pythons.sh put them, prints the same hook and driver counts as under
# the system's glibc. Skips where sid's libc is not installed (CI).
set -euo pipefail

sid_libs="${SID_LIBS:-/opt/sid-python/usr/lib/x86_64-linux-gnu}"
sid_loader="$sid_libs/ld-linux-x86-64.so.2"
if [[ ! -x "$sid_loader" ]]; then
  echo "newer_glibc_test: no sid loader at $sid_loader (tools/install-sid-pythons.sh); nothing to test"
  exit 0
fi
shim="$PWD/shim/libvramshim.so"
fakecuda="$PWD/tests/fakecuda"
programs="$PWD/tests/integration/programs"

# The lines a run's counts are judged by: the shim's "calls" lines and the fake driver's own.
counts() { grep -E '^(vramshim: calls|fake )' | sort; }

export VRAMSHIM_LOG=debug VRAMSHIM_REPORT=off VRAMSHIM_SOCKET=off
echo "newer_glibc_test: $("$sid_loader" --version | head -n 1)"
for program in dlsym_door linked_door proc_address_door pool_pairs; do
  system=$(LD_LIBRARY_PATH="$fakecuda" LD_PRELOAD="$shim" "$programs/$program" 2>&1 | counts)
  newer=$("$sid_loader" --library-path "$sid_libs:$fakecuda" --preload "$shim" \
    "$programs/$program" 2>&1 | counts)
  if [[ -z "$system" || "$system" != "$newer" ]]; then
    echo "newer_glibc_test: $program counts differ under the newer glibc"
    diff <(echo "$system") <(echo "$newer") || true
    exit 1
  fi
  echo "newer_glibc_test: $program ok ($(echo "$newer" | grep -c .) count lines)"
done
