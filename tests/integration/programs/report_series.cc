// Reports on demand while threads allocate: "signal" sends the report signal to itself N times
// (each one a numbered report); "exit_from_thread" calls exit() from a second thread while the
// first allocates; "underscore_exit" calls _exit() while threads allocate; "sampled" makes 100,000
// allocations of random sizes and prints their true total.
#include <cuda.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/programs/primary_context.h"

namespace {

std::atomic<bool> g_stop{false};

void allocate_until_stopped(CUcontext context, unsigned seed) {
  CHECK_CU(cuCtxSetCurrent(context));
  std::mt19937 random(seed);
  while (!g_stop.load()) {
    CUdeviceptr ptr = 0;
    if (cuMemAlloc(&ptr, 512 * (1 + random() % 64)) == CUDA_SUCCESS) cuMemFree(ptr);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "signal";
  const CUcontext context = use_primary_context();
  if (mode == "sampled") {
    std::mt19937_64 random(42);
    unsigned long long total = 0;
    for (int i = 0; i < 100000; ++i) {
      const size_t size = 512 + random() % (4u << 20);
      CUdeviceptr ptr = 0;
      CHECK_CU(cuMemAlloc(&ptr, size));
      CHECK_CU(cuMemFree(ptr));
      total += (size + 511) / 512 * 512;  // the pool's rounding, as the report counts it
    }
    std::printf("true total=%llu\n", total);
    return 0;
  }
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < 3; ++i) threads.emplace_back(allocate_until_stopped, context, i);
  if (mode == "signal") {
    const int reports = argc > 2 ? std::atoi(argv[2]) : 3;
    const char* pattern = std::getenv("VRAMSHIM_REPORT");
    CHECK_TRUE(pattern != nullptr && std::strstr(pattern, "%n") != nullptr);
    for (int i = 0; i < reports; ++i) {
      kill(getpid(), SIGUSR2);
      // Signals of one kind coalesce: wait (at most 20 s) until this one's report is written.
      std::string path = pattern;
      path.replace(path.find("%n"), 2, std::to_string(i));
      for (int wait = 0; wait < 2000 && access(path.c_str(), F_OK) != 0; ++wait) usleep(10 * 1000);
    }
  } else if (mode == "exit_from_thread") {
    std::thread exiter([] {
      usleep(50 * 1000);
      std::exit(0);
    });
    exiter.join();
  } else if (mode == "underscore_exit") {
    usleep(50 * 1000);
    _exit(0);
  }
  g_stop = true;
  for (std::thread& t : threads) t.join();
  return 0;
}
