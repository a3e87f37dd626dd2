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
//
// Streams follow CUDA's ordering: the legacy stream (CU_STREAM_LEGACY or 0) waits for earlier work
// of every live blocking stream, and every blocking stream waits for earlier legacy work. A stream
// is blocking unless declared non-blocking — CU_STREAM_PER_THREAD and any handle the pool never
// heard of included. Each piece of work knows what it is ordered after; finishing work finishes
// what it was ordered after too. Work queued on a block while an earlier, unfinished write to it is
// not ordered before the new work is a race: conflicts() counts them.
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
    uint64_t wait_event = 0;
    uint64_t destroy_event = 0;
    uint64_t synchronize_context = 0;
    uint64_t synchronize_other_context = 0;
    uint64_t trim = 0;
    uint64_t push = 0;  // successful ones
    uint64_t pop = 0;
    // Calls a capture forbids (event record/query/synchronize, context synchronize, free) made
    // while the capture state given at construction was active.
    uint64_t during_capture = 0;
    uint64_t conflicts = 0;  // see queue_work
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
  // Refused while the capture state given at construction is active.
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

  // Declares `stream` non-blocking (created with CU_STREAM_NON_BLOCKING).
  void make_non_blocking(CUstream stream);
  // Declares `stream` a stream of `other`, another context of the device: ordered against no
  // stream of this context, finished by synchronize_other_context(other) and not by
  // synchronize_context().
  void make_other_context_stream(CUstream stream, CUcontext other);
  // The stream is destroyed: its queued work still runs, but the legacy stream no longer waits
  // for it.
  void destroy_stream(CUstream stream);
  // Queues unfinished work on `stream` that writes [ptr, ptr + bytes) (bytes 0: touches nothing).
  // Counts a conflict when an unfinished earlier write to any of those bytes, on another stream,
  // is not ordered before this work.
  void queue_work(CUstream stream, CUdeviceptr ptr = 0, size_t bytes = 0);
  // Everything queued so far on `stream` (or on every stream) completes.
  void finish_work(CUstream stream);
  void finish_all_work();
  // Whether unfinished queued work writes any byte of [ptr, ptr + bytes).
  bool has_unfinished_write(CUdeviceptr ptr, size_t bytes) const;

  void set_capacity(uint64_t bytes);
  // Context teardown: the driver frees every live allocation.
  void destroy_context();
  // Whether push_current fails (a context destroyed without the pool hearing of it).
  void set_push_fails(bool fails);

  Counters counters() const;
  uint64_t live_bytes() const;
  uint64_t freed_bytes() const;  // total handed back through free()
  size_t live_event_count() const;
  std::optional<Allocation> allocation_containing(CUdeviceptr ptr) const;

 private:
  // For each stream, how much of its work a piece of work is ordered after (itself included).
  using Clock = std::map<CUstream, uint64_t>;
  struct QueuedWrite {
    CUstream stream;
    uint64_t sequence;
    CUdeviceptr ptr;
    size_t bytes;
  };
  struct EventState {
    CUstream stream = nullptr;
    Clock after;  // complete once all of this has finished
  };
  struct StreamState {
    uint64_t queued = 0;
    uint64_t finished = 0;
    bool non_blocking = false;
    bool destroyed = false;
    CUcontext other_context = nullptr;  // null: a stream of this context
    Clock tail;                         // what its last queued work is ordered after
  };

  static bool is_legacy(CUstream stream) { return stream == nullptr || stream == CU_STREAM_LEGACY; }
  // Puts a point in `stream`'s order (one more piece of work if `counts_as_work`); returns what it
  // is ordered after.
  const Clock& order(CUstream stream, bool counts_as_work);
  void finish(const Clock& clock);
  void note_capture_violation();
  void forget_finished_writes();

  const CaptureState* capture_;
  mutable std::mutex mutex_;
  uint64_t capacity_;
  uint64_t live_bytes_ = 0;
  bool push_fails_ = false;
  uint64_t freed_bytes_ = 0;
  CUdeviceptr next_ptr_;
  std::map<CUdeviceptr, size_t> allocations_;
  std::unordered_map<CUstream, StreamState> streams_;
  std::unordered_map<CUevent, EventState> events_;
  uintptr_t next_event_ = 0x1000;
  std::vector<QueuedWrite> writes_;
  Counters counters_;
};

// Every call passed on to a FakeDeviceApi that outlives it: a pool's own DeviceApi (the registry
// owns its pools' DeviceApis), or the base of one that changes some calls.
class ForwardingDeviceApi : public DeviceApi {
 public:
  explicit ForwardingDeviceApi(FakeDeviceApi& fake) : fake_(fake) {}
  CUresult allocate(size_t bytes, CUdeviceptr* ptr) override { return fake_.allocate(bytes, ptr); }
  CUresult free(CUdeviceptr ptr) override { return fake_.free(ptr); }
  CUresult free_segment(CUdeviceptr ptr) override { return fake_.free_segment(ptr); }
  CUresult create_event(CUevent* event) override { return fake_.create_event(event); }
  CUresult record_event(CUevent event, CUstream stream) override {
    return fake_.record_event(event, stream);
  }
  CUresult query_event(CUevent event) override { return fake_.query_event(event); }
  CUresult synchronize_event(CUevent event) override { return fake_.synchronize_event(event); }
  CUresult destroy_event(CUevent event) override { return fake_.destroy_event(event); }
  CUresult wait_event(CUstream stream, CUevent event) override {
    return fake_.wait_event(stream, event);
  }
  CUresult synchronize_context() override { return fake_.synchronize_context(); }
  CUresult synchronize_other_context(CUcontext other) override {
    return fake_.synchronize_other_context(other);
  }
  uint64_t trim_stream_ordered_pools() override { return fake_.trim_stream_ordered_pools(); }
  bool push_current() override { return fake_.push_current(); }
  void pop_current() override { fake_.pop_current(); }

 protected:
  FakeDeviceApi& fake() { return fake_; }

 private:
  FakeDeviceApi& fake_;
};

}  // namespace vramshim::pool::testing
