// A green context retains the primary context inside the driver, with no call of
// cuDevicePrimaryCtxRetain: when the program releases its own retain, the primary context lives on
// with its memory, and its pool must too (a pool dropped then would leave its live blocks to be
// freed one by one to the driver, which frees a whole segment at the first). Destroying the green
// context then makes the last release. Prints the context synchronizes the pool made to reuse a
// block, and the driver's errors.
#include <cuda.h>

#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/green_context.h"
#include "tests/integration/programs/program_support.h"

int main() {
  CHECK_CU(cuInit(0));
  const FakeDriverState fake = fake_driver_state();
  CUcontext primary;
  CHECK_CU(cuDevicePrimaryCtxRetain(&primary, 0));
  CHECK_CU(cuCtxSetCurrent(primary));
  const CUgreenCtx green = make_green_context();
  // Its default stream runs beside the primary context's legacy stream: a block freed in the
  // primary context is reused only after a context synchronize, which waits for it too.
  const uint64_t synchronizes = fake.calls("cuCtxSynchronize");
  CUdeviceptr reused = 0;
  CHECK_CU(cuMemAlloc(&reused, 32 << 20));
  CHECK_CU(cuMemFree(reused));
  CHECK_CU(cuMemAlloc(&reused, 32 << 20));
  CHECK_CU(cuMemFree(reused));
  std::printf("context_synchronizes=%llu\n",
              static_cast<unsigned long long>(fake.calls("cuCtxSynchronize") - synchronizes));
  CUdeviceptr a = 0;
  CUdeviceptr b = 0;
  CHECK_CU(cuMemAlloc(&a, 4096));
  CHECK_CU(cuMemAlloc(&b, 4096));  // the same segment as a
  CHECK_CU(cuDevicePrimaryCtxRelease(0));
  const CUresult free_a = cuMemFree(a);
  const CUresult free_b = cuMemFree(b);
  std::printf("free_a=%d free_b=%d errors=%llu\n", static_cast<int>(free_a),
              static_cast<int>(free_b), static_cast<unsigned long long>(fake.errors()));
  CHECK_CU(cuGreenCtxDestroy(green));
  std::printf("end live=%llu errors=%llu\n", static_cast<unsigned long long>(fake.live_bytes(0)),
              static_cast<unsigned long long>(fake.errors()));
  return 0;
}
