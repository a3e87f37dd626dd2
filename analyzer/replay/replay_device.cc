#include "analyzer/replay/replay_device.h"

namespace vramshim::analyzer {
namespace {

constexpr uint64_t kSpacing = uint64_t{2} << 20;

}  // namespace

CUresult ReplayDevice::allocate(size_t bytes, CUdeviceptr* ptr) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  *ptr = next_address_;
  segments_.emplace(next_address_, bytes);
  next_address_ += (bytes + 2 * kSpacing - 1) / kSpacing * kSpacing;
  return CUDA_SUCCESS;
}

CUresult ReplayDevice::free(CUdeviceptr ptr) {
  return segments_.erase(ptr) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult ReplayDevice::create_event(CUevent* event) {
  *event = reinterpret_cast<CUevent>(next_event_++);
  return CUDA_SUCCESS;
}

CUresult ReplayDevice::record_event(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult ReplayDevice::query_event(CUevent) { return CUDA_SUCCESS; }
CUresult ReplayDevice::synchronize_event(CUevent) { return CUDA_SUCCESS; }
CUresult ReplayDevice::destroy_event(CUevent) { return CUDA_SUCCESS; }
CUresult ReplayDevice::wait_event(CUstream, CUevent) { return CUDA_SUCCESS; }

CUresult ReplayDevice::synchronize_context() { return CUDA_SUCCESS; }

CUresult ReplayDevice::synchronize_other_context(CUcontext) { return CUDA_SUCCESS; }
uint64_t ReplayDevice::trim_stream_ordered_pools() { return 0; }
bool ReplayDevice::push_current() { return true; }
void ReplayDevice::pop_current() {}

}  // namespace vramshim::analyzer
