#include "shim/pool/stream_set.h"

#include <algorithm>

namespace vramshim::pool {

bool StreamSet::is_special(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

void StreamSet::add(CUstream stream, unsigned flags) {
  if (is_special(stream)) return;
  const auto it = std::find(streams_.begin(), streams_.end(), stream);
  if (it != streams_.end()) {
    // A handle the driver reuses after a destroy we did not see: it is the new stream now.
    flags_[it - streams_.begin()] = flags;
    return;
  }
  streams_.push_back(stream);
  flags_.push_back(flags);
}

void StreamSet::remove(CUstream stream) {
  const auto it = std::find(streams_.begin(), streams_.end(), stream);
  if (it == streams_.end()) return;
  flags_.erase(flags_.begin() + (it - streams_.begin()));
  streams_.erase(it);
}

void StreamSet::clear() {
  streams_.clear();
  flags_.clear();
  per_thread_used_ = false;
}

ReuseMode StreamSet::mode() const {
  if (per_thread_used_) return ReuseMode::kContextSynchronize;
  size_t blocking = 0;
  for (unsigned flags : flags_) {
    if (flags & CU_STREAM_NON_BLOCKING) return ReuseMode::kEventFence;
    ++blocking;
  }
  return blocking <= 1 ? ReuseMode::kImmediate : ReuseMode::kEventFence;
}

}  // namespace vramshim::pool
