// Built without a build-id; weights_v2.cc is the same program rebuilt with more code.
#include <cuda.h>

#include "tests/integration/programs/primary_context.h"
#include "tests/integration/programs/program_support.h"

__attribute__((noinline)) void load_weights() {
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc_v2(&ptr, 2 << 20));
}

int main() {
  use_primary_context();
  load_weights();
  return 0;
}
