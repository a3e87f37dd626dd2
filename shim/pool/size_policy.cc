#include "shim/pool/size_policy.h"

namespace vramshim::pool {

size_t SizePolicy::segment_size(size_t rounded) const {
  if (!split_blocks_) return rounded;
  if (rounded <= kSmallRequestMax) return kSmallSegment;
  if (rounded < kMidRequestMax) return kMidSegment;
  return (rounded + kLargeSegmentGranularity - 1) & ~(kLargeSegmentGranularity - 1);
}

bool SizePolicy::can_serve(size_t block_size, size_t rounded) const {
  if (block_size < rounded) return false;
  if (split_blocks_) return true;
  // Unsplit blocks may be oversized by an eighth of the request, at most 1 MiB.
  const size_t allowance = rounded / 8 < kMaxOversize ? rounded / 8 : kMaxOversize;
  return block_size - rounded <= allowance;
}

bool SizePolicy::should_split(bool small, size_t block_size, size_t rounded, Fit fit) const {
  if (!split_blocks_) return false;
  const size_t remaining = block_size - rounded;
  if (!small) return remaining > kMaxOversize;
  if (remaining < kGranularity) return false;
  return fit == Fit::kExact || remaining > rounded / kSmallSlackDivisor;
}

}  // namespace vramshim::pool
