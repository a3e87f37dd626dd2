// Door 1: a program linked with -lcuda calls the exported entry points directly.
#include <cuda.h>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

int main() {
  use_primary_context();
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
  CHECK_CU(cuDevicePrimaryCtxRelease(0));
  return 0;
}
