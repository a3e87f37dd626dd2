#!/usr/bin/env bash
# Lays out the native part of a release, as a tar archive (owner root, fixed times, sorted names):
#   bin/vramshim          the CLI (its exporter included)
#   lib/libvramshim.so    the preloaded shim (needs only glibc)
#   lib/vramshim/         every other shared library the CLI loads, copied from this machine
#                         (libdw, libelf, libncursesw, …)
# The CLI finds lib/vramshim/ through DT_RPATH $ORIGIN/../lib/vramshim (RPATH, unlike RUNPATH,
# also serves the copied libraries' own dependencies, and unlike LD_LIBRARY_PATH it is not passed to
# the processes `vramshim run` starts), and the CLI finds ../lib/libvramshim.so by itself. Only glibc
# and the compiler runtime (libstdc++, libgcc_s) stay the host's: every glibc ≥ 2.36 system has
# them, and they keep backward compatibility. Fails when a needed library cannot be found.
# Usage: stage_native.sh OUT.tar CLI SHIM
set -euo pipefail

out=$1 cli=$2 shim=$3
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib/vramshim"
# Bazel builds with -g; the debug information would be most of the size.
install -m 0755 "$cli" "$stage/bin/vramshim"
strip --strip-debug "$stage/bin/vramshim"
install -m 0755 "$shim" "$stage/lib/libvramshim.so"
strip --strip-debug "$stage/lib/libvramshim.so"

host_library() {
  case "$1" in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux* | libstdc++.so.* | libgcc_s.so.*) return 0 ;;
  esac
  return 1
}

for program in "$stage"/bin/*; do
  if env -u LD_LIBRARY_PATH ldd "$program" | grep 'not found'; then
    echo "stage_native: $(basename "$program") needs libraries this machine lacks" >&2
    exit 1
  fi
  while read -r name path; do
    host_library "$name" || install -m 0644 "$(readlink -f "$path")" "$stage/lib/vramshim/$name"
  done < <(env -u LD_LIBRARY_PATH ldd "$program" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')
  # shellcheck disable=SC2016 # $ORIGIN is for the dynamic loader, not the shell
  patchelf --force-rpath --set-rpath '$ORIGIN/../lib/vramshim' "$program"
done
for library in "$stage"/lib/vramshim/*; do
  # shellcheck disable=SC2016
  patchelf --force-rpath --set-rpath '$ORIGIN' "$library"
done

# 1980-01-01, the earliest time a zip archive (the wheel) can hold.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@315532800 --format=gnu \
  -C "$stage" -cf "$out" bin lib
