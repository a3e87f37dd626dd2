// cuCtxDestroy of the primary context, which the driver refuses (it is released, not destroyed):
// the context and its memory live on, and so must the pool's knowledge of them. Block a is freed
// after the refusal; block b, in the same segment, must keep its data. Prints the destroy's
// result, the free's, the bytes of b that changed, and the driver's errors.
#include <cuda.h>

#include <cstdio>

#include "tests/integration/programs/device_readback.h"
#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/primary_context.h"

int main() {
  const CUcontext primary = use_primary_context();
  const FakeDriverState fake = fake_driver_state();
  constexpr size_t kBytes = 4096;
  CUdeviceptr a = 0, b = 0;
  CHECK_CU(cuMemAlloc(&a, kBytes));
  CHECK_CU(cuMemAlloc(&b, kBytes));
  CHECK_CU(cuMemsetD8(b, 0x5A, kBytes));
  const CUresult destroyed = cuCtxDestroy(primary);
  const CUresult freed = cuMemFree(a);
  const size_t changed = bytes_other_than(b, kBytes, 0x5A);
  CHECK_CU(cuMemFree(b));
  std::printf("destroy=%d free=%d changed=%zu driver_errors=%llu\n", static_cast<int>(destroyed),
              static_cast<int>(freed), changed, static_cast<unsigned long long>(fake.errors()));
  return 0;
}
