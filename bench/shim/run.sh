#!/usr/bin/env bash
# The shim's figures against the simulated driver, one process per configuration (the shim reads its
# configuration once when it loads). Usage: bash bench/shim/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
bazel build -c opt //bench/shim:shim_bench //bench/shim:hook_overhead_bench >/dev/null
bin="$(bazel info -c opt bazel-bin 2>/dev/null)"

# bench LABEL FILTER [VAR=VALUE…]
bench() {
  local label=$1 filter=$2
  shift 2
  echo "== $label"
  (cd "$bin/bench/shim/shim_bench.runfiles/vramshim" &&
    env "$@" ../../shim_bench --benchmark_min_time=0.3 --benchmark_filter="$filter")
}

echo "== hook pass-through (VRAMSHIM_DISABLE=1, stand-in driver)"
"$bin/bench/shim/hook_overhead_bench" --benchmark_min_time=0.3
bench "forwarded pair (pool off, stacks off)" 'Pair' VRAMSHIM_POOL=off VRAMSHIM_STACKS=off
bench "pool hit, stacks off" 'ShimPair' VRAMSHIM_STACKS=off
bench "pool hit, stacks all" 'ShimPair' VRAMSHIM_STACKS=all
bench "training-step replay, 60 us driver, stacks off" 'Replay' FAKECUDA_ALLOC_DELAY_US=60 \
  VRAMSHIM_STACKS=off
bench "training-step replay, 60 us driver, stacks all" 'ShimReplay' FAKECUDA_ALLOC_DELAY_US=60 \
  VRAMSHIM_STACKS=all

# The event trace's cost on the 4 KiB pool-hit pair: trace on (the default) and off, interleaved in
# five rounds, so that the machine's drift hits both alike; compare min and median.
echo "== 4 KiB pool-hit pair, trace on (default) / off, 5 interleaved rounds (ns per pair)"
for round in 1 2 3 4 5; do
  for trace in 262144 off; do
    ns=$(cd "$bin/bench/shim/shim_bench.runfiles/vramshim" &&
      env VRAMSHIM_STACKS=off VRAMSHIM_TRACE=$trace ../../shim_bench --benchmark_min_time=0.3 \
        --benchmark_filter='BM_ShimPair/4096/threads:1$' --benchmark_format=csv 2>/dev/null |
      awk -F, '/BM_ShimPair/ {print $4}')
    echo "round $round trace=$trace $ns"
  done
done
