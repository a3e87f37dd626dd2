// Contexts made one after another, more of them than the pools' table has slots
// (PoolRegistry::kMaxContexts), each destroyed before the next is made, or with "at-once" all
// alive until the end: each context's memory is served and freed, and its data kept, pooled or not.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/integration/programs/program_support.h"

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::atoi(argv[1]) : 300;
  const bool at_once = argc > 2 && std::strcmp(argv[2], "at-once") == 0;
  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  std::vector<CUcontext> alive;
  for (int i = 0; i < count; ++i) {
    CUcontext context;
    CHECK_CU(cuCtxCreate(&context, nullptr, 0, device));
    CUdeviceptr ptr = 0;
    CHECK_CU(cuMemAlloc(&ptr, 4096));
    const unsigned int value = 0x5a5a0000u + static_cast<unsigned int>(i);
    CHECK_CU(cuMemcpyHtoD(ptr + 4092, &value, sizeof(value)));
    unsigned int read = 0;
    CHECK_CU(cuMemcpyDtoH(&read, ptr + 4092, sizeof(read)));
    CHECK_TRUE(read == value);
    CHECK_CU(cuMemFree(ptr));
    if (at_once) {
      alive.push_back(context);
    } else {
      CHECK_CU(cuCtxDestroy(context));
    }
  }
  for (CUcontext context : alive) CHECK_CU(cuCtxDestroy(context));
  std::printf("contexts=%d\n", count);
  return 0;
}
