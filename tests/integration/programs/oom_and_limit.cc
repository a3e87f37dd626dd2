// Out of memory and the limit. "oom": the simulated device holds 1 GiB (FAKECUDA_CAPACITY); 700 MiB
// is cached in the pool as 1 MiB blocks; a 600 MiB request must still succeed (the pool empties its
// cache and retries). "limit": under VRAMSHIM_LIMIT=256MiB, cuMemGetInfo and cuDeviceTotalMem
// report 256 MiB and an allocation past it fails with CUDA_ERROR_OUT_OF_MEMORY.
#include <cuda.h>

#include <string>
#include <vector>

#include "tests/integration/programs/primary_context.h"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "oom";
  use_primary_context();
  constexpr size_t kMiB = size_t{1} << 20;
  if (mode == "oom") {
    std::vector<CUdeviceptr> blocks(700);
    for (CUdeviceptr& block : blocks) CHECK_CU(cuMemAlloc(&block, kMiB));
    for (CUdeviceptr block : blocks) CHECK_CU(cuMemFree(block));
    size_t free_bytes = 0, total_bytes = 0;
    CHECK_CU(cuMemGetInfo(&free_bytes, &total_bytes));
    std::printf("cached free=%zu total=%zu\n", free_bytes, total_bytes);
    CUdeviceptr big = 0;
    const CUresult result = cuMemAlloc(&big, 600 * kMiB);
    std::printf("600MiB result=%d\n", static_cast<int>(result));
    return result == CUDA_SUCCESS ? 0 : 1;
  }
  size_t free_bytes = 0, total_bytes = 0, device_total = 0;
  CHECK_CU(cuMemGetInfo(&free_bytes, &total_bytes));
  CHECK_CU(cuDeviceTotalMem(&device_total, 0));
  std::printf("limit free=%zu total=%zu device_total=%zu\n", free_bytes, total_bytes, device_total);
  CUdeviceptr within = 0, beyond = 0;
  CHECK_CU(cuMemAlloc(&within, 200 * kMiB));
  CHECK_CU(cuMemGetInfo(&free_bytes, &total_bytes));
  const CUresult over = cuMemAlloc(&beyond, 100 * kMiB);
  std::printf("after 200MiB free=%zu over_result=%d\n", free_bytes, static_cast<int>(over));
  CHECK_CU(cuMemFree(within));
  CUdeviceptr again = 0;
  CHECK_CU(cuMemAlloc(&again, 100 * kMiB));  // room again once freed
  return over == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 1;
}
