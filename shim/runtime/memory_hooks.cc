// Allocation and free hooks. Device memory (cuMemAlloc_v2, cuMemAllocPitch_v2) comes from the pool
// of the current context; every other kind passes through to the driver and is attributed, and
// device memory among them (stream-ordered, VMM on a device) counts against VRAMSHIM_LIMIT.
#include <utility>
#include <vector>

#include "shim/intercept/driver_functions.h"
#include "shim/intercept/hook_declarations.h"
#include "shim/runtime/capture_probe.h"
#include "shim/runtime/runtime.h"
#include "shim/runtime/tracked_call.h"
#include "shim/runtime/with_context.h"
#include "shim/support/deferred_cancellation.h"

namespace vramshim::hooks {
namespace {

using attribution::AllocationKind;
using runtime::address_key;
using runtime::allocate_charged;
using runtime::allocate_tracked;
using runtime::free_tracked;
using runtime::Runtime;
using support::DeferredCancellation;

// The pitch the pool hands out: every row starts on a 512-byte boundary, which satisfies any
// texture or coalescing alignment a device reports.
constexpr size_t kPitchAlignment = 512;

// A stream-ordered free of memory the pool handed out (cudaFreeAsync of cudaMalloc memory) is the
// pool's: the driver would free the whole segment under the blocks beside it. The pool's fences
// cover it as they cover cuMemFree: the work that may use the block was queued before the call.
// With the pool off, the pool's live allocation is freed by cuMemFree, so that its figures and
// its limit's charge go with it.
template <typename Call>
CUresult free_async(CUdeviceptr dptr, Call&& call) {
  Runtime* runtime = Runtime::get();
  if (runtime != nullptr && dptr != 0 && runtime->pools().find_holder(dptr) != nullptr) {
    return runtime->free(dptr);
  }
  return free_tracked(address_key(dptr), std::forward<Call>(call));
}

// The device a stream's work runs on, its context's: Runtime::kCurrentDevice for the legacy and
// per-thread handles, a stream of the current context, or when the driver does not say.
int device_of_stream(CUstream stream) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
    return Runtime::kCurrentDevice;
  }
  CUcontext context = nullptr;
  CUcontext current = nullptr;
  if (real::cuStreamGetCtx(stream, &context) != CUDA_SUCCESS || context == nullptr ||
      (real::cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context)) {
    return Runtime::kCurrentDevice;
  }
  const auto current_device = [] {
    CUdevice device = 0;
    return real::cuCtxGetDevice(&device) == CUDA_SUCCESS ? static_cast<int>(device)
                                                         : Runtime::kCurrentDevice;
  };
  return runtime::with_context(context, current_device).value_or(Runtime::kCurrentDevice);
}

}  // namespace

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  Runtime* runtime = Runtime::get();
  if (runtime == nullptr || dptr == nullptr || bytesize == 0) {
    const DeferredCancellation deferred;
    return real::cuMemAlloc_v2(dptr, bytesize);  // the driver reports its own errors
  }
  if (const CUresult refused = runtime::refused_by_capture(runtime->capture());
      refused != CUDA_SUCCESS) {
    return refused;
  }
  return runtime->allocate(dptr, bytesize, AllocationKind::kDevice);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  Runtime* runtime = Runtime::get();
  const bool valid_element =
      ElementSizeBytes == 4 || ElementSizeBytes == 8 || ElementSizeBytes == 16;
  const size_t pitch = (WidthInBytes + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  if (runtime == nullptr || dptr == nullptr || pPitch == nullptr || !valid_element ||
      WidthInBytes == 0 || Height == 0 || pitch < WidthInBytes || Height > SIZE_MAX / pitch) {
    const DeferredCancellation deferred;
    return real::cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
  }
  if (const CUresult refused = runtime::refused_by_capture(runtime->capture());
      refused != CUDA_SUCCESS) {
    return refused;
  }
  const CUresult result = runtime->allocate(dptr, pitch * Height, AllocationKind::kPitched);
  if (result == CUDA_SUCCESS) *pPitch = pitch;
  return result;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  Runtime* runtime = Runtime::get();
  if (runtime == nullptr) {
    const DeferredCancellation deferred;
    return real::cuMemFree_v2(dptr);
  }
  // The driver refuses a free of memory it serves itself.
  if (dptr != 0 && runtime->capture().active() && runtime->pools().in_some_segment(dptr)) {
    if (const CUresult refused = runtime::refused_by_capture(runtime->capture());
        refused != CUDA_SUCCESS) {
      return refused;
    }
  }
  return runtime->free(dptr);
}

// Legacy 32-bit entry points: a pooled 64-bit address cannot be returned through them.
CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  return allocate_tracked(dptr, bytesize, AllocationKind::kDevice, nullptr,
                          [&] { return real::cuMemAlloc(dptr, bytesize); });
}

