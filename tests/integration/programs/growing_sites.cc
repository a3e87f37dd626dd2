// A training loop of 200 steps, 20 ms each, whose sites behave as leaks and non-leaks do: one leaks
// 1 MiB per step, five churn (allocated and freed within the step), a warm-up allocates during the
// first 20 steps and then holds what it has, and a cache keeps its 16 newest 1 MiB entries.
// Usage: growing_sites [STEPS]
#include <cuda.h>
#include <time.h>

#include <cstdlib>
#include <deque>
#include <vector>

#include "tests/integration/programs/program_support.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;

extern "C" __attribute__((noinline)) CUdeviceptr leak_one_mib_per_step() {
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc_v2(&ptr, kMiB));
  return ptr;
}

extern "C" __attribute__((noinline)) CUdeviceptr warm_up_buffers() {
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc_v2(&ptr, 2 * kMiB));
  return ptr;
}

extern "C" __attribute__((noinline)) CUdeviceptr cache_entry() {
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc_v2(&ptr, kMiB));
  return ptr;
}

#define CHURN(name, bytes)                                  \
  extern "C" __attribute__((noinline)) CUdeviceptr name() { \
    CUdeviceptr ptr = 0;                                    \
    CHECK_CU(cuMemAlloc_v2(&ptr, bytes));                   \
    return ptr;                                             \
  }
CHURN(churn_activations, 4 * kMiB)
CHURN(churn_gradients, 2 * kMiB)
CHURN(churn_workspace, 512 * 1024)
CHURN(churn_logits, 3 * kMiB)
CHURN(churn_scratch, 64 * 1024)
#undef CHURN

void sleep_ms(long ms) {
  timespec pause{0, ms * 1000000L};
  nanosleep(&pause, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  CHECK_CU(cuInit(0));
  CUdevice device = 0;
  CHECK_CU(cuDeviceGet(&device, 0));
  CUcontext context = nullptr;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));
  std::vector<CUdeviceptr> leaked, warm;
  std::deque<CUdeviceptr> cache;
  for (int step = 0; step < steps; ++step) {
    const CUdeviceptr step_buffers[] = {churn_activations(), churn_gradients(), churn_workspace()};
    leaked.push_back(leak_one_mib_per_step());
    if (step < 20) warm.push_back(warm_up_buffers());
    cache.push_back(cache_entry());
    if (cache.size() > 16) {
      CHECK_CU(cuMemFree_v2(cache.front()));
      cache.pop_front();
    }
    const CUdeviceptr late[] = {churn_logits(), churn_scratch()};
    sleep_ms(20);
    for (CUdeviceptr ptr : late) CHECK_CU(cuMemFree_v2(ptr));
    for (CUdeviceptr ptr : step_buffers) CHECK_CU(cuMemFree_v2(ptr));
  }
  return 0;  // the leak, the warm-up and the cache are left to the exit report
}
