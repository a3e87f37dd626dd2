#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "shim/pool/capture_state.h"
#include "shim/pool/device_api.h"

namespace vramshim::pool::testing {

// An in-process stand-in for one CUDA context: device memory with a capacity, streams whose queued
// work completes when the test says so, events recorded on them, and a count of every call.
class FakeDeviceApi : public DeviceApi {
 public:
  struct Counters {
    uint64_t allocate = 0;
    uint64_t free = 0;
    uint64_t failed_allocate = 0;
    uint64_t bad_free = 0;  // a pointer that is not a live allocation: a double free
    uint64_t create_event = 0;
    uint64_t record_event = 0;
    uint64_t query_event = 0;
    uint64_t synchronize_event = 0;
    uint64_t destroy_event = 0;
    uint64_t synchronize_context = 0;
    uint64_t trim = 0;
    uint64_t push = 0;
    uint64_t pop = 0;
    // Calls a capture forbids (event record/query/synchronize, context synchronize, free) made
    // while the capture state given at construction was active.
    uint64_t during_capture = 0;
  };
  struct Allocation {
    CUdeviceptr ptr;
    size_t size;
  };

  explicit FakeDeviceApi(uint64_t capacity_bytes = uint64_t{80} << 30,
                         const CaptureState* capture = nullptr);
  ~FakeDeviceApi() override;

  CUresult allocate(size_t bytes, CUdeviceptr* ptr) override;
  CUresult free(CUdeviceptr ptr) override;
  CUresult create_event(CUevent* event) override;
  CUresult record_event(CUevent event, CUstream stream) override;
  CUresult query_event(CUevent event) override;
  CUresult synchronize_event(CUevent event) override;
  CUresult destroy_event(CUevent event) override;
  CUresult synchronize_context() override;
  uint64_t trim_stream_ordered_pools() override;
  bool push_current() override;
  void pop_current() override;

  // Queues unfinished work on `stream` that writes [ptr, ptr + bytes) (bytes 0: touches nothing).
  void queue_work(CUstream stream, CUdeviceptr ptr = 0, size_t bytes = 0);
  // Everything queued so far on `stream` (or on every stream) completes.
  void finish_work(CUstream stream);
  void finish_all_work();
  // Whether unfinished queued work writes any byte of [ptr, ptr + bytes).
  bool has_unfinished_write(CUdeviceptr ptr, size_t bytes) const;

  void set_capacity(uint64_t bytes);
  // Context teardown: the driver frees every live allocation.
  void destroy_context();

  Counters counters() const;
  uint64_t live_bytes() const;
  uint64_t freed_bytes() const;  // total handed back through free()
  size_t live_allocation_count() const;
  size_t live_event_count() const;
  std::optional<Allocation> allocation_containing(CUdeviceptr ptr) const;

 private:
  struct QueuedWrite {
    CUstream stream;
    uint64_t sequence;
    CUdeviceptr ptr;
    size_t bytes;
  };
  struct EventState {
    CUstream stream = nullptr;
    uint64_t target = 0;  // complete once the stream has finished this much work
  };
  struct StreamState {
    uint64_t queued = 0;
    uint64_t finished = 0;
  };

  void note_capture_violation();
  void forget_finished_writes();

  const CaptureState* capture_;
  mutable std::mutex mutex_;
  uint64_t capacity_;
  uint64_t live_bytes_ = 0;
  uint64_t freed_bytes_ = 0;
  CUdeviceptr next_ptr_;
  std::map<CUdeviceptr, size_t> allocations_;
  std::unordered_map<CUstream, StreamState> streams_;
  std::unordered_map<CUevent, EventState> events_;
  uintptr_t next_event_ = 0x1000;
  std::vector<QueuedWrite> writes_;
  Counters counters_;
};

}  // namespace vramshim::pool::testing
