// Hook bodies for memory the driver serves itself (stream-ordered, managed, pinned host, VMM,
// legacy): the call goes to the driver unchanged, and the runtime attributes what it returned.
#pragma once

#include <cstdint>
#include <utility>

#include "shim/attribution/allocation_kind.h"
#include "shim/intercept/cuda_api.h"
#include "shim/runtime/runtime.h"

namespace vramshim::runtime {

// VMM handles share the tracker's key space with addresses; user-space addresses never set bit 63.
inline uint64_t vmm_key(CUmemGenericAllocationHandle handle) {
  return static_cast<uint64_t>(handle) | (uint64_t{1} << 63);
}

inline uint64_t address_key(CUdeviceptr ptr) { return static_cast<uint64_t>(ptr); }
inline uint64_t address_key(CUdeviceptr_v1 ptr) { return static_cast<uint64_t>(ptr); }
inline uint64_t address_key(void* ptr) { return reinterpret_cast<uintptr_t>(ptr); }

// What an allocation call returned, as a tracker key (CUdeviceptr and VMM handles share one type).
inline uint64_t tracking_key(CUdeviceptr value, attribution::AllocationKind kind) {
  return kind == attribution::AllocationKind::kVmm ? vmm_key(value) : address_key(value);
}
inline uint64_t tracking_key(CUdeviceptr_v1 value, attribution::AllocationKind) {
  return address_key(value);
}
inline uint64_t tracking_key(void* value, attribution::AllocationKind) {
  return address_key(value);
}

// Runs `call` (the real driver function), once more if it ran out of device memory while the
// pools cached some, which they hand back first; on success attributes `*out` as `bytes` of `kind`
// on `device` (Runtime::kCurrentDevice: the current context's).
template <typename Out, typename Call>
CUresult allocate_tracked(Out* out, size_t bytes, attribution::AllocationKind kind, CUstream stream,
                          Call&& call, int device = Runtime::kCurrentDevice) {
  CUresult result = call();
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    Runtime* runtime = Runtime::get();
    if (runtime != nullptr && runtime->release_pools_for(kind, -1, nullptr, device)) {
      result = call();
    }
  }
  if (result == CUDA_SUCCESS && out != nullptr) {
    if (Runtime* runtime = Runtime::get()) {
      runtime->track(tracking_key(*out, kind), bytes, kind, stream, device);
    }
  } else if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    if (Runtime* runtime = Runtime::get()) runtime->on_out_of_memory_here(bytes, kind, device);
  }
  return result;
}

// allocate_tracked for device memory the driver serves itself (stream-ordered, VMM on a device):
// the call counts against VRAMSHIM_LIMIT, charged first so that threads allocating at once cannot
// pass the cap together, and the charge lasts until the driver freed the allocation (free_tracked,
// Runtime::settle_free).
template <typename Out, typename Call>
CUresult allocate_charged(Out* out, size_t bytes, attribution::AllocationKind kind, CUstream stream,
                          Call&& call, int device) {
  Runtime* runtime = Runtime::get();
  pool::DirectCharges::Charge charge;
  if (runtime != nullptr && out != nullptr &&
      !runtime->charge_direct(bytes, kind, device, &charge)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const CUresult result =
      allocate_tracked(out, bytes, kind, stream, std::forward<Call>(call), device);
  if (charge.limit != nullptr) {
    runtime->settle_direct(charge, result == CUDA_SUCCESS, tracking_key(*out, kind));
  }
  return result;
}

// Runs `call` (the real driver function) freeing `key`: its attribution and its limit's charge
// end when the driver freed it, and stay when it refused.
template <typename Call>
CUresult free_tracked(uint64_t key, Call&& call) {
  Runtime* runtime = Runtime::get();
  if (runtime == nullptr) return call();
  const Runtime::PendingFree pending = runtime->untrack(key);
  const CUresult result = call();
  runtime->settle_free(pending, result == CUDA_SUCCESS, key);
  return result;
}

}  // namespace vramshim::runtime
