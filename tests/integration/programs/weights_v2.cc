// weights_v1.cc rebuilt with a function added before load_weights: its code takes their addresses.
#include <cuda.h>

#include <cstdio>

#include "tests/integration/programs/program_support.h"

__attribute__((noinline)) int helper_added_later(int x) {
  int sum = 0;
  for (int i = 0; i < x; ++i) sum += i * x ^ (sum >> 3);
  std::printf("%d\n", sum);
  return sum;
}

__attribute__((noinline)) void load_weights() {
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc_v2(&ptr, 2 << 20));
}

int main(int argc, char**) {
  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));
  if (argc > 5) helper_added_later(argc);
  load_weights();
  return 0;
}
