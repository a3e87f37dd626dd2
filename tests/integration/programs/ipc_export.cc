// Exporting pooled memory to another process (cuIpcGetMemHandle): two 4 KiB blocks share a 2 MiB
// segment, the first at its start. Prints the result of exporting the first block, the second
// (inside the segment: the importer would map the segment's start instead), and the second's
// driver allocation as cuMemGetAddressRange names it (as NCCL exports).
#include <cuda.h>

#include "tests/integration/programs/program_support.h"

int main() {
  CHECK_CU(cuInit(0));
  CUcontext primary;
  CHECK_CU(cuDevicePrimaryCtxRetain(&primary, 0));
  CHECK_CU(cuCtxSetCurrent(primary));
  CUdeviceptr first = 0;
  CUdeviceptr second = 0;
  CHECK_CU(cuMemAlloc(&first, 4096));
  CHECK_CU(cuMemAlloc(&second, 4096));
  CUdeviceptr base = 0;
  size_t size = 0;
  CHECK_CU(cuMemGetAddressRange(&base, &size, second));
  CUipcMemHandle handle;
  const CUresult at_start = cuIpcGetMemHandle(&handle, first);
  const CUresult inside = cuIpcGetMemHandle(&handle, second);
  const CUresult driver_base = cuIpcGetMemHandle(&handle, base);
  std::printf("second_inside=%d export_start=%d export_inside=%d export_driver_base=%d\n",
              second != base ? 1 : 0, static_cast<int>(at_start), static_cast<int>(inside),
              static_cast<int>(driver_base));
  CHECK_CU(cuMemFree(first));
  CHECK_CU(cuMemFree(second));
  return 0;
}
