// A green context on device 0 with one SM group (all its SMs) and its default stream.
#pragma once

#include <cuda.h>

#include "tests/integration/programs/program_support.h"

inline CUgreenCtx make_green_context() {
  CUdevResource sms;
  CHECK_CU(cuDeviceGetDevResource(0, &sms, CU_DEV_RESOURCE_TYPE_SM));
  CUdevResourceDesc desc;
  CHECK_CU(cuDevResourceGenerateDesc(&desc, &sms, 1));
  CUgreenCtx green;
  CHECK_CU(cuGreenCtxCreate(&green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM));
  return green;
}
