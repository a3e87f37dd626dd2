// The streams of one context that decide how freed blocks become reusable (docs/design.md, "The
// reuse rule").
#pragma once

#include <cuda.h>

#include <utility>
#include <vector>

namespace vramshim::pool {

// How a freed block becomes reusable (docs/design.md, "The reuse rule"). Whatever the mode, a
// fence covers every stream that can reach the context's memory, also those the pool never saw
// created: the legacy stream waits for all earlier work of every blocking stream — streams made
// without CU_STREAM_NON_BLOCKING and every thread's per-thread default stream — and all later work
// of those streams waits for it. So a marker recorded on the legacy stream after a free orders all
// later blocking work of the context after the work queued before the free; non-blocking streams,
// and every stream of another context or device, need more.
enum class ReuseMode {
  // No non-blocking stream: the block is reusable once a marker is recorded on the legacy stream.
  kLegacyOrdered,
  // Non-blocking streams exist, destroyed streams still run queued work, or another device has a
  // live context (its streams reach this memory, unordered by any marker): the block waits until
  // events recorded on the legacy stream and on each non-blocking stream have completed.
  kEventFence,
  // A stream exists that the pool cannot record its events on (a green context's stream, one made
  // through an entry point the shim does not hook, or any stream of another context of the device,
  // which reaches this context's memory too), or one destroyed within a capture may still run work
  // (until the next synchronize): the block waits for a synchronize of the context and of each
  // other context of the device.
  kContextSynchronize,
};

// The streams that reach one context's memory and that its legacy stream does not order, as the
// hooks report them.
class StreamSet {
 public:
  // A stream created with `flags`; only non-blocking ones are kept (special handles are ignored).
  void add(CUstream stream, unsigned flags);
  void remove(CUstream stream);
  void mark_unfenceable_stream_seen() { unfenceable_ = true; }
  // A stream was destroyed while no event could be recorded on it (within a capture): its queued
  // work is waited for by the next synchronize of the context, and until then only by one.
  void mark_undrained_stream_destroyed() { undrained_ = true; }
  // A synchronize of the context waited for every destroyed stream's work.
  void after_synchronize() { undrained_ = false; }
  // The device's other live contexts (none: this is its only one).
  void set_other_contexts(std::vector<CUcontext> contexts) {
    other_contexts_ = std::move(contexts);
  }
  // Another device has a live context in the process: its streams reach this memory (peer
  // copies, UVA copies, peer kernels) and no marker of this context orders them.
  void set_other_devices(bool other_devices) { other_devices_ = other_devices; }
  void clear();

  // `draining`: destroyed streams still run work queued before their destruction.
  ReuseMode mode(bool draining) const;
  // The non-blocking streams a fence records on, besides the legacy stream.
  const std::vector<CUstream>& non_blocking() const { return non_blocking_; }
  // The contexts a synchronize covers besides the pool's own.
  const std::vector<CUcontext>& other_contexts() const { return other_contexts_; }

 private:
  static bool is_special(CUstream stream);

  std::vector<CUstream> non_blocking_;
  std::vector<CUcontext> other_contexts_;
  bool unfenceable_ = false;
  bool undrained_ = false;
  bool other_devices_ = false;
};

}  // namespace vramshim::pool
