#!/usr/bin/env bash
# Builds the request parser's libFuzzer target with clang++ and runs it for a bounded time.
set -euo pipefail

if ! command -v clang++ >/dev/null; then
  echo "SKIP: clang++ is not installed"
  exit 0
fi

work="${TEST_TMPDIR:-$(mktemp -d)}"
sources=(shim/control/dispatch.cc shim/support/json_writer.cc shim/control/request.cc shim/control/size.cc)
clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I. \
  tests/unit/control/request_fuzzer.cc "${sources[@]}" -o "$work/request_fuzzer"

mkdir -p "$work/corpus"
for seed in "ping" "stats" "flush" "report /tmp/x.json" "trim 1G" "limit 512MiB" "limit off" "trim 1.5K"; do
  printf '%s' "$seed" >"$work/corpus/$(printf '%s' "$seed" | md5sum | cut -c1-16)"
done
"$work/request_fuzzer" -max_total_time="${FUZZ_SECONDS:-15}" -max_len=5000 -print_final_stats=1 \
  "$work/corpus" 2>&1 | tail -n 20
