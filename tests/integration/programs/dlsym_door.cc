// Door 2: dlsym on a dlopen("libcuda.so.1") handle (argv[1] == "handle", the way XLA loads the
// driver with RTLD_LOCAL) or dlsym(RTLD_DEFAULT, …) after a global dlopen (argv[1] == "default").
#include <cstring>

#include "tests/integration/programs/driver_by_dlsym.h"
#include "tests/integration/programs/fake_driver_state.h"

int main(int argc, char** argv) {
  const bool use_default = argc > 1 && std::strcmp(argv[1], "default") == 0;
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | (use_default ? RTLD_GLOBAL : RTLD_LOCAL));
  CHECK_TRUE(driver != nullptr);
  const DriverByDlsym d = driver_by_dlsym(use_default ? RTLD_DEFAULT : driver);
  const CUdevice device = make_context_current(d);
  for (int i = 0; i < 3; ++i) {
    CUdeviceptr ptr = 0;
    CHECK_CU(d.mem_alloc(&ptr, 4096));
    CHECK_CU(d.mem_free(ptr));
  }
  print_fake_calls({"cuMemAlloc_v2", "cuMemFree_v2"});
  CHECK_CU(d.primary_release(device));
  return 0;
}