CUresult cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pPitch, unsigned int WidthInBytes,
                         unsigned int Height, unsigned int ElementSizeBytes) {
  const CUresult result =
      real::cuMemAllocPitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
  if (result == CUDA_SUCCESS && dptr != nullptr && pPitch != nullptr) {
    if (Runtime* runtime = Runtime::get()) {
      runtime->track(address_key(*dptr), size_t{*pPitch} * Height, AllocationKind::kPitched,
                     nullptr);
    }
  }
  return result;
}

CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  return free_tracked(address_key(dptr), [&] { return real::cuMemFree(dptr); });
}

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return allocate_charged(
      dptr, bytesize, AllocationKind::kAsync, hStream,
      [&] { return real::cuMemAllocAsync(dptr, bytesize, hStream); }, device_of_stream(hStream));
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return allocate_charged(
      dptr, bytesize, AllocationKind::kAsync, hStream,
      [&] { return real::cuMemAllocAsync_ptsz(dptr, bytesize, hStream); },
      device_of_stream(hStream));
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
  // The pool's device may be another than the stream's; the stream's is the nearest known here.
  return allocate_charged(
      dptr, bytesize, AllocationKind::kAsync, hStream,
      [&] { return real::cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream); },
      device_of_stream(hStream));
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  return allocate_charged(
      dptr, bytesize, AllocationKind::kAsync, hStream,
      [&] { return real::cuMemAllocFromPoolAsync_ptsz(dptr, bytesize, pool, hStream); },
      device_of_stream(hStream));
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, [&] { return real::cuMemFreeAsync(dptr, hStream); });
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, [&] { return real::cuMemFreeAsync_ptsz(dptr, hStream); });
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  return allocate_tracked(dptr, bytesize, AllocationKind::kManaged, nullptr,
                          [&] { return real::cuMemAllocManaged(dptr, bytesize, flags); });
}

CUresult cuMemAllocHost(void** pp, unsigned int bytesize) {
  return allocate_tracked(pp, bytesize, AllocationKind::kHost, nullptr,
                          [&] { return real::cuMemAllocHost(pp, bytesize); });
}

CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  return allocate_tracked(pp, bytesize, AllocationKind::kHost, nullptr,
                          [&] { return real::cuMemAllocHost_v2(pp, bytesize); });
}

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  return allocate_tracked(pp, bytesize, AllocationKind::kHost, nullptr,
                          [&] { return real::cuMemHostAlloc(pp, bytesize, Flags); });
}

CUresult cuMemFreeHost(void* p) {
  return free_tracked(address_key(p), [&] { return real::cuMemFreeHost(p); });
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  auto create = [&] { return real::cuMemCreate(handle, size, prop, flags); };
  if (prop == nullptr || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    // Host memory (CUDA 12.2's host-located VMM), or a call the driver refuses: no device's.
    return allocate_tracked(handle, size, AllocationKind::kVmm, nullptr, create);
  }
  return allocate_charged(handle, size, AllocationKind::kVmm, nullptr, create, prop->location.id);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  Runtime* runtime = Runtime::get();
  if (runtime == nullptr || !runtime->vmm_mappings().is_mapped(handle)) {
    return free_tracked(runtime::vmm_key(handle), [&] { return real::cuMemRelease(handle); });
  }
  // Mapped: the memory stays until the last unmap, which ends the allocation.
  const CUresult result = real::cuMemRelease(handle);
  if (result == CUDA_SUCCESS && runtime->vmm_mappings().after_release(handle)) {
    const uint64_t key = runtime::vmm_key(handle);
    runtime->settle_free(runtime->untrack(key), /*freed=*/true, key);
  }
  return result;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  const CUresult result = real::cuMemMap(ptr, size, offset, handle, flags);
  if (result == CUDA_SUCCESS) {
    if (Runtime* runtime = Runtime::get()) runtime->vmm_mappings().on_mapped(ptr, size, handle);
  }
  return result;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  Runtime* runtime = Runtime::get();
  if (runtime == nullptr) return real::cuMemUnmap(ptr, size);
  // The allocations this unmap frees end before the driver may hand their handles out again;
  // those another thread released meanwhile, after it.
  const runtime::VmmMappings::Handles freed = runtime->vmm_mappings().freed_by_unmap(ptr, size);
  std::vector<Runtime::PendingFree> pending;
  pending.reserve(freed.size());  // out of host memory: the hook fails before anything is taken
  for (CUmemGenericAllocationHandle handle : freed) {
    pending.push_back(runtime->untrack(runtime::vmm_key(handle)));
  }
  const CUresult result = real::cuMemUnmap(ptr, size);
  for (size_t i = 0; i < freed.size(); ++i) {
    runtime->settle_free(pending[i], result == CUDA_SUCCESS, runtime::vmm_key(freed[i]));
  }
  if (result == CUDA_SUCCESS) {
    for (CUmemGenericAllocationHandle handle :
         runtime->vmm_mappings().on_unmapped(ptr, size, freed)) {
      const uint64_t key = runtime::vmm_key(handle);
      runtime->settle_free(runtime->untrack(key), /*freed=*/true, key);
    }
  }
  return result;
}

}  // namespace vramshim::hooks
