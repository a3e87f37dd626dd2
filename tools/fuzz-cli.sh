#!/usr/bin/env bash
# Mutation fuzzing of the CLI's inputs under AddressSanitizer + UndefinedBehaviorSanitizer: builds the
# CLI, the fixture reports' writer, the shim and the simulated driver in the sanitizers' output base
# (tools/sanitizer-tests.sh shares it), writes the seeds (the fixture reports, a real report with
# segments, history and trace, its torch-snapshot export, the checked-in training snapshot), then runs
# tools/fuzz_cli.py. Not run by CI. Exit status 1 when a case was found (kept in FOUND_DIR).
#   bash tools/fuzz-cli.sh [CASES [RANDOM_SEED [FOUND_DIR]]]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cases=${1:-2000}
seed=${2:-1}
found=${3:-${TMPDIR:-/tmp}/vramshim-fuzz-found}
base="${TMPDIR:-/tmp}/bazel-asan"
bazel --output_base="$base" build --config=asan --symlink_prefix=/ --noshow_progress \
  --ui_event_filters=-info //analyzer:vramshim //tests/analyzer:fixture_report //shim:libvramshim.so \
  //tests/fakecuda:libcuda.so.1 //tests/integration/programs:growing_sites
bin="$(bazel --output_base="$base" info bazel-bin 2>/dev/null)"
seeds="$(mktemp -d)"
trap 'rm -rf "$seeds"' EXIT
export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
(cd "$bin" && bash "$OLDPWD/tests/analyzer/fixture_reports.sh" "$seeds")
LD_PRELOAD="$bin/shim/libvramshim.so" LD_LIBRARY_PATH="$bin/tests/fakecuda" VRAMSHIM_SOCKET=off \
  VRAMSHIM_REPORT="$seeds/growing.json" "$bin/tests/integration/programs/growing_sites" 40 >/dev/null
"$bin/analyzer/vramshim" export "$seeds/growing.json" --format torch-snapshot \
  -o "$seeds/growing.pickle" 2>/dev/null
cp bench/traces/training_snapshot.pickle "$seeds/"
python3 tools/fuzz_cli.py "$bin/analyzer/vramshim" "$seeds" "$found" "$cases" "$seed"
