// A program whose timer handler calls exit() while the main thread allocates host memory without
// pause, so that the handler usually interrupts malloc or free with the arena's lock held. Nothing
// in the program's own exit path allocates, so without the shim it ends with the handler's status;
// the shim's exit handler must not allocate on this thread either (a helper thread it started
// waited for ever on that lock, with every signal blocked).
#include <cuda.h>
#include <signal.h>
#include <sys/time.h>

#include <cstdlib>

#include "tests/integration/programs/primary_context.h"

namespace {

void end_on_timer(int) { std::exit(7); }

}  // namespace

int main() {
  use_primary_context();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 4096));  // something for the report
  // Empties the thread's malloc cache of small sizes (glibc's tcache; never refilled, as the loop
  // frees no small block), so that a small allocation at exit goes to the locked arena.
  for (size_t size = 8; size <= 1032; size += 16) {
    for (int i = 0; i < 8; ++i) (void)!std::malloc(size);
  }
  struct sigaction on_timer = {};
  on_timer.sa_handler = &end_on_timer;
  sigaction(SIGALRM, &on_timer, nullptr);
  const itimerval in_20_ms = {{0, 0}, {0, 20000}};
  setitimer(ITIMER_REAL, &in_20_ms, nullptr);
  // Above the tcache's sizes and below the mmap threshold: every call takes the arena's lock, and
  // each free of the top chunk returns memory with sbrk, a system call under that lock.
  void* kept[16] = {};
  for (unsigned i = 0;; ++i) {
    std::free(kept[i % 16]);
    kept[i % 16] = std::malloc(65536 + (i % 7) * 4096);
  }
}
