// A program whose timer handler calls exit() (as SIGTERM and timeout handlers often do) while the
// main thread allocates and frees without pause: the handler often interrupts a hooked call that
// holds the pool's lock. The process must end with the handler's status, not wait for ever on
// that lock in the shim's exit handler.
#include <cuda.h>
#include <signal.h>
#include <sys/time.h>

#include <csignal>
#include <cstdlib>

#include "tests/integration/programs/primary_context.h"

namespace {

void end_on_timer(int) { std::exit(7); }

}  // namespace

int main() {
  use_primary_context();
  std::signal(SIGALRM, &end_on_timer);
  const itimerval in_20_ms = {{0, 0}, {0, 20000}};
  setitimer(ITIMER_REAL, &in_20_ms, nullptr);
  CUdeviceptr kept[64] = {};
  for (unsigned i = 0;; ++i) {
    CUdeviceptr ptr = 0;
    if (cuMemAlloc(&ptr, 4096 * (1 + i % 64)) != CUDA_SUCCESS) continue;
    if (kept[i % 64] != 0) cuMemFree(kept[i % 64]);
    kept[i % 64] = ptr;
  }
}
