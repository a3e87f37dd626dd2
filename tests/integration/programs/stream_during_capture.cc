// A context's first non-blocking stream, created while another thread captures (global mode) in a
// context of its own on a second device (FAKECUDA_DEVICES=2; a second context of the same device
// would move the pool to synchronizes at once, see docs/design.md "The reuse rule"): the pool
// cannot synchronize then (it would invalidate the capture), so it owes the synchronize that orders
// the blocks it already handed out again before their use on the new stream, and makes it up as
// soon as the capture ends. Prints the context synchronizes made during the capture and after its
// end, and the capture's invalidations.
#include <cuda.h>

#include <atomic>
#include <thread>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

int main() {
  const CUcontext primary = use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  CUdeviceptr block = 0;  // a block freed and handed out again after a marker
  CHECK_CU(cuMemAlloc(&block, 4 << 20));
  CHECK_CU(cuMemFree(block));
  CHECK_CU(cuMemAlloc(&block, 4 << 20));

  std::atomic<int> phase{0};  // 1: capturing; 2: the stream is made; 3: the capture ended
  std::thread capturer([&] {
    CUcontext own;
    CHECK_CU(cuCtxCreate(&own, nullptr, 0, 1));
    CUstream stream;
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
    CHECK_CU(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
    CUgraph graph = nullptr;
    CHECK_CU(cuStreamEndCapture(stream, &graph));
    phase = 3;
  });
  while (phase.load() != 1) std::this_thread::yield();
  CHECK_CU(cuCtxSetCurrent(primary));
  const uint64_t before = fake.calls("cuCtxSynchronize");
  CUstream side;
  CHECK_CU(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
  const uint64_t during = fake.calls("cuCtxSynchronize") - before;
  phase = 2;
  capturer.join();
  const uint64_t after = fake.calls("cuCtxSynchronize") - before - during;
  std::printf("synchronizes_during=%llu synchronizes_after=%llu invalidations=%d\n",
              static_cast<unsigned long long>(during), static_cast<unsigned long long>(after),
              fake.capture_invalidations());
  CHECK_CU(cuMemFree(block));
  return 0;
}
