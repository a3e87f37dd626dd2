// Waves of threads allocate through the hooks on one context and end, as worker pools do. Each
// thread allocates and frees the same sizes over and over (its cache of the pool serves them),
// then holds a known set of blocks until every thread of its wave holds its own (the process's true
// peak is then exactly their sum and the blocks kept so far), hands two blocks to the main thread,
// frees the rest and ends (its cache goes back at thread exit). The main thread keeps the handed
// blocks live to the exit report. Prints what that report must say.
// With "many": 2,000 short threads one after another, each allocating a little; prints how much
// the process's peak resident memory grew (a cache per thread not given back would be ~70 KiB
// each).
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/programs/primary_context.h"
#include "tests/support/thread_barrier.h"

namespace {

constexpr int kWaves = 3;
constexpr int kThreads = 6;
constexpr int kPairs = 2000;
constexpr size_t kSmall = 4096;
constexpr size_t kLarge = 65536;
constexpr int kHeldSmall = 16;
constexpr int kHeldLarge = 4;
constexpr int kKeptPerThread = 2;

extern "C" __attribute__((noinline)) void reuse_two_sizes() {
  for (int i = 0; i < kPairs; ++i) {
    CUdeviceptr ptr = 0;
    CHECK_CU(cuMemAlloc(&ptr, i % 2 == 0 ? kSmall : kLarge));
    CHECK_CU(cuMemFree(ptr));
  }
}

extern "C" __attribute__((noinline)) CUdeviceptr hold_one(size_t bytes) {
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, bytes));
  return ptr;
}

extern "C" __attribute__((noinline)) CUdeviceptr keep_for_main() {
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, kSmall));
  return ptr;
}

// VmHWM of /proc/self/status, in KiB.
long peak_resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

void many_short_threads(CUcontext context) {
  const long before = peak_resident_kib();
  for (int t = 0; t < 2000; ++t) {
    std::thread([context] {
      CHECK_CU(cuCtxSetCurrent(context));
      for (int i = 0; i < 20; ++i) {
        CUdeviceptr ptr = 0;
        CHECK_CU(cuMemAlloc(&ptr, kSmall));
        CHECK_CU(cuMemFree(ptr));
      }
    }).join();
  }
  std::printf("peak_resident_growth_kib=%ld\n", peak_resident_kib() - before);
}

}  // namespace

int main(int argc, char** argv) {
  const CUcontext context = use_primary_context();
  if (argc > 1 && std::strcmp(argv[1], "many") == 0) {
    many_short_threads(context);
    return 0;
  }
  std::mutex kept_mutex;
  std::vector<CUdeviceptr> kept;
  for (int wave = 0; wave < kWaves; ++wave) {
    vramshim::testing::ThreadBarrier all_hold(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        CHECK_CU(cuCtxSetCurrent(context));
        reuse_two_sizes();
        std::vector<CUdeviceptr> held;
        for (int i = 0; i < kHeldSmall; ++i) held.push_back(hold_one(kSmall));
        for (int i = 0; i < kHeldLarge; ++i) held.push_back(hold_one(kLarge));
        {
          std::lock_guard<std::mutex> guard(kept_mutex);
          for (int i = 0; i < kKeptPerThread; ++i) kept.push_back(keep_for_main());
        }
        all_hold.arrive_and_wait();
        for (CUdeviceptr ptr : held) CHECK_CU(cuMemFree(ptr));
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  const size_t kept_bytes = kept.size() * kSmall;
  const size_t peak = kThreads * (kHeldSmall * kSmall + kHeldLarge * kLarge) + kept_bytes;
  std::printf("allocations=%d kept_bytes=%zu kept_count=%zu peak=%zu\n",
              kWaves * kThreads * (kPairs + kHeldSmall + kHeldLarge + kKeptPerThread), kept_bytes,
              kept.size(), peak);
  return 0;
}
