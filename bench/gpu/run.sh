#!/usr/bin/env bash
# The GPU benchmark (docs/gpu-results.md). On the GPU machine, from the repository root, after
# tools/stage-gpu.sh has filled gpu-stage/ here:
#
#   bash gpu-stage/bench/gpu/run.sh
#
# Compiles alloc_pair_latency with that machine's nvcc, then runs bench.py: the training step of docs/design.md
# in five allocator configurations and the cudaMalloc+cudaFree pair latency, printed as markdown tables
# (ratios to PyTorch's own allocator). Writes $OUT/gpu-bench.json when OUT is set, else into a temporary
# folder. Takes about a minute, at most GPU_BENCH_BUDGET seconds (default 75) plus the compile.
#
#   bash gpu-stage/bench/gpu/run.sh --self-test   # tests the table formatting; no GPU needed
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
stage="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"

if [[ "${1:-}" == "--self-test" ]]; then
  cd "$here" && exec "$python" -m unittest -q bench_table_test
fi

shim="$stage/shim/libvramshim.so"
[[ -e "$shim" || ! -e "$stage/bazel-bin/shim/libvramshim.so" ]] || shim="$stage/bazel-bin/shim/libvramshim.so"
[[ -e "$shim" ]] || echo "bench: missing $shim (run tools/stage-gpu.sh first)"

if [[ -n "${OUT:-}" ]]; then
  work="$OUT/gpu-bench"
  results="$OUT/gpu-bench.json"
else
  work="$(mktemp -d /tmp/gpu-bench.XXXXXX)"
  results="$work/gpu-bench.json"
fi
bin="$(mktemp -d /tmp/gpu-bench-bin.XXXXXX)"
mkdir -p "$work"

nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
nvcc_version="$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
echo "bench: shim $shim, nvcc ${nvcc_version:-missing} ($nvcc), work $work"
if ! timeout 60 "$nvcc" -O2 -o "$bin/alloc_pair_latency" "$here/alloc_pair_latency.cu" >"$bin/nvcc.log" 2>&1; then
  echo "bench: nvcc failed: $(tail -n 3 "$bin/nvcc.log" | tr '\n' ' ')"
fi

"$python" "$here/bench.py" --shim "$shim" --bin "$bin" --work "$work" --json "$results" \
  --budget "${GPU_BENCH_BUDGET:-75}"
