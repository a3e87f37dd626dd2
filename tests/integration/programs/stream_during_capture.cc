// A context's first non-blocking stream, created while another thread captures (global mode) on a
// blocking stream of the same context (a context of another device, or a second one of this
// device, would move the pool to stricter fences at once, see docs/design.md "The reuse rule"). A
// block was handed out again after a legacy-stream marker while its previous owner's slow write
// still runs; the new owner writes it on the new stream. The pool cannot synchronize during the
// capture (it would invalidate it); the new stream must still not run before the previous owner's
// write. Prints the context synchronizes made during the capture and after its end, the capture's
// invalidations, and whether the new owner's data survived.
#include <cuda.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "tests/integration/programs/device_readback.h"
#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

namespace {

constexpr size_t kBytes = 4 << 20;
constexpr unsigned char kPreviousOwner = 0xAA;
constexpr unsigned char kNewOwner = 0x55;

void sleep_300ms(void*) { usleep(300 * 1000); }

}  // namespace

int main() {
  const CUcontext primary = use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  CUdeviceptr block = 0;
  CHECK_CU(cuMemAlloc(&block, kBytes));
  CHECK_CU(cuLaunchHostFunc(nullptr, sleep_300ms, nullptr));
  CHECK_CU(cuMemsetD8Async(block, kPreviousOwner, kBytes, nullptr));
  CHECK_CU(cuMemFree(block));
  CHECK_CU(cuMemAlloc(&block, kBytes));  // the same block, after a marker

  std::atomic<int> phase{0};  // 1: capturing; 2: the stream is used; 3: the capture ended
  std::thread capturer([&] {
    CHECK_CU(cuCtxSetCurrent(primary));
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
  CHECK_CU(cuMemsetD8Async(block, kNewOwner, kBytes, side));
  const uint64_t during = fake.calls("cuCtxSynchronize") - before;
  phase = 2;
  capturer.join();
  const uint64_t after = fake.calls("cuCtxSynchronize") - before - during;
  CHECK_CU(cuCtxSynchronize());
  const bool corrupted = bytes_other_than(block, kBytes, kNewOwner) > 0;
  std::printf("synchronizes_during=%llu synchronizes_after=%llu invalidations=%d corrupted=%d\n",
              static_cast<unsigned long long>(during), static_cast<unsigned long long>(after),
              fake.capture_invalidations(), corrupted ? 1 : 0);
  CHECK_CU(cuMemFree(block));
  return 0;
}
