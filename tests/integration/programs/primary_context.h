// cuInit and device 0's primary context made current on the calling thread.
#pragma once

#include <cuda.h>

#include "tests/integration/programs/program_support.h"

inline CUcontext use_primary_context() {
  CHECK_CU(cuInit(0));
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK_CU(cuDevicePrimaryCtxRetain(&context, device));
  CHECK_CU(cuCtxSetCurrent(context));
  return context;
}
