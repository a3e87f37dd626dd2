#include "shim/pool/stream_set.h"

#include <algorithm>

namespace vramshim::pool {

bool StreamSet::is_special(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

void StreamSet::add(CUstream stream, unsigned flags) {
  // A handle the driver reuses after a destroy we did not see is the new stream now.
  remove(stream);
  if (is_special(stream) || (flags & CU_STREAM_NON_BLOCKING) == 0) return;
  non_blocking_.push_back(stream);
}

void StreamSet::remove(CUstream stream) {
  const auto it = std::find(non_blocking_.begin(), non_blocking_.end(), stream);
  if (it != non_blocking_.end()) non_blocking_.erase(it);
}

void StreamSet::clear() {
  non_blocking_.clear();
  other_contexts_.clear();
  unfenceable_ = false;
  undrained_ = false;
  other_devices_ = false;
}

ReuseMode StreamSet::mode(bool draining) const {
  if (unfenceable_ || undrained_ || !other_contexts_.empty()) {
    return ReuseMode::kContextSynchronize;
  }
  if (draining || !non_blocking_.empty() || other_devices_) return ReuseMode::kEventFence;
  return ReuseMode::kLegacyOrdered;
}

}  // namespace vramshim::pool
