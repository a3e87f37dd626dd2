#include "shim/runtime/driver_device_api.h"

#include "shim/control/fatal_signals.h"
#include "shim/intercept/driver_functions.h"
#include "shim/intercept/hook_declarations.h"
#include "shim/runtime/with_context.h"
#include "shim/support/deferred_cancellation.h"

namespace vramshim::runtime {
namespace {

uint64_t reserved_bytes(CUmemoryPool pool) {
  cuuint64_t reserved = 0;
  if (real::cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) !=
      CUDA_SUCCESS) {
    return 0;
  }
  return reserved;
}

uint64_t trim(CUmemoryPool pool) {
  const uint64_t before = reserved_bytes(pool);
  if (real::cuMemPoolTrimTo(pool, 0) != CUDA_SUCCESS) return 0;
  const uint64_t after = reserved_bytes(pool);
  return before > after ? before - after : 0;
}

// Calls visit(pool) for the device's default stream-ordered pool and its current one, once each.
template <typename Visit>
void for_each_stream_ordered_pool(CUdevice device, Visit&& visit) {
  CUmemoryPool default_pool = nullptr, current_pool = nullptr;
  if (real::cuDeviceGetDefaultMemPool(&default_pool, device) == CUDA_SUCCESS) visit(default_pool);
  if (real::cuDeviceGetMemPool(&current_pool, device) == CUDA_SUCCESS &&
      current_pool != default_pool) {
    visit(current_pool);
  }
}

// Makes `call`, a driver call that may wait for the device, with a termination signal acted on at
// once (the pool makes it with its locks free: control::TerminationRelease).
template <typename Call>
CUresult unheld(Call&& call) {
  const control::TerminationRelease released(termination_of_this_thread());
  return call();
}

// Makes `call` unless a capture is active or about to begin (CaptureState), which the call would
// invalidate; then the driver's own answer to a forbidden call.
template <typename Call>
CUresult unless_capturing(pool::CaptureState& capture, Call&& call) {
  if (!capture.enter_forbidden_call()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  const CUresult result = unheld(call);
  capture.leave_forbidden_call();
  return result;
}

}  // namespace

CUresult DriverDeviceApi::allocate(size_t bytes, CUdeviceptr* ptr) {
  const support::DeferredCancellation deferred;
  const CUresult result = unheld([&] { return real::cuMemAlloc_v2(ptr, bytes); });
  if (result == CUDA_SUCCESS && trace_.enabled()) {
    trace_.record(attribution::EventType::kSegmentAlloc, device_, *ptr, bytes, 0, -1);
    try {
      std::lock_guard<std::mutex> lock(segments_mutex_);
      segment_sizes_[*ptr] = bytes;
    } catch (...) {
      // Out of host memory: its segment_free event will say 0 bytes.
    }
  }
  return result;
}

CUresult DriverDeviceApi::free(CUdeviceptr ptr) {
  const support::DeferredCancellation deferred;
  if (trace_.enabled()) {
    size_t bytes = 0;
    {
      std::lock_guard<std::mutex> lock(segments_mutex_);
      const auto it = segment_sizes_.find(ptr);
      if (it != segment_sizes_.end()) {
        bytes = it->second;
        segment_sizes_.erase(it);
      }
    }
    trace_.record(attribution::EventType::kSegmentFree, device_, ptr, bytes, 0, -1);
  }
  return unheld([&] { return real::cuMemFree_v2(ptr); });
}

CUresult DriverDeviceApi::free_segment(CUdeviceptr ptr) {
  if (!capture_.enter_forbidden_call()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  const CUresult result = free(ptr);
  capture_.leave_forbidden_call();
  return result;
}

CUresult DriverDeviceApi::create_event(CUevent* event) {
  const support::DeferredCancellation deferred;
  return real::cuEventCreate(event, CU_EVENT_DISABLE_TIMING);
}

CUresult DriverDeviceApi::record_event(CUevent event, CUstream stream) {
  const support::DeferredCancellation deferred;
  return unless_capturing(capture_, [&] { return real::cuEventRecord(event, stream); });
}

CUresult DriverDeviceApi::query_event(CUevent event) {
  const support::DeferredCancellation deferred;
  return unless_capturing(capture_, [&] { return real::cuEventQuery(event); });
}

CUresult DriverDeviceApi::synchronize_event(CUevent event) {
  const support::DeferredCancellation deferred;
  return unless_capturing(capture_, [&] { return real::cuEventSynchronize(event); });
}

CUresult DriverDeviceApi::destroy_event(CUevent event) {
  const support::DeferredCancellation deferred;
  return real::cuEventDestroy_v2(event);
}

CUresult DriverDeviceApi::wait_event(CUstream stream, CUevent event) {
  const support::DeferredCancellation deferred;
  return real::cuStreamWaitEvent(stream, event, 0);
}

CUresult DriverDeviceApi::synchronize_context() {
  const support::DeferredCancellation deferred;
  return unless_capturing(capture_, [] { return real::cuCtxSynchronize(); });
}

CUresult DriverDeviceApi::synchronize_other_context(CUcontext other) {
  const support::DeferredCancellation deferred;
  // A context that cannot be made current is destroyed, and its destruction waited for its work;
  // a synchronize that fails has waited, or its context runs nothing more (a sticky error).
  const std::optional<CUresult> result = with_context(other, [this] {
    return unless_capturing(capture_, [] { return real::cuCtxSynchronize(); });
  });
  return result == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ? *result : CUDA_SUCCESS;
}

// PyTorch's cudaMallocAsync backend and TensorFlow's cuda_malloc_async use the device's current
// pool, which is the default pool unless the program set another.
uint64_t DriverDeviceApi::trim_stream_ordered_pools() {
  return trim_stream_ordered_pools_of(device_);
}

uint64_t trim_stream_ordered_pools_of(CUdevice device) {
  const support::DeferredCancellation deferred;
  uint64_t released = 0;
  for_each_stream_ordered_pool(device, [&](CUmemoryPool pool) { released += trim(pool); });
  return released;
}

uint64_t stream_ordered_reserved_bytes(CUdevice device) {
  const support::DeferredCancellation deferred;
  uint64_t reserved = 0;
  for_each_stream_ordered_pool(device,
                               [&](CUmemoryPool pool) { reserved += reserved_bytes(pool); });
  return reserved;
}

bool DriverDeviceApi::push_current() {
  const support::DeferredCancellation deferred;
  return real::cuCtxPushCurrent_v2(context_) == CUDA_SUCCESS;
}

void DriverDeviceApi::pop_current() {
  const support::DeferredCancellation deferred;
  CUcontext popped = nullptr;
  real::cuCtxPopCurrent_v2(&popped);
}

}  // namespace vramshim::runtime
