// Thread-local captures of a blocking stream, begun and ended in a loop, while another thread
// allocates and frees (legal in that mode). The pool's own driver calls on the legacy stream must
// never land inside a capture: one checked before the capture began and made after it would be
// work on the legacy stream during the capture, which invalidates it.
#include <cuda.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

int main() {
  const CUcontext context = use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  CUstream capturing;
  CHECK_CU(cuStreamCreate(&capturing, CU_STREAM_DEFAULT));
  CUdeviceptr target = 0;
  CHECK_CU(cuMemAlloc(&target, 4096));
  std::atomic<bool> stop{false};
  std::thread allocating([&] {
    CHECK_CU(cuCtxSetCurrent(context));
    const size_t sizes[] = {4096, 8192, 65536, size_t{1} << 20, size_t{3} << 20};
    std::vector<CUdeviceptr> held;
    for (int i = 0; !stop.load(); ++i) {
      CUdeviceptr ptr = 0;
      if (cuMemAlloc(&ptr, sizes[i % 5] + (i % 7) * 512) == CUDA_SUCCESS) held.push_back(ptr);
      if (held.size() < 6) continue;
      for (CUdeviceptr freed : held) CHECK_CU(cuMemFree(freed));
      held.clear();
    }
    for (CUdeviceptr freed : held) CHECK_CU(cuMemFree(freed));
  });
  int begun = 0, failed_ends = 0;
  for (int i = 0; i < 200000; ++i) {
    if (cuStreamBeginCapture_v2(capturing, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) {
      continue;
    }
    ++begun;
    CHECK_CU(cuMemsetD8Async(target, 1, 4096, capturing));
    CUgraph graph = nullptr;
    if (cuStreamEndCapture(capturing, &graph) != CUDA_SUCCESS) {
      ++failed_ends;
    } else {
      CHECK_CU(cuGraphDestroy(graph));
    }
  }
  stop.store(true);
  allocating.join();
  CHECK_CU(cuMemFree(target));
  std::printf("begun=%d failed_ends=%d invalidations=%d\n", begun, failed_ends,
              fake.capture_invalidations());
  return 0;
}
