#include "analyzer/replay/replay_device.h"

namespace vramshim::analyzer {
namespace {

constexpr uint64_t kSpacing = uint64_t{2} << 20;

// The addresses a segment of `bytes` takes, with the space after it.
uint64_t span_of(uint64_t bytes) { return (bytes + 2 * kSpacing - 1) / kSpacing * kSpacing; }

}  // namespace

CUresult ReplayDevice::allocate(size_t bytes, CUdeviceptr* ptr) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > kCapacityBytes - reserved_bytes_) return CUDA_ERROR_OUT_OF_MEMORY;
  const uint64_t span = span_of(bytes);
  const uint64_t address = room_for(span);
  if (address == 0) return CUDA_ERROR_OUT_OF_MEMORY;
  segments_.emplace(address, bytes);
  reserved_bytes_ += bytes;
  next_address_ = address + span;
  *ptr = address;
  return CUDA_SUCCESS;
}

uint64_t ReplayDevice::room_for(uint64_t span) const {
  uint64_t address = next_address_;
  bool restarted = false;
  auto next = segments_.lower_bound(address);
  while (span > kAddressEnd - address ||
         (next != segments_.end() && next->first - address < span)) {
    if (span > kAddressEnd - address) {
      // Room always turns up from the start: the segments hold at most kCapacityBytes.
      if (restarted) return 0;
      restarted = true;
      address = kFirstAddress;
      next = segments_.begin();
    } else {
      address = next->first + span_of(next->second);
      ++next;
    }
  }
  return address;
}

CUresult ReplayDevice::free(CUdeviceptr ptr) {
  const auto it = segments_.find(ptr);
  if (it == segments_.end()) return CUDA_ERROR_INVALID_VALUE;
  reserved_bytes_ -= it->second;
  segments_.erase(it);
  return CUDA_SUCCESS;
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
