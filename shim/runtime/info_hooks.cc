#include "shim/intercept/hook_declarations.h"

namespace vramshim::hooks {

CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) { return real::cuMemGetInfo(free, total); }

CUresult cuMemGetInfo_v2(size_t * free, size_t* total) { return real::cuMemGetInfo_v2(free, total); }

CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) { return real::cuDeviceTotalMem(bytes, dev); }

CUresult cuDeviceTotalMem_v2(size_t * bytes, CUdevice dev) { return real::cuDeviceTotalMem_v2(bytes, dev); }

}  // namespace vramshim::hooks
