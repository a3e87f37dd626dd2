// Two contexts with cached blocks, destroyed: each context's pool hands back its segments before
// the driver destroys the context (no leak, no double free); then primary-context resets; then a
// fork.
#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/program_support.h"

namespace {

void allocate_and_cache(int blocks, size_t size) {
  CUdeviceptr kept = 0;
  CHECK_CU(cuMemAlloc(&kept, size));  // live at teardown: the driver frees it with the context
  for (int i = 0; i < blocks; ++i) {
    CUdeviceptr ptr = 0;
    CHECK_CU(cuMemAlloc(&ptr, size));
    CHECK_CU(cuMemFree(ptr));
  }
}

}  // namespace

int main() {
  CHECK_CU(cuInit(0));
  const FakeDriverState fake = fake_driver_state();
  CUcontext first, second;
  CHECK_CU(cuCtxCreate(&first, nullptr, 0, 0));
  allocate_and_cache(10, 1 << 20);
  CHECK_CU(cuCtxCreate(&second, nullptr, 0, 0));  // now current
  allocate_and_cache(10, 5 << 20);
  CHECK_CU(cuCtxDestroy(second));
  CHECK_CU(cuCtxSetCurrent(first));
  allocate_and_cache(3, 1 << 20);
  CHECK_CU(cuCtxDestroy(first));
  std::printf("after destroy live=%llu errors=%llu\n",
              static_cast<unsigned long long>(fake.live_bytes(0)),
              static_cast<unsigned long long>(fake.errors()));

  CUcontext primary;
  CHECK_CU(cuDevicePrimaryCtxRetain(&primary, 0));
  CHECK_CU(cuCtxSetCurrent(primary));
  allocate_and_cache(5, 2 << 20);
  CHECK_CU(cuDevicePrimaryCtxReset(0));
  CHECK_CU(cuDevicePrimaryCtxRetain(&primary, 0));
  CHECK_CU(cuCtxSetCurrent(primary));
  allocate_and_cache(5, 2 << 20);  // a fresh pool for the reset context
  std::printf("after reset errors=%llu\n", static_cast<unsigned long long>(fake.errors()));
  // The reset context keeps its handle: the pool that serves it now must be the fresh one, which
  // the next reset empties (a pool remembered from before the first reset would be left out).
  CUdeviceptr cached = 0;
  CHECK_CU(cuMemAlloc(&cached, 64 << 20));
  CHECK_CU(cuMemFree(cached));
  const uint64_t frees_before = fake.calls("cuMemFree_v2");
  CHECK_CU(cuDevicePrimaryCtxReset(0));
  std::printf("second reset segments handed back=%llu errors=%llu\n",
              static_cast<unsigned long long>(fake.calls("cuMemFree_v2") - frees_before),
              static_cast<unsigned long long>(fake.errors()));
  CHECK_CU(cuDevicePrimaryCtxRetain(&primary, 0));
  CHECK_CU(cuCtxSetCurrent(primary));
  CHECK_CU(cuDevicePrimaryCtxRelease(0));

  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    // The driver cannot be used after fork; the shim in the child is inert and must not crash.
    CUdeviceptr ptr = 0;
    const CUresult result = cuMemAlloc(&ptr, 4096);
    std::printf("child alloc result=%d\n", static_cast<int>(result));
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  CHECK_CU(cuDevicePrimaryCtxRelease(0));
  CHECK_CU(cuDevicePrimaryCtxRelease(0));
  std::printf(
      "end live=%llu errors=%llu child=%d\n", static_cast<unsigned long long>(fake.live_bytes(0)),
      static_cast<unsigned long long>(fake.errors()), WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}
