// cuMemFreeAsync (cudaFreeAsync) of memory cuMemAlloc handed out: under the shim those blocks are
// carved out of the pool's segments, and the driver would free a whole segment under the blocks
// beside it. The pool must take the block back itself, and refuse an address inside a block.
#include <cuda.h>

#include <vector>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

int main() {
  use_primary_context();
  constexpr size_t kSize = 4096;
  std::vector<CUdeviceptr> blocks(4);
  for (CUdeviceptr& block : blocks) CHECK_CU(cuMemAlloc(&block, kSize));
  for (size_t i = 0; i < blocks.size(); ++i) {
    CHECK_CU(cuMemsetD8(blocks[i], static_cast<unsigned char>(i + 1), kSize));
  }
  CUstream stream = nullptr;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  const FakeDriverState driver = fake_driver_state();
  const uint64_t errors_before = driver.errors();

  std::printf("free_async=%d\n", static_cast<int>(cuMemFreeAsync(blocks[0], stream)));
  std::printf("interior_free_async=%d\n",
              static_cast<int>(cuMemFreeAsync(blocks[1] + 512, stream)));
  CHECK_CU(cuStreamSynchronize(stream));
  CUdeviceptr again = 0;
  CHECK_CU(cuMemAlloc(&again, kSize));
  CHECK_CU(cuMemsetD8(again, 0x77, kSize));

  int damaged = 0;
  for (size_t i = 1; i < blocks.size(); ++i) {
    unsigned char byte = 0;
    if (cuMemcpyDtoH(&byte, blocks[i] + kSize - 1, 1) != CUDA_SUCCESS || byte != i + 1) ++damaged;
  }
  for (size_t i = 1; i < blocks.size(); ++i) CHECK_CU(cuMemFree(blocks[i]));
  CHECK_CU(cuMemFree(again));
  std::printf("damaged=%d driver_free_async=%llu driver_errors=%llu\n", damaged,
              static_cast<unsigned long long>(driver.calls("cuMemFreeAsync")),
              static_cast<unsigned long long>(driver.errors() - errors_before));
  return 0;
}
