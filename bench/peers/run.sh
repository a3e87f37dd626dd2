#!/usr/bin/env bash
# vramshim's stacks against heaptrack's and its Python frames against memray --native's, on one
# workload shape, in runs interleaved round by round. Prints ns added per tracked allocation (median
# and min over the rounds; the allocating thread's CPU time, then wall time) and the ratios. Not run
# by CI.
#   C++: N pairs at call depth 10, 40 and 64 (alloc_at_depth.cc): under the shim,
#     cuMemAlloc_v2/cuMemFree_v2 against the simulated driver, VRAMSHIM_STACKS=all vs off (at the
#     default VRAMSHIM_STACK_DEPTH, 64); under heaptrack, malloc/free, heaptrack vs none.
#   Python: pairs at Python depth 30 through ctypes (python_alloc.py): under the shim,
#     VRAMSHIM_PYTHON=auto vs off (stacks all); memray run --native vs plain, through a small C
#     library (peer_allocator.cc). memray is pip-installed into a venv at $VRAMSHIM_PEERS_VENV
#     (default: $TMPDIR/vramshim-peers-venv), kept for the next run.
# Usage, after tools/bootstrap.sh (heaptrack: apt-get install heaptrack):
#   bash bench/peers/run.sh [ROUNDS [CXX_PAIRS [PYTHON_PAIRS]]]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
cxx_pairs=${2:-200000}
python_pairs=${3:-100000}
python=/usr/bin/python3
venv=${VRAMSHIM_PEERS_VENV:-${TMPDIR:-/tmp}/vramshim-peers-venv}

bazel build -c opt --noshow_progress --ui_event_filters=-info //shim:libvramshim.so \
  //tests/fakecuda:libcuda.so.1 //bench/peers:all
bin="$(bazel info -c opt bazel-bin 2>/dev/null)"
shim="$bin/shim/libvramshim.so"
fake_dir="$bin/tests/fakecuda"
program="$bin/bench/peers/alloc_at_depth"
peer_library="$bin/bench/peers/libpeer_allocator.so"
python_program="bench/peers/python_alloc.py"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
results="$work/results"

have_heaptrack=1
command -v heaptrack >/dev/null || {
  have_heaptrack=0
  echo "heaptrack: not installed (apt-get install heaptrack); its columns stay empty" >&2
}
have_memray=1
if ! "$venv/bin/python" -c "import memray" 2>/dev/null; then
  echo "memray: installing into $venv" >&2
  { "$python" -m venv "$venv" && "$venv/bin/pip" install -q memray; } >&2 || {
    have_memray=0
    echo "memray: could not be installed (needs python3-venv and PyPI); its columns stay empty" >&2
  }
fi

# record GROUP CONFIG COMMAND…: runs COMMAND, appends its wall and CPU ns per pair to the results.
record() {
  local group=$1 config=$2
  shift 2
  local line
  line="$("$@" 2>/dev/null | grep -E -o ' ns_per_pair=[0-9.]+ cpu_ns_per_pair=[0-9.]+')" || {
    echo "failed: $group $config: $*" >&2
    exit 1
  }
  line=${line# ns_per_pair=}
  echo "$group $config ${line% cpu_ns_per_pair=*} ${line#* cpu_ns_per_pair=}" >>"$results"
}

under_shim() {
  env VRAMSHIM_SOCKET=off VRAMSHIM_REPORT=off LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" "$@"
}

for ((round = 1; round <= rounds; ++round)); do
  echo "round $round of $rounds" >&2
  for depth in 10 40 64; do
    record "cxx$depth" shim_off under_shim VRAMSHIM_STACKS=off "$program" cuda "$depth" "$cxx_pairs"
    record "cxx$depth" shim_all under_shim VRAMSHIM_STACKS=all "$program" cuda "$depth" "$cxx_pairs"
    record "cxx$depth" plain "$program" malloc "$depth" "$cxx_pairs"
    if ((have_heaptrack)); then
      record "cxx$depth" heaptrack heaptrack -o "$work/heaptrack" "$program" malloc "$depth" \
        "$cxx_pairs"
      rm -f "$work"/heaptrack*
    fi
  done
  record python30 shim_python_off under_shim VRAMSHIM_PYTHON=off \
    "$python" "$python_program" cuda 30 "$python_pairs"
  record python30 shim_python_auto under_shim VRAMSHIM_PYTHON=auto \
    "$python" "$python_program" cuda 30 "$python_pairs"
  if ((have_memray)); then
    record python30 plain "$venv/bin/python" "$python_program" malloc 30 "$python_pairs" \
      "$peer_library"
    record python30 memray "$venv/bin/python" -m memray run --native -f -o "$work/memray.bin" \
      "$python_program" malloc 30 "$python_pairs" "$peer_library"
    rm -f "$work/memray.bin"
  fi
done

"$python" bench/peers/summarize.py "$results" "$rounds"
