#!/usr/bin/env bash
# Builds the shim and the CLI with Bazel and copies into gpu-stage/ (git-ignored) everything the GPU machine
# needs, so that one folder travels there (docs/gpu-results.md):
#   gpu-stage/shim/libvramshim.so     the preloaded shim (needs only libc, libm, ld-linux)
#   gpu-stage/analyzer/vramshim       the CLI, with RPATH $ORIGIN/../lib (finds ../shim/libvramshim.so itself)
#   gpu-stage/lib/                    the CLI's shared libraries that Ubuntu 24.04 may lack (libdw, libelf, …)
#   gpu-stage/tests/gpu/, bench/gpu/  run.sh, the Python scripts, the CUDA sources (compiled there by nvcc)
#   gpu-stage/wheels/                 Keras 3 and its dependencies for that machine's Python 3.12 (check 12)
# Run from anywhere: bash tools/stage-gpu.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
stage="$root/gpu-stage"

bazel build //shim:vramshim //analyzer:vramshim
bin="$(bazel info bazel-bin 2>/dev/null)"

rm -rf "$stage"
mkdir -p "$stage/shim" "$stage/analyzer" "$stage/lib" "$stage/tests/gpu" "$stage/bench/gpu"
install -m 0755 "$bin/shim/libvramshim.so" "$stage/shim/libvramshim.so"
install -m 0755 "$bin/analyzer/vramshim" "$stage/analyzer/vramshim"
strip --strip-debug "$stage/analyzer/vramshim" # Bazel keeps -g; the debug info would be most of the stage

# Every library the CLI loads except glibc's own and the C++ runtime (the GPU machine's are newer, and
# both keep backward compatibility). DT_RPATH (not RUNPATH) applies to the libraries' own dependencies too,
# and, unlike LD_LIBRARY_PATH, is not inherited by the processes `vramshim run` starts.
while read -r name path; do
  case "$name" in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux* | libstdc++.so.* | libgcc_s.so.*) ;;
    *) install -m 0644 "$(readlink -f "$path")" "$stage/lib/$name" ;;
  esac
done < <(ldd "$bin/analyzer/vramshim" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')
# shellcheck disable=SC2016 # $ORIGIN is for the dynamic loader, not the shell
patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$stage/analyzer/vramshim"
for library in "$stage"/lib/*; do
  # shellcheck disable=SC2016
  patchelf --force-rpath --set-rpath '$ORIGIN' "$library"
done

# The checks and the benchmark: sources only; the GPU machine compiles the CUDA programs.
copy_tree() {
  (cd "$root/$1" && find . -type f \( -name '*.sh' -o -name '*.py' -o -name '*.cu' \) ! -name '*_test.sh' -print0 |
    xargs -0 -I{} install -D -m 0644 {} "$stage/$1/{}")
}
copy_tree tests/gpu
copy_tree bench/gpu

# Check 12 installs Keras there from these (the GPU machine has no network). NumPy and ml_dtypes come with
# JAX, which that machine has; leaving them out keeps the stage small and JAX's own versions in use.
if python3 -m pip download --quiet --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
  --dest "$stage/wheels" 'keras>=3'; then
  rm -f "$stage"/wheels/numpy-*.whl "$stage"/wheels/ml_dtypes-*.whl
else
  echo "stage-gpu: warning: could not download the Keras wheels; check 12 will fail saying so" >&2
fi

# The staged CLI must start with nothing but its RPATH, and the shim must need nothing beyond glibc.
if env -u LD_LIBRARY_PATH ldd "$stage/analyzer/vramshim" | grep -q 'not found'; then
  echo "stage-gpu: the staged CLI misses libraries:" >&2
  env -u LD_LIBRARY_PATH ldd "$stage/analyzer/vramshim" | grep 'not found' >&2
  exit 1
fi
env -u LD_LIBRARY_PATH "$stage/analyzer/vramshim" --help >/dev/null
needed="$(readelf -d "$stage/shim/libvramshim.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
for library in $needed; do
  case "$library" in
    libc.so.6 | libm.so.6 | ld-linux-x86-64.so.2 | libdl.so.2 | libpthread.so.0) ;;
    *) echo "stage-gpu: warning: the shim needs $library, which the GPU machine may lack" >&2 ;;
  esac
done

{
  echo "staged: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "shim NEEDED: $needed"
  (cd "$stage" && sha256sum shim/libvramshim.so analyzer/vramshim)
} >"$stage/STAGED.txt"

echo "stage-gpu: $(du -sh "$stage" | cut -f1) in $stage ($(find "$stage" -type f | wc -l) files)"
echo "stage-gpu: on the GPU machine, from the repository root:"
echo "  bash gpu-stage/tests/gpu/run.sh; bash gpu-stage/bench/gpu/run.sh"
