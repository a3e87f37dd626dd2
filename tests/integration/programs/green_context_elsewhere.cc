// A green context of device 0 made while device 1's primary context is current, after a block of
// device 0 was freed with a write still queued: every pool hears of streams it cannot fence and
// synchronizes, each its own context (not the caller's current one) before it hands the block out
// again. Prints how many bytes of the new owner's pattern the old owner's write overwrote.
#include <cuda.h>
#include <unistd.h>

#include <cstdio>

#include "tests/integration/programs/device_readback.h"
#include "tests/integration/programs/green_context.h"
#include "tests/integration/programs/program_support.h"

namespace {

void sleep_host(void*) { usleep(300000); }

}  // namespace

int main() {
  CHECK_CU(cuInit(0));
  CUcontext device0;
  CUcontext device1;
  CHECK_CU(cuDevicePrimaryCtxRetain(&device0, 0));
  CHECK_CU(cuDevicePrimaryCtxRetain(&device1, 1));
  CHECK_CU(cuCtxSetCurrent(device0));
  CUstream writer;
  CUstream owner;
  CHECK_CU(cuStreamCreate(&writer, CU_STREAM_DEFAULT));
  CHECK_CU(cuStreamCreate(&owner, CU_STREAM_DEFAULT));
  // A block reused once: the pool has made a block reusable by a legacy-stream marker.
  CUdeviceptr warm = 0;
  CHECK_CU(cuMemAlloc(&warm, 4 << 20));
  CHECK_CU(cuMemFree(warm));
  CHECK_CU(cuMemAlloc(&warm, 4 << 20));
  // The old owner's slow write, then its free (cuMemFree waits for it, without the shim).
  constexpr size_t kBytes = 4096;
  CUdeviceptr old_block = 0;
  CHECK_CU(cuMemAlloc(&old_block, kBytes));
  CHECK_CU(cuLaunchHostFunc(writer, sleep_host, nullptr));
  CHECK_CU(cuMemsetD8Async(old_block, 0xAA, kBytes, writer));
  CHECK_CU(cuMemFree(old_block));
  CHECK_CU(cuCtxSetCurrent(device1));
  make_green_context();
  CHECK_CU(cuCtxSetCurrent(device0));
  CUdeviceptr new_block = 0;
  CHECK_CU(cuMemAlloc(&new_block, kBytes));
  CHECK_CU(cuMemsetD8Async(new_block, 0x55, kBytes, owner));
  CHECK_CU(cuCtxSynchronize());
  std::printf("reused=%d corrupted=%zu\n", new_block == old_block ? 1 : 0,
              bytes_other_than(new_block, kBytes, 0x55));
  return 0;
}
