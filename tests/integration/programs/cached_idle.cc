// A process under the shim with memory cached in its pool, waiting to be flushed from outside.
// "cache BLOCKS BYTES": allocates BLOCKS blocks of BYTES, frees them (cached), prints "ready", then
// waits for SIGTERM. "throughput SECONDS": allocate/free pairs of 4 KiB for SECONDS and prints the
// rate (for measuring what a client hammering the control socket costs the host process).
#include <cuda.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/integration/programs/primary_context.h"

namespace {

double now_seconds() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "cache";
  use_primary_context();
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
  const int blocks = argc > 2 ? std::atoi(argv[2]) : 64;
  const size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : size_t{1} << 20;
  std::vector<CUdeviceptr> held(static_cast<size_t>(blocks));
  for (CUdeviceptr& ptr : held) CHECK_CU(cuMemAlloc(&ptr, bytes));
  for (CUdeviceptr ptr : held) CHECK_CU(cuMemFree(ptr));
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) pause();  // until a signal ends it
}
