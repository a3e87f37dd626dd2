#!/usr/bin/env bash
# The tests under AddressSanitizer with UndefinedBehaviorSanitizer (the unit tests, the CLI's tests,
# the C++ preload tests), then the unit tests under ThreadSanitizer, each in an output base of its
# own (so the normal build's outputs stay). Not run by CI: a cold run of both takes about 30 minutes
# on 2 cores. Run from anywhere, after tools/bootstrap.sh:
#   bash tools/sanitizer-tests.sh [asan|tsan]...   (default: both)
#
# The flags are .bazelrc's --config=asan and --config=tsan (which leave shim/intercept
# uninstrumented). Left out, because the sanitizer itself changes what they check:
#   ASan: fatal_signals_test and crash_report_test crash on purpose (UBSan stops at the null store
#   first), shim_safety_test's SIGBUS is caught by ASan, module_map_test finds malloc in libasan,
#   unaffected_processes_test sees libasan and libubsan among the shim's libraries; the Python
#   integration tests preload the instrumented shim into an uninstrumented python3;
#   special_files_test and snapshot_expansion_test limit their address space below ASan's shadow
#   memory; shim_report_test finds
#   ASan's backtrace interceptor as the innermost frame.
#   TSan: binaries with the shim's hooks (device_api_contract_test) cannot start (TSan's start-up
#   dlsym reaches the hook through an intercepted static guard), nor can atomic_write_test, which
#   defines dl_iterate_phdr (TSan calls it while it starts); libunwind's per-thread cache is
#   freed after TSan's thread state at thread exit, so VRAMSHIM_TEST_NO_LIBUNWIND=1 and the tests of
#   libunwind itself (stack_capture_test, libunwind_pipe_test, scenario_attribution_test) are
#   left out.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

asan() {
  bazel --output_base="${TMPDIR:-/tmp}/bazel-asan" test --config=asan --symlink_prefix=/ \
    --test_env=ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0 --test_output=errors -- \
    //tests/unit/... \
    -//tests/unit/control:fatal_signals_test -//tests/unit/report:module_map_test \
    //tests/analyzer/... //tests/control/... //tests/docs/... \
    -//tests/analyzer:special_files_test -//tests/analyzer:snapshot_expansion_test \
    -//tests/analyzer:shim_report_test \
    //tests/integration:attribution_test //tests/integration:doors_test \
    //tests/integration:growth_test //tests/integration:out_of_memory_test \
    //tests/integration:pool_test
}

tsan() {
  bazel --output_base="${TMPDIR:-/tmp}/bazel-tsan" test --config=tsan --symlink_prefix=/ \
    --test_env=VRAMSHIM_TEST_NO_LIBUNWIND=1 --test_env=TSAN_OPTIONS=halt_on_error=1 \
    --test_output=errors -- \
    //tests/unit/pool/... //tests/unit/attribution/... //tests/unit/support/... \
    //tests/unit/control/... //tests/unit/report/... //tests/unit/oom/... \
    //tests/analyzer:http_server_test //tests/analyzer:scrape_coalescer_test \
    -//tests/unit/pool:device_api_contract_test -//tests/unit/attribution:stack_capture_test \
    -//tests/unit/attribution:libunwind_pipe_test \
    -//tests/unit/attribution:scenario_attribution_test -//tests/unit/report:module_map_test \
    -//tests/unit/report:atomic_write_test
}

[[ $# -gt 0 ]] || set -- asan tsan
for which in "$@"; do
  case "$which" in
    asan) asan ;;
    tsan) tsan ;;
    *)
      echo "usage: $0 [asan|tsan]..." >&2
      exit 2
      ;;
  esac
done
