#!/usr/bin/env bash
# The real-GPU check (docs/gpu-results.md). On the GPU machine, from the repository root, after
# tools/stage-gpu.sh has filled gpu-stage/ here:
#
#   bash gpu-stage/tests/gpu/run.sh
#
# Compiles the CUDA programs with that machine's nvcc, then runs checks 1-13 (gpu_checks.py): one line
# `PASS name figure…` or `FAIL name reason…` each, then `N passed, M failed`. The results go to
# $OUT/gpu-check.json when OUT is set, else to a temporary folder (printed at the end). Takes under 5 minutes;
# exits 0 only when every check passed.
#
#   bash gpu-stage/tests/gpu/run.sh --self-test   # tests the pass/fail logic on recorded outputs; no GPU needed
#
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc), GPU_CHECK_BUDGET (seconds for all
# checks, default 240), PYTHON (default python3: the interpreter that has the frameworks; check 12 makes a
# venv on top of it and installs Keras there from gpu-stage/wheels).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
stage="$(cd "$here/../.." && pwd)" # gpu-stage/ (or the repository root when run from the source tree)
python="${PYTHON:-python3}"

if [[ "${1:-}" == "--self-test" ]]; then
  cd "$here" && exec "$python" -m unittest -q verdicts_test clean_environment_test
fi

# The shim and the CLI: staged (gpu-stage/shim, gpu-stage/analyzer) or, in a source tree, Bazel's outputs.
shim="$stage/shim/libvramshim.so"
cli="$stage/analyzer/vramshim"
if [[ ! -e "$shim" && -e "$stage/bazel-bin/shim/libvramshim.so" ]]; then
  shim="$stage/bazel-bin/shim/libvramshim.so"
  cli="$stage/bazel-bin/analyzer/vramshim"
fi
for file in "$shim" "$cli"; do
  [[ -e "$file" ]] || echo "run.sh: missing $file (run tools/stage-gpu.sh first); the checks that need it fail"
done

if [[ -n "${OUT:-}" ]]; then
  results="$OUT/gpu-check.json"
  work="$OUT/gpu-check"
else
  work="$(mktemp -d /tmp/gpu-check.XXXXXX)"
  results="$work/gpu-check.json"
fi
bin="$(mktemp -d /tmp/gpu-check-bin.XXXXXX)" # compiled programs stay out of $OUT
mkdir -p "$work"

nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
nvcc_version="$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
echo "run.sh: shim $shim, cli $cli, nvcc ${nvcc_version:-missing} ($nvcc), work $work"

# The three ways nvcc links a CUDA program: static cudart (nvcc's default), shared cudart, the driver API.
# Compiled in parallel; a failure leaves its program out, and its check fails saying so.
programs="$here/programs"
compile() {
  local output="$1"
  shift
  if ! timeout 60 "$nvcc" -O2 -o "$bin/$output" "$@" >"$bin/$output.log" 2>&1; then
    echo "run.sh: nvcc failed for $output: $(tail -n 3 "$bin/$output.log" | tr '\n' ' ')"
    rm -f "$bin/$output"
  fi
}
# -cudart shared needs libcudart.so at run time, which the loader finds only where the toolkit's library
# folder is in ld.so.conf; an RPATH to the folder nvcc links it from makes that certain.
toolkit="$(dirname "$(dirname "$(readlink -f "$nvcc")")")"
cudart_dir="$toolkit/lib64"
for candidate in "$toolkit/lib64" "$toolkit/lib" "$toolkit/targets/x86_64-linux/lib"; do
  if compgen -G "$candidate/libcudart.so*" >/dev/null; then
    cudart_dir="$candidate"
    break
  fi
done
compile alloc_loop_static "$programs/alloc_loop.cu" &
compile alloc_loop_shared -cudart shared -Xlinker "-rpath=$cudart_dir" "$programs/alloc_loop.cu" &
compile driver_alloc_loop "$programs/driver_alloc_loop.cu" -lcuda &
wait

"$python" "$here/gpu_checks.py" --shim "$shim" --cli "$cli" --bin "$bin" --work "$work" --json "$results" \
  --wheels "$stage/wheels" --budget "${GPU_CHECK_BUDGET:-240}" --nvcc-version "$nvcc_version"
