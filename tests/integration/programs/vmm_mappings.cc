// VMM allocations released while mapped (the pattern of NVIDIA's VMM samples: cuMemRelease right
// after cuMemMap): the driver keeps their memory until their last mapping goes. Left at exit:
//   kept_mapped   (1 granule):  mapped, released, never unmapped: live;
//   twice_mapped  (2 granules): mapped at two addresses, released, one unmapped: live;
//   unmapped      (4 granules): mapped, released, unmapped: gone;
//   never_mapped  (8 granules): released: gone.
#include <cuda.h>

#include <cstdio>

#include "tests/integration/programs/device_memory.h"
#include "tests/integration/programs/primary_context.h"

namespace {}  // namespace

extern "C" {

__attribute__((noinline)) CUmemGenericAllocationHandle create_vmm(size_t size) {
  const CUmemAllocationProp prop = device_memory();
  CUmemGenericAllocationHandle handle;
  CHECK_CU(cuMemCreate(&handle, size, &prop, 0));
  return handle;
}

}  // extern "C"

int main() {
  use_primary_context();
  const CUmemAllocationProp prop = device_memory();
  size_t granule = 0;
  CHECK_CU(cuMemGetAllocationGranularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUdeviceptr range = 0;
  CHECK_CU(cuMemAddressReserve(&range, 16 * granule, 0, 0, 0));

  const CUmemGenericAllocationHandle kept_mapped = create_vmm(granule);
  CHECK_CU(cuMemMap(range, granule, 0, kept_mapped, 0));
  CHECK_CU(cuMemRelease(kept_mapped));

  const CUmemGenericAllocationHandle twice_mapped = create_vmm(2 * granule);
  CHECK_CU(cuMemMap(range + granule, 2 * granule, 0, twice_mapped, 0));
  CHECK_CU(cuMemMap(range + 3 * granule, 2 * granule, 0, twice_mapped, 0));
  CHECK_CU(cuMemRelease(twice_mapped));
  CHECK_CU(cuMemUnmap(range + granule, 2 * granule));

  const CUmemGenericAllocationHandle unmapped = create_vmm(4 * granule);
  CHECK_CU(cuMemMap(range + 5 * granule, 4 * granule, 0, unmapped, 0));
  CHECK_CU(cuMemRelease(unmapped));
  CHECK_CU(cuMemUnmap(range + 5 * granule, 4 * granule));

  const CUmemGenericAllocationHandle never_mapped = create_vmm(8 * granule);
  CHECK_CU(cuMemRelease(never_mapped));

  std::printf("granule=%zu\n", granule);
  return 0;
}
