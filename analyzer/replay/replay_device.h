// The CUDA context a trace is replayed on: in-process device memory and no GPU work.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>

#include "shim/pool/device_api.h"

namespace vramshim::analyzer {

// A DeviceApi for replaying a trace through a CachingPool in-process. Memory costs nothing to
// allocate; no kernel ever runs, so every event the pool records has completed and its fences
// never wait. Segments are spaced apart, never adjacent, as a driver's may be.
class ReplayDevice : public pool::DeviceApi {
 public:
  // What the device holds: 2^50 bytes, as the trace readers bound a device's live bytes
  // (torch_snapshot.cc). A pool that would reserve more releases its cache and retries, as on a
  // full GPU; without a bound, frees and ever-larger allocations took reserved bytes past 2^64.
  static constexpr uint64_t kCapacityBytes = uint64_t{1} << 50;

  CUresult allocate(size_t bytes, CUdeviceptr* ptr) override;
  CUresult free(CUdeviceptr ptr) override;
  CUresult free_segment(CUdeviceptr ptr) override { return free(ptr); }  // no captures in a replay
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
  // The first address from which `span` addresses hold no segment (0: none, past a wrap).
  uint64_t room_for(uint64_t span) const;

  // Segments lie in [kFirstAddress, kAddressEnd); past the end, in the first gap from the start
  // again: a trace allocating and freeing large blocks over and over wrapped the addresses.
  static constexpr uint64_t kFirstAddress = uint64_t{0x7f} << 40;
  static constexpr uint64_t kAddressEnd = uint64_t{1} << 62;

  std::map<uint64_t, uint64_t> segments_;
  uint64_t reserved_bytes_ = 0;
  uint64_t next_address_ = kFirstAddress;
  uintptr_t next_event_ = 1;
};

}  // namespace vramshim::analyzer
