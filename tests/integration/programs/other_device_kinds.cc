// Memory the driver serves itself, made on device 1 while device 0's context is current: 32 MiB
// stream-ordered on a stream of device 1, and 64 MiB VMM located on device 1. Both left live.
#include <cuda.h>

#include "tests/integration/programs/device_memory.h"
#include "tests/integration/programs/primary_context.h"

int main() {
  CUdevice second;
  CHECK_CU(cuInit(0));
  CHECK_CU(cuDeviceGet(&second, 1));
  CUcontext on_second;
  CHECK_CU(cuDevicePrimaryCtxRetain(&on_second, second));
  CHECK_CU(cuCtxSetCurrent(on_second));
  CUstream stream_of_second;
  CHECK_CU(cuStreamCreate(&stream_of_second, CU_STREAM_NON_BLOCKING));
  use_primary_context();  // device 0 current from here on

  CUdeviceptr async = 0;
  CHECK_CU(cuMemAllocAsync(&async, 32 << 20, stream_of_second));
  const CUmemAllocationProp prop = device_memory(1);
  CUmemGenericAllocationHandle vmm;
  CHECK_CU(cuMemCreate(&vmm, 64 << 20, &prop, 0));
  CHECK_CU(cuStreamSynchronize(stream_of_second));
  return 0;
}
