// Whether a stream capture runs anywhere in the process, so that pools make no call that would
// invalidate it.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>

#include "shim/support/adaptive_mutex.h"

namespace vramshim::pool {

// Whether a stream capture is running somewhere in the process. The hooks count captures begun and
// ended (cuStreamBeginCapture / cuStreamEndCapture and their variants), and those the driver ends
// with their stream or context (destroyed, reset); pools read it.
//
// While it is active a pool makes no call that could invalidate or join a capture: it records no
// fence events (a fence records on every live stream, the capturing one included, and on the legacy
// stream, which a global-mode capture forbids), queries or synchronizes nothing, and frees nothing
// to the driver. It still serves allocations from blocks that are already ready, and a request the
// cache cannot serve goes to the driver's allocate, as the caller's own call would have. The hooks
// should count captures of every mode, since fence events would be recorded into any capturing
// stream.
//
// A pool checks active() and makes its call later: a capture begun in between would see the call
// (a marker on the legacy stream invalidates a blocking stream's capture). So the driver calls a
// capture forbids go through enter_forbidden_call(), and a capture is counted before the driver
// begins it (on_capture_begin), which then waits for the calls already entered: a call either
// sees the capture and is not made, or is made before the capture begins.
class CaptureState {
 public:
  // Counts a capture about to begin, then waits for the forbidden calls in flight (a bounded
  // time: a call that waits for the device, a synchronize, was made long ago and stays harmless).
  // `stream` (CU_STREAM_PER_THREAD for a thread's per-thread stream) and its `context` name the
  // capture, so that it stops counting when they go away without cuStreamEndCapture.
  void on_capture_begin(CUstream stream, CUcontext context) {
    remember(stream, context);
    active_captures_.fetch_add(1, std::memory_order_seq_cst);
    const auto deadline = std::chrono::steady_clock::now() + kLongestWaitForCalls;
    while (calls_in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
  }
  // The driver answered the begin on_capture_begin counted (begun or refused): what the driver
  // allows threads changed then, not when it was counted (changes()).
  void after_capture_begin() { changes_.fetch_add(1, std::memory_order_release); }
  // False while a capture is active or about to begin: the call must not be made. True: make it,
  // then leave_forbidden_call().
  bool enter_forbidden_call() {
    std::atomic<int>& calls = calls_of_this_thread();
    calls.fetch_add(1, std::memory_order_seq_cst);
    if (active_captures_.load(std::memory_order_seq_cst) == 0) return true;
    calls.fetch_sub(1, std::memory_order_release);
    return false;
  }
  // On the thread that entered.
  void leave_forbidden_call() { calls_of_this_thread().fetch_sub(1, std::memory_order_release); }
  // The capture on `stream` of `context` ended, or the driver refused to begin it. (Every thread's
  // per-thread stream is CU_STREAM_PER_THREAD: its context tells them apart.)
  void on_capture_end(CUstream stream, CUcontext context) {
    if (forget({stream, context}, kStreamAndContext, /*all=*/false) == 0) {
      forget({stream, nullptr}, kStream, /*all=*/false);
    }
    uncount(1);
  }
  // `stream` was destroyed, or `context` destroyed or reset: the driver ended the captures on
  // them, which no cuStreamEndCapture will end. Returns how many it ended.
  int on_stream_gone(CUstream stream) {
    return uncount(forget({stream, nullptr}, kStream, /*all=*/true));
  }
  int on_context_gone(CUcontext context) {
    return uncount(forget({nullptr, context}, kContext, /*all=*/true));
  }
  bool active() const { return active_captures_.load(std::memory_order_acquire) > 0; }
  // How many times the driver answered a begin, or a capture ended, so far: what the driver allows
  // a thread while captures run can only change with it (or with the thread's own capture mode).
  uint64_t changes() const { return changes_.load(std::memory_order_acquire); }
  // In a forked child, whose only thread is this one (the lock may have been held at the fork).
  void reset() {
    active_captures_.store(0, std::memory_order_release);
    // Calls other threads had entered at the fork: the child has none of those threads.
    for (CallShard& shard : calls_in_flight_) shard.calls.store(0, std::memory_order_release);
    records_lock_.unlock();
    recorded_ = 0;
  }

 private:
  static constexpr std::chrono::milliseconds kLongestWaitForCalls{200};
  // Captures at once that are named (a program runs a few; each is 16 bytes); past that, one
  // counts until its own cuStreamEndCapture.
  static constexpr size_t kMaxRecords = 4096;

  struct Record {
    CUstream stream;
    CUcontext context;
  };
  enum Match { kStream, kContext, kStreamAndContext };

  void remember(CUstream stream, CUcontext context);
  // Drops the records that match `record` by `match`: the first one, or `all`. Returns how many.
  int forget(Record record, Match match, bool all);
  // Uncounts `captures` (never below none); returns them.
  int uncount(int captures) {
    int current = active_captures_.load(std::memory_order_acquire);
    while (current > 0 &&
           !active_captures_.compare_exchange_weak(current, current - std::min(current, captures),
                                                   std::memory_order_acq_rel)) {
    }
    if (captures > 0) changes_.fetch_add(1, std::memory_order_release);
    return captures;
  }

  // The calls in flight, counted by each thread in one of these shards (by the thread's order of
  // arrival), each on a cache line of its own: a count every thread wrote was a line that pool
  // fences on different devices took from each other, and beside active_captures_, which every
  // free reads, it made each of them miss too. A begin sums them (enter_forbidden_call and
  // on_capture_begin write one and read the other in seq_cst order, so either the call sees the
  // capture or the capture sees the call).
  struct alignas(64) CallShard {
    std::atomic<int> calls{0};
  };
  static constexpr size_t kCallShards = 16;
  std::atomic<int>& calls_of_this_thread();
  int calls_in_flight() const {
    int calls = 0;
    for (const CallShard& shard : calls_in_flight_) {
      calls += shard.calls.load(std::memory_order_seq_cst);
    }
    return calls;
  }

  alignas(64) std::atomic<int> active_captures_{0};
  std::atomic<uint64_t> changes_{0};
  std::array<CallShard, kCallShards> calls_in_flight_;
  // A fork may copy it held: the child's reset() frees it.
  support::AdaptiveMutex records_lock_;
  std::array<Record, kMaxRecords> records_{};
  size_t recorded_ = 0;
};

}  // namespace vramshim::pool
