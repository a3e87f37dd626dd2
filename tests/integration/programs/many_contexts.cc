// Contexts made and destroyed one after another, more of them than the pools' table has slots
// (PoolRegistry::kMaxContexts): each context's memory is served and freed, and its data kept,
// pooled or not.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#include "tests/integration/programs/program_support.h"

int main(int argc, char** argv) {
  const int contexts = argc > 1 ? std::atoi(argv[1]) : 300;
  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  for (int i = 0; i < contexts; ++i) {
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
    CHECK_CU(cuCtxDestroy(context));
  }
  std::printf("contexts=%d\n", contexts);
  return 0;
}
