// A SIGTERM arrives while the exit report is being written: the program returns from main, and the
// report's first look at the loaded objects (dl_iterate_phdr, defined here over the loader's) sends
// the process SIGTERM and lets the shim take it before the report goes on. The process ends by the
// signal, as it would without the shim; the report written is the exit report.
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "tests/integration/programs/primary_context.h"

namespace {

std::atomic<bool> g_returned{false};
std::atomic<bool> g_sent{false};

}  // namespace

extern "C" int dl_iterate_phdr(int (*callback)(dl_phdr_info*, size_t, void*), void* data) {
  using Iterate = int (*)(int (*)(dl_phdr_info*, size_t, void*), void*);
  static const auto loader = reinterpret_cast<Iterate>(dlsym(RTLD_NEXT, "dl_iterate_phdr"));
  if (g_returned.load() && !g_sent.exchange(true)) {
    kill(getpid(), SIGTERM);
    usleep(300 * 1000);  // the shim's handler takes it and asks for a report meanwhile
  }
  return loader(callback, data);
}

int main() {
  use_primary_context();
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, 4096));
  // Runs before the shim's exit handler, registered at its start (handlers run in reverse order).
  std::atexit([] { g_returned.store(true); });
  return 0;
}
