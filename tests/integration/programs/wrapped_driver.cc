// Linked with the wrapper library ahead of the driver: cuMemAlloc resolves to the wrapper, which
// forwards with dlsym(RTLD_NEXT, …).
#include <cuda.h>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

extern "C" int wrapper_calls();

int main() {
  use_primary_context();
  for (int i = 0; i < 3; ++i) {
    CUdeviceptr ptr = 0;
    CHECK_CU(cuMemAlloc(&ptr, 1 << 20));
    CHECK_CU(cuMemFree(ptr));
  }
  std::printf("wrapper calls=%d\n", wrapper_calls());
  print_fake_calls({"cuMemAlloc_v2"});
  return 0;
}
