// One allocation of every kind the shim attributes, each left live at exit, plus one of each freed:
// device, pitched, stream-ordered (async), managed, pinned host (two entry points) and VMM.
#include <cuda.h>

#include "tests/integration/programs/device_memory.h"
#include "tests/integration/programs/primary_context.h"

extern "C" {

__attribute__((noinline)) void allocate_every_kind() {
  CUdeviceptr device = 0, pitched = 0, async = 0, managed = 0;
  size_t pitch = 0;
  void* host = nullptr;
  void* host_alloc = nullptr;
  CHECK_CU(cuMemAlloc(&device, 1 << 20));
  CHECK_CU(cuMemAllocPitch(&pitched, &pitch, 1000, 100, 4));
  CHECK_TRUE(pitch >= 1000 && pitch % 512 == 0);
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuMemAllocAsync(&async, 3 << 20, stream));
  CHECK_CU(cuMemAllocManaged(&managed, 4 << 20, CU_MEM_ATTACH_GLOBAL));
  CHECK_CU(cuMemAllocHost(&host, 5 << 20));
  CHECK_CU(cuMemHostAlloc(&host_alloc, 6 << 20, 0));
  const CUmemAllocationProp prop = device_memory(0);
  CUmemGenericAllocationHandle kept, released;
  CHECK_CU(cuMemCreate(&kept, 2 << 20, &prop, 0));
  CHECK_CU(cuMemCreate(&released, 4 << 20, &prop, 0));
  CHECK_CU(cuMemRelease(released));
  CHECK_CU(cuStreamSynchronize(stream));
}

}  // extern "C"

int main() {
  use_primary_context();
  allocate_every_kind();
  return 0;
}
