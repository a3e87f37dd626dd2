// Door 1: a program linked with -lcuda calls the exported entry points directly.
#include <cuda.h>

#include "tests/integration/programs/program_support.h"

int main() {
  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));
  for (int i = 0; i < 3; ++i) {
    CUdeviceptr ptr = 0;
    CHECK_CU(cuMemAlloc(&ptr, 1 << 20));  // cuda.h maps this to cuMemAlloc_v2
    CHECK_TRUE(ptr != 0);
    CHECK_CU(cuMemsetD8(ptr, 0x5a, 1 << 20));
    unsigned char byte = 0;
    CHECK_CU(cuMemcpyDtoH(&byte, ptr + 4096, 1));
    CHECK_TRUE(byte == 0x5a);
    CHECK_CU(cuMemFree(ptr));
  }
  print_fake_calls({"cuMemAlloc_v2", "cuMemFree_v2"});
  CHECK_CU(cuDevicePrimaryCtxRelease(device));
  return 0;
}
