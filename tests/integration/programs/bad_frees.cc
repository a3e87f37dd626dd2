// Frees a program gets wrong: a second free of a block, a free of an address inside a block.
// Under the shim each must get the error the driver alone gives and leave every other block as it
// was: the pool must never pass a pointer inside one of its segments to the driver, which would
// free the whole segment under the blocks still carved out of it.
#include <cuda.h>

#include <vector>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

int main() {
  use_primary_context();
  constexpr size_t kSize = 4096;
  std::vector<CUdeviceptr> blocks(4);
  for (CUdeviceptr& block : blocks) CHECK_CU(cuMemAlloc(&block, kSize));
  CUdeviceptr large = 0;
  CHECK_CU(cuMemAlloc(&large, 64 << 20));
  const FakeDriverState driver = fake_driver_state();
  const uint64_t errors_before = driver.errors();

  CHECK_CU(cuMemFree(blocks[0]));
  std::printf("double_free=%d\n", static_cast<int>(cuMemFree(blocks[0])));
  std::printf("interior_free=%d\n", static_cast<int>(cuMemFree(blocks[1] + 512)));
  CHECK_CU(cuMemFree(large));
  std::printf("double_free_large=%d\n", static_cast<int>(cuMemFree(large)));

  // The blocks still live are intact and usable.
  int damaged = 0;
  for (size_t i = 1; i < blocks.size(); ++i) {
    if (cuMemsetD8(blocks[i], static_cast<unsigned char>(i), kSize) != CUDA_SUCCESS) ++damaged;
    unsigned char byte = 0;
    if (cuMemcpyDtoH(&byte, blocks[i] + kSize - 1, 1) != CUDA_SUCCESS || byte != i) ++damaged;
  }
  for (size_t i = 1; i < blocks.size(); ++i) CHECK_CU(cuMemFree(blocks[i]));
  std::printf("damaged=%d\n", damaged);
  std::printf("driver_errors=%llu\n",
              static_cast<unsigned long long>(driver.errors() - errors_before));
  return 0;
}
