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

# The figures of issues 15 and 17 as ratios measured in one run: the same build with the event trace on
# (the default) and off, and with the threads' caches of the pool off, in 5 interleaved rounds, so that
# the machine's drift hits every variant alike; min and median. The trace's cost per event is
# (on - off) / 2 of the 4 KiB pair (an alloc and a free event).
echo "== pool hit, thread scaling and churn, trace on / off / thread caches off, 5 interleaved rounds"
python3 bench/shim/interleave.py --rounds 5 \
  --filter 'ShimPair/4096/threads:1$|ShimPair/4096/real_time|ShimPairOwnContext|Churn' \
  --ratio 'ShimChurn/1000/1=ShimChurn/1000/0' --ratio 'ShimChurn/1000000/0=ShimChurn/1000/0' \
  --ratio 'ShimPair/4096/real_time/threads:1$=ShimPair/4096/real_time/threads:2$' \
  --ratio 'OwnContext/4096/real_time/threads:1$=OwnContext/4096/real_time/threads:2$' \
  on="$bin/bench/shim" off="$bin/bench/shim,VRAMSHIM_TRACE=off" \
  no_thread_caches="$bin/bench/shim,VRAMSHIM_THREAD_CACHE=off"
