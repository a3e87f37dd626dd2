// The CUDA context a trace is replayed on: in-process device memory and no GPU work.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>

#include "shim/pool/device_api.h"

namespace vramshim::analyzer {

// A DeviceApi for replaying a trace through a CachingPool in-process. Memory has no capacity and
// costs nothing to allocate; no kernel ever runs, so every event the pool records has completed
// and its fences never wait. Segments are spaced apart, never adjacent, as a driver's may be.
class ReplayDevice : public pool::DeviceApi {
 public:
  CUresult allocate(size_t bytes, CUdeviceptr* ptr) override;
  CUresult free(CUdeviceptr ptr) override;
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

  // Live driver allocations: base address → bytes.
  const std::map<uint64_t, uint64_t>& segments() const { return segments_; }

 private:
  std::map<uint64_t, uint64_t> segments_;
  uint64_t next_address_ = uint64_t{0x7f} << 40;
  uintptr_t next_event_ = 1;
};

}  // namespace vramshim::analyzer
