// Contexts ended through the CUDA 1.x usage count (cuCtxAttach, cuCtxDetach): a detach that leaves
// attaches keeps the context and its pool; the last one destroys the context, and its pool must go
// with it. A pool left behind would hand its segments' addresses back to the driver later, when
// they belong to another context's live memory.
#define CUDA_ENABLE_DEPRECATED  // cuCtxAttach and cuCtxDetach are what this program exercises
#include <cuda.h>

#include <cstdio>

#include "tests/integration/programs/control_client.h"
#include "tests/integration/programs/fake_driver_state.h"
#include "tests/integration/programs/program_support.h"

int main() {
  CHECK_CU(cuInit(0));
  const FakeDriverState fake = fake_driver_state();
  constexpr size_t kBlock = 1 << 20;
  CUcontext first, attached;
  CHECK_CU(cuCtxCreate(&first, nullptr, 0, 0));
  CHECK_CU(cuCtxAttach(&attached, 0));
  CUdeviceptr ptr = 0;
  CHECK_CU(cuMemAlloc(&ptr, kBlock));
  CHECK_CU(cuMemFree(ptr));
  CHECK_CU(cuCtxDetach(first));  // one attach detached: the context lives on
  CUdeviceptr again = 0;
  CHECK_CU(cuMemAlloc(&again, kBlock));
  std::printf("served_after_first_detach=%d\n", again == ptr ? 1 : 0);
  CHECK_CU(cuMemFree(again));
  CHECK_CU(cuCtxDetach(first));  // the last: the context is destroyed, its memory freed
  // Under the shim (VRAMSHIM_SOCKET set): no pool keeps the destroyed context's segment.
  std::printf("reserved_after_last_detach=%lld\n",
              json_number(control_request("stats"), "reserved_bytes"));

  CUcontext second;
  CHECK_CU(cuCtxCreate(&second, nullptr, 0, 0));
  CUdeviceptr live = 0;
  CHECK_CU(cuMemAlloc(&live, kBlock));
  CHECK_CU(cuMemsetD8(live, 0x5a, kBlock));
  // Out of memory on the 64 MiB device (FAKECUDA_CAPACITY): every pool of the device is asked to
  // hand back what it caches.
  CUdeviceptr huge = 0;
  const CUresult huge_result = cuMemAlloc(&huge, size_t{63} << 20);
  unsigned char byte = 0;
  const CUresult read = cuMemcpyDtoH(&byte, live, 1);
  std::printf("huge=%d read=%d damaged=%d errors=%llu\n", static_cast<int>(huge_result),
              static_cast<int>(read), read != CUDA_SUCCESS || byte != 0x5a ? 1 : 0,
              static_cast<unsigned long long>(fake.errors()));
  CHECK_CU(cuMemFree(live));
  CHECK_CU(cuCtxDestroy(second));
  std::printf("end live=%llu errors=%llu\n", static_cast<unsigned long long>(fake.live_bytes(0)),
              static_cast<unsigned long long>(fake.errors()));
  return 0;
}
