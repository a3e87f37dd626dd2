// The pool's view of one CUDA context, implemented with the real driver functions behind the hooks.
// Each call holds back the calling thread's cancellation (support::DeferredCancellation): the pool
// calls the driver between steps of its own work.
#pragma once

#include <mutex>
#include <unordered_map>

#include "shim/attribution/event_trace.h"
#include "shim/control/fatal_signals.h"
#include "shim/intercept/cuda_api.h"
#include "shim/pool/capture_state.h"
#include "shim/pool/device_api.h"

namespace vramshim::runtime {

// What the driver's stream-ordered pools of `device` (its default pool and its current one) hold,
// allocated or kept for reuse.
uint64_t stream_ordered_reserved_bytes(CUdevice device);
// Hands back what those pools keep beyond their live allocations; returns the bytes handed back.
uint64_t trim_stream_ordered_pools_of(CUdevice device);

// The calling thread's held termination signal (control::TerminationHold), in runtime.cc.
control::HeldTermination& termination_of_this_thread();

class DriverDeviceApi final : public pool::DeviceApi {
 public:
  // The pool's segments, allocated and freed, go into `trace`. The calls a capture forbids are made
  // only through `capture`'s gate (CaptureState::enter_forbidden_call).
  DriverDeviceApi(CUcontext context, CUdevice device, attribution::EventTrace& trace,
                  pool::CaptureState& capture)
      : context_(context), device_(device), trace_(trace), capture_(capture) {}

  CUresult allocate(size_t bytes, CUdeviceptr* ptr) override;
  CUresult free(CUdeviceptr ptr) override;
  CUresult free_segment(CUdeviceptr ptr) override;
  CUresult create_event(CUevent* event) override;
  CUresult record_event(CUevent event, CUstream stream) override;
  CUresult query_event(CUevent event) override;
  CUresult synchronize_event(CUevent event) override;
  CUresult destroy_event(CUevent event) override;
  CUresult wait_event(CUstream stream, CUevent event) override;
  CUresult synchronize_context() override;
  CUresult synchronize_other_context(CUcontext other) override;
  uint64_t trim_stream_ordered_pools() override;
  bool push_current() override;
  void pop_current() override;

 private:
  CUcontext context_;
  CUdevice device_;
  attribution::EventTrace& trace_;
  pool::CaptureState& capture_;
  // The size of each segment, for its segment_free event (a driver call per segment dwarfs this).
  std::mutex segments_mutex_;
  std::unordered_map<CUdeviceptr, size_t> segment_sizes_;
};

}  // namespace vramshim::runtime
