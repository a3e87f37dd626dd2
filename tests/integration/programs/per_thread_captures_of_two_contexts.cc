// Two threads capture their per-thread default streams (the _ptsz entry points with stream 0, one
// handle for every thread's) in two contexts, in thread-local mode. The second thread ends its
// capture, then its context goes (destroyed, or, "primary_reset", a device's primary context
// reset). The first capture still runs while the main thread allocates and frees in its context:
// the pool must make no call that would invalidate it. Prints the first capture's end result and
// the driver's capture invalidations.
#include <cuda.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

extern "C" {
CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph* graph);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr ptr, unsigned char value, size_t bytes, CUstream stream);
}

namespace {

std::atomic<int> g_step{0};

void wait_for_step(int step) {
  while (g_step.load() < step) usleep(1000);
}

void churn(int rounds) {
  for (int round = 0; round < rounds; ++round) {
    std::vector<CUdeviceptr> held(8);
    for (CUdeviceptr& block : held) CHECK_CU(cuMemAlloc(&block, 65536));
    for (CUdeviceptr block : held) CHECK_CU(cuMemFree(block));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool primary_reset = argc > 1 && std::strcmp(argv[1], "primary_reset") == 0;
  const CUcontext first = use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  CUcontext second;
  if (primary_reset) {
    CHECK_CU(cuDevicePrimaryCtxRetain(&second, 1));
  } else {
    CHECK_CU(cuCtxCreate(&second, nullptr, 0, 0));
  }
  CHECK_CU(cuCtxSetCurrent(first));
  churn(8);  // blocks freed before the capture, waiting for a fence
  CUdeviceptr target;
  CHECK_CU(cuMemAlloc(&target, 4096));
  CHECK_CU(cuCtxSynchronize());

  CUresult first_end = CUDA_SUCCESS;
  std::thread capturing([&] {
    CHECK_CU(cuCtxSetCurrent(first));
    CHECK_CU(cuStreamBeginCapture_v2_ptsz(nullptr, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_CU(cuMemsetD8Async_ptsz(target, 1, 4096, nullptr));
    g_step = 1;
    wait_for_step(3);
    CUgraph graph = nullptr;
    first_end = cuStreamEndCapture_ptsz(nullptr, &graph);
  });
  std::thread ending([&] {
    wait_for_step(1);
    CHECK_CU(cuCtxSetCurrent(second));
    CHECK_CU(cuStreamBeginCapture_v2_ptsz(nullptr, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CUgraph graph = nullptr;
    CHECK_CU(cuStreamEndCapture_ptsz(nullptr, &graph));
    if (primary_reset) {
      CHECK_CU(cuDevicePrimaryCtxReset(1));
    } else {
      CHECK_CU(cuCtxDestroy(second));
    }
    g_step = 2;
  });
  wait_for_step(2);
  churn(50);
  g_step = 3;
  capturing.join();
  ending.join();
  std::printf("first_end=%d invalidations=%d\n", static_cast<int>(first_end),
              fake.capture_invalidations());
  return 0;
}
