#!/usr/bin/env bash
# The GPU check's CUDA programs compile and link the three ways run.sh builds them (static cudart, shared
# cudart, -lcuda), and the driver-API program runs against the simulated driver with and without the shim,
# its pairs served by the pool. (The CUDA runtime itself does not start on the simulated driver: cudart needs
# the driver's private cuGetExportTable tables, which tests/fakecuda does not have.)
set -euo pipefail

nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
if [[ ! -x "$nvcc" ]]; then
  echo "cuda_programs_test: no nvcc at $nvcc; nothing to test here"
  exit 0
fi
work="${TEST_TMPDIR:-$(mktemp -d)}"
export TMPDIR="$work"
shim="$PWD/shim/libvramshim.so"
fakecuda="$PWD/tests/fakecuda"

"$nvcc" -O2 -o "$work/alloc_loop_static" tests/gpu/programs/alloc_loop.cu
"$nvcc" -O2 -cudart shared -o "$work/alloc_loop_shared" tests/gpu/programs/alloc_loop.cu
"$nvcc" -O2 -o "$work/driver_alloc_loop" tests/gpu/programs/driver_alloc_loop.cu -lcuda
"$nvcc" -O2 -o "$work/alloc_pair_latency" bench/gpu/alloc_pair_latency.cu
readelf -d "$work/alloc_loop_static" | grep -q 'libcudart' && { echo "static cudart links libcudart.so"; exit 1; }
readelf -d "$work/alloc_loop_shared" | grep -q 'NEEDED.*libcudart.so' || { echo "shared cudart lacks libcudart.so"; exit 1; }
readelf -d "$work/driver_alloc_loop" | grep -q 'NEEDED.*libcuda.so.1' || { echo "-lcuda lacks libcuda.so.1"; exit 1; }

line='^driver_alloc_loop pairs=1000 bytes=1048576 us_per_pair=[0-9.]+$'
LD_LIBRARY_PATH="$fakecuda" "$work/driver_alloc_loop" 1000 1048576 | grep -Eq "$line"
LD_LIBRARY_PATH="$fakecuda" LD_PRELOAD="$shim" VRAMSHIM_REPORT="$work/report.json" \
  "$work/driver_alloc_loop" 1000 1048576 | grep -Eq "$line"
python3 - "$work/report.json" <<'PY'
import json, sys
devices = json.load(open(sys.argv[1]))["devices"]
calls = sum(device["driver_alloc_calls"] for device in devices)
hits = sum(device["pool_hits"] for device in devices)
assert calls <= 2, f"{calls} driver allocations for 1001 cuMemAlloc calls"
assert hits >= 999, f"only {hits} pool hits"
PY
echo "cuda_programs_test: ok"
