// Memory information: the pool's free bytes count as free (they are reclaimable), and under
// VRAMSHIM_LIMIT the limit is the device's total.
#include <climits>

#include "shim/intercept/driver_functions.h"
#include "shim/intercept/hook_declarations.h"
#include "shim/runtime/runtime.h"

namespace vramshim::hooks {
namespace {

using runtime::Runtime;

unsigned int saturate(size_t value) {
  return value > UINT_MAX ? UINT_MAX : static_cast<unsigned int>(value);
}

// The driver's figures for the current device, adjusted for the pools; false without a context.
bool adjust(Runtime& runtime, size_t* free, size_t* total) {
  CUdevice device = 0;
  if (real::cuCtxGetDevice(&device) != CUDA_SUCCESS) return false;
  const pool::MemInfo info = runtime.pools().mem_get_info(device, {*free, *total});
  *free = info.free;
  *total = info.total;
  return true;
}

}  // namespace

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  const CUresult result = real::cuMemGetInfo_v2(free, total);
  Runtime* runtime = Runtime::get();
  if (result == CUDA_SUCCESS && runtime != nullptr && free != nullptr && total != nullptr) {
    adjust(*runtime, free, total);
  }
  return result;
}

CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) {
  const CUresult result = real::cuMemGetInfo(free, total);
  Runtime* runtime = Runtime::get();
  if (result == CUDA_SUCCESS && runtime != nullptr && free != nullptr && total != nullptr) {
    size_t wide_free = *free, wide_total = *total;
    if (adjust(*runtime, &wide_free, &wide_total)) {
      *free = saturate(wide_free);
      *total = saturate(wide_total);
    }
  }
  return result;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  const CUresult result = real::cuDeviceTotalMem_v2(bytes, dev);
  Runtime* runtime = Runtime::get();
  if (result == CUDA_SUCCESS && runtime != nullptr && bytes != nullptr) {
    *bytes = runtime->pools().device_total_mem(dev, *bytes);
  }
  return result;
}

CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  const CUresult result = real::cuDeviceTotalMem(bytes, dev);
  Runtime* runtime = Runtime::get();
  if (result == CUDA_SUCCESS && runtime != nullptr && bytes != nullptr) {
    *bytes = saturate(runtime->pools().device_total_mem(dev, *bytes));
  }
  return result;
}

}  // namespace vramshim::hooks
