#!/usr/bin/env bash
# The release tarball (//:release), unpacked as a user would: the layout, owner and times it
# promises; programs that load nothing from the host but glibc and the compiler runtime, and no
# symbol newer than glibc 2.36; `bin/vramshim run` of a program against the simulated driver, with
# the shim found at ../lib/ by itself; the man page and the completions where a prefix keeps them.
set -euo pipefail

tarball=$PWD/packaging/vramshim-linux-x86_64.tar.gz
program=$PWD/tests/integration/programs/attribution_app
fakecuda=$PWD/tests/fakecuda
version=$(tr -cd '0-9A-Za-z.+-' <VERSION)
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$tarball"
root="$work/vramshim-$version"

# Layout: exactly these files, plus the bundled libraries under lib/vramshim/.
expected="bin/vramshim
lib/libvramshim.so
share/bash-completion/completions/vramshim
share/doc/vramshim/LICENSE
share/doc/vramshim/README.md
share/man/man1/vramshim.1
share/zsh/site-functions/_vramshim"
listed=$(cd "$root" && find . -type f ! -path './lib/vramshim/*' | sed 's|^\./||' | sort)
[[ "$listed" == "$expected" ]] || fail "the tarball holds: $(tr '\n' ' ' <<<"$listed")"
bundled=$(cd "$root/lib/vramshim" && ls)
grep -qx 'libdw.so.1' <<<"$bundled" || fail "lib/vramshim/ lacks libdw.so.1: $(tr '\n' ' ' <<<"$bundled")"
[[ -x "$root/bin/vramshim" ]] || fail "bin/vramshim is not executable"
# Every member owned by 0/0 and dated 1980-01-01: the same inputs give the same archive.
odd=$(tar -tvzf "$tarball" --numeric-owner | awk '$2 != "0/0" || $4 != "1980-01-01"')
[[ -z "$odd" ]] || fail "members not owned by 0/0 at 1980-01-01: $odd"

# Self-contained: what the programs and the shim load comes from lib/vramshim/ or is the host's
# glibc and C++ runtime; nothing is missing.
for elf in "$root/bin/vramshim" "$root/lib/libvramshim.so"; do
  while read -r name arrow path _; do
    [[ "$arrow" == "=>" ]] || continue
    case "$name" in
      libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | librt.so.1 | libstdc++.so.6 | libgcc_s.so.1) continue ;;
    esac
    [[ "$(realpath "$path")" == "$root/lib/vramshim/$name" ]] || fail "$(basename "$elf") loads $name from $path"
  done < <(env -u LD_LIBRARY_PATH ldd "$elf")
done
newest=$(for elf in "$root"/bin/* "$root"/lib/*.so "$root"/lib/vramshim/*; do objdump -T "$elf"; done |
  grep -oE 'GLIBC_[0-9]+\.[0-9]+' | sort -uV | tail -1)
[[ "$(printf '%s\n' "$newest" GLIBC_2.36 | sort -V | tail -1)" == GLIBC_2.36 ]] ||
  fail "the tarball needs $newest, newer than the glibc 2.36 it promises"

# bin/vramshim run finds lib/libvramshim.so by itself.
# shellcheck disable=SC2016 # the child's shell expands it
preload=$(cd "$work" && env -u VRAMSHIM_LIB "$root/bin/vramshim" run --report off -- sh -c 'echo "$LD_PRELOAD"')
[[ "$preload" == "$root/lib/libvramshim.so" ]] || fail "bin/vramshim run preloads '$preload'"
status=0
summary=$(cd "$work" && env -u VRAMSHIM_LIB LD_LIBRARY_PATH="$fakecuda" \
  "$root/bin/vramshim" run --report "$work/run.%p.json" "$program" linked 2>&1) || status=$?
[[ $status == 0 ]] || fail "bin/vramshim run exited $status: $summary"
grep -q 'leak_three_blocks' <<<"$summary" || fail "the run's summary names no leak_three_blocks: $summary"
report=$(find "$work" -maxdepth 1 -name 'run.*.json' | head -1)
if [[ -z "$report" ]]; then
  fail "the run wrote no report"
else
  leaks=$("$root/bin/vramshim" report --leaks "$report" 2>&1) || fail "bin/vramshim report --leaks failed: $leaks"
  grep -A2 '^#1  3.0 MiB live' <<<"$leaks" | grep -q 'leak_three_blocks' ||
    fail "bin/vramshim report --leaks does not show leak_three_blocks' 3 MiB first: $leaks"
fi
"$root/bin/vramshim" exporter --help >/dev/null 2>&1 || fail "bin/vramshim exporter --help failed"

# The man page and the completions.
page=$(MANWIDTH=120 man -l "$root/share/man/man1/vramshim.1" 2>&1 | col -b)
grep -q '^   vramshim run$' <<<"$page" || fail "man -l share/man/man1/vramshim.1 has no section for run"
completion=$(bash -c 'source "$1"; COMP_WORDS=(vramshim rep); COMP_CWORD=1; _vramshim; printf "%s " "${COMPREPLY[@]}"' \
  _ "$root/share/bash-completion/completions/vramshim" 2>&1)
[[ "$completion" == *report* ]] || fail "the bash completion completes 'vramshim rep' to: $completion"
zsh -n "$root/share/zsh/site-functions/_vramshim" || fail "the zsh completion does not parse"

((failures == 0)) || exit 1
echo "release_test: 1 passed, 0 failed"
