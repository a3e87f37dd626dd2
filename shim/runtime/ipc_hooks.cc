// Sharing device memory between processes (cuIpcGetMemHandle): the driver exports the whole
// allocation holding the pointer, and the importing process's cuIpcOpenMemHandle answers that
// allocation's start. For a block the pool carved out of a segment at an offset, the importer would
// read and write the segment's start instead of the block (PyTorch's CUDA tensor sharing computes
// its offsets from the pointer it allocated): that export is refused, with one warning, rather than
// silently aimed at other memory. A block at its segment's start exports correctly, as does a
// pointer at the start of the driver's allocation however it was found (NCCL asks
// cuMemGetAddressRange first).
#include <atomic>

#include "shim/control/log.h"
#include "shim/intercept/driver_functions.h"
#include "shim/intercept/hook_declarations.h"
#include "shim/runtime/runtime.h"

namespace vramshim::hooks {

CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  if (runtime::Runtime* runtime = runtime::Runtime::get()) {
    pool::CachingPool* pool = runtime->pools().find_holder(dptr);
    if (pool != nullptr && pool->holds_inside_segment(dptr)) {
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) {
        control::log(control::LogLevel::kWarn,
                     "cuIpcGetMemHandle refused: the pool carved this memory out of a larger "
                     "driver allocation, which another process would map instead; run with "
                     "VRAMSHIM_POOL=off to share device memory between processes");
      }
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return real::cuIpcGetMemHandle(pHandle, dptr);
}

}  // namespace vramshim::hooks
