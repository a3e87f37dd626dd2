#!/usr/bin/env bash
# Syntax and lint of the GPU check's and the GPU benchmark's scripts, which only a GPU machine runs in full.
set -euo pipefail

failures=0
for script in tests/gpu/run.sh bench/gpu/run.sh; do
  bash -n "$script" || failures=$((failures + 1))
  if command -v shellcheck >/dev/null; then
    shellcheck "$script" || failures=$((failures + 1))
  fi
done
for script in tests/gpu/*.py tests/gpu/workloads/*.py bench/gpu/*.py; do
  python3 - "$script" <<'PY' || failures=$((failures + 1))
import ast, sys
path = sys.argv[1]
with open(path) as file:
    compile(file.read(), path, "exec", ast.PyCF_ONLY_AST)
PY
done
# Every workload script gives a clear error, not a traceback, where its framework is missing (the modules
# they share have no main).
for script in tests/gpu/workloads/*.py; do
  grep -q '^if __name__ == "__main__":' "$script" || continue
  if output="$(PYTHONPATH=/nonexistent python3 -S "$script" 2>&1)"; then :; fi
  if ! grep -q '"event": "error"' <<<"$output"; then
    echo "$script: no error event without its framework: $output"
    failures=$((failures + 1))
  fi
done
echo "gpu_scripts_test: $failures problem(s)"
((failures == 0))
