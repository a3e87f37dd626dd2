// A non-blocking stream destroyed while another stream captures, with a slow write to a block
// still queued on it; the block is freed and its memory allocated again after the capture. The
// new owner's data must survive the old write, and the pool, which could record nothing on the
// stream during the capture, must wait for its work once, not synchronize the context at every
// reuse from then on. Prints whether the new owner's data changed, and the context synchronizes
// made during 200 rounds of churn after the capture.
#include <cuda.h>
#include <unistd.h>

#include <cstdio>

#include "tests/integration/programs/device_readback.h"
#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

namespace {

constexpr size_t kBytes = 4 << 20;
constexpr unsigned char kOldOwner = 0xAA;
constexpr unsigned char kNewOwner = 0x55;

void sleep_300ms(void*) { usleep(300 * 1000); }

}  // namespace

int main() {
  use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  CUstream capturing, doomed;
  CHECK_CU(cuStreamCreate(&capturing, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuStreamCreate(&doomed, CU_STREAM_NON_BLOCKING));
  CUdeviceptr block = 0;
  CHECK_CU(cuMemAlloc(&block, kBytes));
  CHECK_CU(cuLaunchHostFunc(doomed, sleep_300ms, nullptr));
  CHECK_CU(cuMemsetD8Async(block, kOldOwner, kBytes, doomed));

  CHECK_CU(cuStreamBeginCapture(capturing, CU_STREAM_CAPTURE_MODE_RELAXED));
  CHECK_CU(cuStreamDestroy(doomed));
  CHECK_CU(cuMemFree(block));
  CUgraph graph = nullptr;
  CHECK_CU(cuStreamEndCapture(capturing, &graph));
  CHECK_CU(cuGraphDestroy(graph));

  CHECK_CU(cuMemAlloc(&block, kBytes));
  CHECK_CU(cuMemsetD8(block, kNewOwner, kBytes));
  CHECK_CU(cuCtxSynchronize());
  const bool changed = bytes_other_than(block, kBytes, kNewOwner) > 0;
  CHECK_CU(cuMemFree(block));

  const uint64_t before = fake.calls("cuCtxSynchronize");
  for (int round = 0; round < 200; ++round) {
    CUdeviceptr other = 0;
    CHECK_CU(cuMemAlloc(&other, (size_t{4} << 20) + (round % 3) * (size_t{2} << 20)));
    CHECK_CU(cuMemsetD8Async(other, 1, 4096, capturing));
    CHECK_CU(cuMemFree(other));
  }
  std::printf("changed=%d synchronizes_in_churn=%llu\n", changed ? 1 : 0,
              static_cast<unsigned long long>(fake.calls("cuCtxSynchronize") - before));
  return 0;
}
