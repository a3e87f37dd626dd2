#pragma once

#include <cuda.h>

#include <vector>

namespace vramshim::pool {

// How a freed block may become reusable, given the streams a context has.
enum class ReuseMode {
  // Only the legacy stream and at most one blocking stream: those are mutually ordered, so every
  // later
  // use of the memory is ordered after the work that touched it before the free.
  kImmediate,
  // Other streams exist: the block waits for events recorded on every live stream after the free.
  kEventFence,
  // A per-thread default stream is in use, which the pool cannot record on for every thread: the
  // block waits for a context synchronize.
  kContextSynchronize,
};

// The streams of one context, as the hooks report them (the legacy stream is implicit).
class StreamSet {
 public:
  // Stream handles of the created streams; special handles (NULL, legacy, per-thread) are ignored.
  void add(CUstream stream, unsigned flags);
  void remove(CUstream stream);
  void mark_per_thread_used() { per_thread_used_ = true; }
  void clear();

  ReuseMode mode() const;
  // The streams a fence records on, besides the legacy stream.
  const std::vector<CUstream>& streams() const { return streams_; }

 private:
  static bool is_special(CUstream stream);

  std::vector<CUstream> streams_;
  std::vector<unsigned> flags_;  // parallel to streams_
  bool per_thread_used_ = false;
};

}  // namespace vramshim::pool
