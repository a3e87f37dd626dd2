// Stream-ordered memory of device 1 running out while device 0's context is current. Device 1's
// driver pool keeps 300 MiB freed (release threshold at its highest); device 0 holds 512 MiB.
// Then, on a stream of device 1: 800 MiB (fits once that pool is trimmed), and 800 MiB more (does
// not fit). Prints both results.
#include <cuda.h>

#include <cstdio>

#include "tests/integration/programs/program_support.h"

int main() {
  CHECK_CU(cuInit(0));
  CUdevice first, second;
  CHECK_CU(cuDeviceGet(&first, 0));
  CHECK_CU(cuDeviceGet(&second, 1));
  CUcontext on_first, on_second;
  CHECK_CU(cuDevicePrimaryCtxRetain(&on_first, first));
  CHECK_CU(cuDevicePrimaryCtxRetain(&on_second, second));
  CHECK_CU(cuCtxSetCurrent(on_second));
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUmemoryPool pool;
  CHECK_CU(cuDeviceGetDefaultMemPool(&pool, second));
  cuuint64_t threshold = ~cuuint64_t{0};
  CHECK_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  CUdeviceptr kept_by_pool = 0;
  CHECK_CU(cuMemAllocAsync(&kept_by_pool, size_t{300} << 20, stream));
  CHECK_CU(cuMemFreeAsync(kept_by_pool, stream));
  CHECK_CU(cuStreamSynchronize(stream));

  CHECK_CU(cuCtxSetCurrent(on_first));
  CUdeviceptr on_device_0 = 0;
  CHECK_CU(cuMemAlloc(&on_device_0, size_t{512} << 20));
  CUdeviceptr fits = 0, does_not = 0;
  const CUresult first_result = cuMemAllocAsync(&fits, size_t{800} << 20, stream);
  const CUresult second_result = cuMemAllocAsync(&does_not, size_t{800} << 20, stream);
  CHECK_CU(cuStreamSynchronize(stream));
  std::printf("fits=%d does_not=%d\n", static_cast<int>(first_result),
              static_cast<int>(second_result));
  return 0;
}
