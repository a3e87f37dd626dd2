#!/usr/bin/env bash
# bench/traces/training_snapshot.pickle is what bench/traces/generate_snapshot.py writes. After
# changing the generator: python3 bench/traces/generate_snapshot.py bench/traces/training_snapshot.pickle
set -euo pipefail

out="${TEST_TMPDIR:-$(mktemp -d)}/training_snapshot.pickle"
python3 bench/traces/generate_snapshot.py "$out"
if ! cmp bench/traces/training_snapshot.pickle "$out"; then
  echo "FAIL: the checked-in snapshot differs from the generator's output; regenerate it with" >&2
  echo "  python3 bench/traces/generate_snapshot.py bench/traces/training_snapshot.pickle" >&2
  exit 1
fi
echo "ok: $(wc -c <"$out") bytes, as generated"
