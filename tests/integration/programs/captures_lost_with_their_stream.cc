// A capture that no cuStreamEndCapture ends: its stream is destroyed, or its context destroyed or
// reset (as cudaDeviceReset on an error path), while it runs. The driver ends the capture with
// them; the pool must then reuse freed memory again. Afterwards, 40 rounds of a 64 MiB allocation,
// written and freed, on a 1 GiB device. Prints the rounds whose allocation failed, the driver's
// allocations, and the bytes still held by the driver.
#include <cuda.h>

#include <cstdio>
#include <cstring>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

int main(int argc, char** argv) {
  const char* how = argc > 1 ? argv[1] : "";
  CUcontext primary = use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  CUstream stream;
  if (std::strcmp(how, "context_destroyed") == 0) {
    CUcontext created;
    CHECK_CU(cuCtxCreate(&created, nullptr, 0, 0));
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_CU(cuCtxDestroy(created));
    CHECK_CU(cuCtxSetCurrent(primary));
  } else if (std::strcmp(how, "primary_reset") == 0) {
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_CU(cuDevicePrimaryCtxReset(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&primary, 0));
    CHECK_CU(cuCtxSetCurrent(primary));
  } else if (std::strcmp(how, "stream_destroyed") == 0) {
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_CU(cuStreamDestroy(stream));
  } else {
    std::fprintf(stderr, "usage: %s context_destroyed|primary_reset|stream_destroyed\n", argv[0]);
    return 2;
  }
  constexpr size_t kBytes = size_t{64} << 20;
  int failures = 0;
  for (int round = 0; round < 40; ++round) {
    CUdeviceptr block = 0;
    if (cuMemAlloc(&block, kBytes) != CUDA_SUCCESS) {
      ++failures;
      continue;
    }
    CHECK_CU(cuMemsetD8(block, 1, kBytes));
    CHECK_CU(cuMemFree(block));
  }
  std::printf("failures=%d driver_allocations=%llu\n", failures,
              static_cast<unsigned long long>(fake.calls("cuMemAlloc_v2")));
  return 0;
}
