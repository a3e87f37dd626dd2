// A process under the shim with memory cached in its pool, waiting to be flushed from outside.
// "cache BLOCKS BYTES": allocates BLOCKS blocks of BYTES, frees them (cached), prints "ready", then
// waits for SIGTERM. "throughput SECONDS": allocate/free pairs of 4 KiB for SECONDS and prints the
// rate (for measuring what a client hammering the control socket costs the host process).
// "own_handler": installs its own SIGUSR1 handler before touching CUDA (so before the shim starts),
// caches memory, raises SIGUSR1, then flushes itself through the control socket. "hold BLOCKS
// BYTES": allocates BLOCKS blocks of BYTES and keeps them in use, prints "ready", then waits for
// SIGTERM. "hold_chaining BLOCKS BYTES": the same, then installs its own SIGTERM handler, which
// asks for a graceful stop and calls the handler it replaced, as chaining handlers do; the program
// then exits with status 0.
#include <cuda.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/integration/programs/control_client.h"
#include "tests/integration/programs/primary_context.h"

namespace {

volatile sig_atomic_t g_own_handler_calls = 0;

void own_handler(int) { g_own_handler_calls = g_own_handler_calls + 1; }

volatile sig_atomic_t g_stop_requested = 0;
struct sigaction g_replaced_term;

void chaining_term_handler(int signal_number, siginfo_t* info, void* context) {
  g_stop_requested = 1;
  if ((g_replaced_term.sa_flags & SA_SIGINFO) != 0) {
    g_replaced_term.sa_sigaction(signal_number, info, context);
  } else if (g_replaced_term.sa_handler != SIG_DFL && g_replaced_term.sa_handler != SIG_IGN) {
    g_replaced_term.sa_handler(signal_number);
  }
}

double now_seconds() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "cache";
  if (mode == "own_handler") signal(SIGUSR1, own_handler);
  use_primary_context();
  if (mode == "own_handler") {
    CUdeviceptr ptr = 0;
    CHECK_CU(cuMemAlloc(&ptr, 4 << 20));
    CHECK_CU(cuMemFree(ptr));
    raise(SIGUSR1);
    const std::string answer = control_request("flush");
    std::printf("own handler calls=%d socket released=%lld\n",
                static_cast<int>(g_own_handler_calls), json_number(answer, "released_bytes"));
    return 0;
  }
  if (mode == "throughput") {
    const double seconds = argc > 2 ? std::atof(argv[2]) : 2.0;
    const double end = now_seconds() + seconds;
    unsigned long long pairs = 0;
    while (now_seconds() < end) {
      for (int i = 0; i < 1000; ++i, ++pairs) {
        CUdeviceptr ptr = 0;
        CHECK_CU(cuMemAlloc(&ptr, 4096));
        CHECK_CU(cuMemFree(ptr));
      }
    }
    std::printf("pairs_per_second=%.0f\n", static_cast<double>(pairs) / seconds);
    return 0;
  }
  if (mode == "fail") {
    const int tries = argc > 2 ? std::atoi(argv[2]) : 1;
    const size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : size_t{1} << 30;
    int failures = 0;
    for (int i = 0; i < tries; ++i) {
      CUdeviceptr ptr = 0;
      if (cuMemAlloc(&ptr, bytes) == CUDA_ERROR_OUT_OF_MEMORY) ++failures;
    }
    std::printf("failures=%d ready\n", failures);
    std::fflush(stdout);
    for (;;) pause();
  }
  const int blocks = argc > 2 ? std::atoi(argv[2]) : 64;
  const size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : size_t{1} << 20;
  std::vector<CUdeviceptr> held(static_cast<size_t>(blocks));
  for (CUdeviceptr& ptr : held) CHECK_CU(cuMemAlloc(&ptr, bytes));
  if (mode != "hold" && mode != "hold_chaining") {
    for (CUdeviceptr ptr : held) CHECK_CU(cuMemFree(ptr));
  }
  if (mode == "hold_chaining") {
    struct sigaction chaining = {};
    chaining.sa_sigaction = &chaining_term_handler;
    chaining.sa_flags = SA_SIGINFO;
    sigemptyset(&chaining.sa_mask);
    sigaction(SIGTERM, &chaining, &g_replaced_term);
  }
  std::printf("ready\n");
  std::fflush(stdout);
  while (g_stop_requested == 0) pause();  // until a signal ends it, or asks for a stop
  return 0;
}
