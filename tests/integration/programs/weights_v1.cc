// Built without a build-id; weights_v2.cc is the same program rebuilt with more code.
#include <cuda.h>

#include "tests/integration/programs/program_support.h"

__attribute__((noinline)) void load_weights() {
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc_v2(&ptr, 2 << 20));
}

int main() {
  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));
  load_weights();
  return 0;
}
