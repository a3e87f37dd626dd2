// A block of device 0 freed with its old owner's slow write queued and handed out again by a
// legacy-stream marker while device 0 is the only device; then device 1's primary context appears
// and the new owner's first write is queued on device 1's stream (unified addressing reaches device
// 0's memory; nothing of device 0 orders it). Without the shim the free waited for the old write.
// Prints whether the block was reused and how many bytes of the new owner's pattern the old
// owner's write overwrote. Run with FAKECUDA_DEVICES=2.
#include <cuda.h>
#include <unistd.h>

#include <cstdio>

#include "tests/integration/programs/device_readback.h"
#include "tests/integration/programs/primary_context.h"

namespace {

void sleep_host(void*) { usleep(200000); }

}  // namespace

int main() {
  const CUcontext device0 = use_primary_context();
  constexpr size_t kBytes = size_t{4} << 20;
  CUdeviceptr old_block = 0;
  CHECK_CU(cuMemAlloc(&old_block, kBytes));
  CHECK_CU(cuLaunchHostFunc(nullptr, sleep_host, nullptr));
  CHECK_CU(cuMemsetD8Async(old_block, 0xAA, kBytes, nullptr));
  CHECK_CU(cuMemFree(old_block));
  CUdeviceptr new_block = 0;
  CHECK_CU(cuMemAlloc(&new_block, kBytes));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 1));
  CUcontext device1;
  CHECK_CU(cuDevicePrimaryCtxRetain(&device1, device));
  CHECK_CU(cuCtxSetCurrent(device1));
  CHECK_CU(cuMemsetD8Async(new_block, 0x55, kBytes, nullptr));
  CHECK_CU(cuCtxSynchronize());
  CHECK_CU(cuCtxSetCurrent(device0));
  CHECK_CU(cuCtxSynchronize());
  std::printf("reused=%d corrupted=%zu\n", new_block == old_block ? 1 : 0,
              bytes_other_than(new_block, kBytes, 0x55));
  return 0;
}
