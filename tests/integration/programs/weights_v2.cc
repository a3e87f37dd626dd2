// weights_v1.cc rebuilt with a function added before load_weights: its code takes their addresses.
#include <cuda.h>

#include <cstdio>

#include "tests/integration/programs/primary_context.h"
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
  use_primary_context();
  if (argc > 5) helper_added_later(argc);
  load_weights();
  return 0;
}
