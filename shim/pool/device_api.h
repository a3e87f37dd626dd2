// The driver calls a pool needs, behind an interface: the runtime implements it with the real
// driver, unit tests with an in-process fake.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace vramshim::pool {

// What one pool needs from the driver, for one CUDA context. The runtime implements it with the
// real driver entry points (never the shim's own hooks, which would re-enter the pool); unit tests
// implement it in-process. Calls mirror the driver calls named on each method and return the
// driver's CUresult. The legacy default stream is passed as CU_STREAM_LEGACY.
class DeviceApi {
 public:
  virtual ~DeviceApi() = default;

  // cuMemAlloc_v2.
  virtual CUresult allocate(size_t bytes, CUdeviceptr* ptr) = 0;
  // cuMemFree_v2.
  virtual CUresult free(CUdeviceptr ptr) = 0;
  // cuMemFree_v2 of a segment the pool hands back of its own accord (not the program's free):
  // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and nothing freed, while a capture is active or about
  // to begin, as the free would invalidate it (CaptureState::enter_forbidden_call).
  virtual CUresult free_segment(CUdeviceptr ptr) = 0;
  // cuEventCreate with CU_EVENT_DISABLE_TIMING.
  virtual CUresult create_event(CUevent* event) = 0;
  // cuEventRecord.
  virtual CUresult record_event(CUevent event, CUstream stream) = 0;
  // cuEventQuery: CUDA_SUCCESS when complete, CUDA_ERROR_NOT_READY while pending.
  virtual CUresult query_event(CUevent event) = 0;
  // cuEventSynchronize.
  virtual CUresult synchronize_event(CUevent event) = 0;
  // cuStreamWaitEvent(stream, event, 0): later work of `stream` waits for the event's work.
  virtual CUresult wait_event(CUstream stream, CUevent event) = 0;
  // cuEventDestroy_v2.
  virtual CUresult destroy_event(CUevent event) = 0;
  // cuCtxSynchronize.
  virtual CUresult synchronize_context() = 0;
  // cuCtxSynchronize of `other`, another context of the device, made current for the call
  // (cuCtxPushCurrent, cuCtxPopCurrent). CUDA_SUCCESS once no work of `other` can run any more:
  // also when it cannot be made current (destroyed) or its synchronize fails (a context with a
  // sticky error runs nothing), so that another context's failure never stops this pool.
  virtual CUresult synchronize_other_context(CUcontext other) = 0;
  // cuMemPoolTrimTo(pool, 0) on the device's stream-ordered memory pools; bytes released, 0 if
  // unknown.
  virtual uint64_t trim_stream_ordered_pools() = 0;
  // cuCtxPushCurrent / cuCtxPopCurrent of this context; push returns false when it failed (no pop
  // then).
  virtual bool push_current() = 0;
  virtual void pop_current() = 0;
};

// Makes the pool's context current on this thread for the lifetime of the scope.
class ScopedCurrentContext {
 public:
  explicit ScopedCurrentContext(DeviceApi& api) : api_(api), pushed_(api.push_current()) {}
  ~ScopedCurrentContext() {
    if (pushed_) api_.pop_current();
  }
  ScopedCurrentContext(const ScopedCurrentContext&) = delete;
  ScopedCurrentContext& operator=(const ScopedCurrentContext&) = delete;

  // False when the context could not be made current: it is gone.
  bool pushed() const { return pushed_; }

 private:
  DeviceApi& api_;
  bool pushed_;
};

}  // namespace vramshim::pool
