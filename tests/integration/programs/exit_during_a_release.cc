// A program that returns from main while the shim's control thread hands its cached segments back
// to a slow driver: 600 segments of 12 MiB, freed, each driver free then taking 25 ms (about 15 s
// in all, as a device's frees wait for its work); with VRAMSHIM_IDLE_RELEASE=0.2 the release begins
// before the program returns, 1 s after "ready". Ends with status 25.
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "tests/integration/programs/primary_context.h"

int main() {
  use_primary_context();
  std::vector<CUdeviceptr> blocks(600);
  for (CUdeviceptr& block : blocks) CHECK_CU(cuMemAlloc(&block, size_t{12} << 20));
  for (const CUdeviceptr block : blocks) CHECK_CU(cuMemFree(block));
  const auto set_delay = reinterpret_cast<void (*)(uint64_t)>(
      dlsym(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD), "fakecuda_set_alloc_delay_us"));
  CHECK_TRUE(set_delay != nullptr);
  set_delay(25000);
  std::puts("ready");
  std::fflush(stdout);
  sleep(1);
  return 25;
}
