// How requests are rounded, which segment size serves them, and when a block is split.
#pragma once

#include <cstddef>

namespace vramshim::pool {

// How closely a block handed out must fit its request.
enum class Fit : bool {
  kExact,  // exactly the request: a thread cache's bins hold blocks of one size each
  kSlack,  // a small block may be up to an eighth larger (SizePolicy::kSmallSlackDivisor)
};

// How requests are rounded and which segment serves them (after PyTorch's caching allocator):
// requests up to 1 MiB are small and carved out of 2 MiB segments; larger ones come from a large
// pool whose segments are 20 MiB for requests under 10 MiB and the request rounded up to 2 MiB
// otherwise. A cached block is split when what remains is worth keeping (512 B in the small pool,
// more than 1 MiB in the large one), so a block handed out whole is at most 1 MiB larger than the
// request. Where the fit may be loose, a small block whose remainder would be at most an eighth of
// the request is handed out whole (see kSmallSlackDivisor).
class SizePolicy {
 public:
  static constexpr size_t kGranularity = 512;
  static constexpr size_t kSmallRequestMax = size_t{1} << 20;
  static constexpr size_t kSmallSegment = size_t{2} << 20;
  static constexpr size_t kMidRequestMax = size_t{10} << 20;
  static constexpr size_t kMidSegment = size_t{20} << 20;
  static constexpr size_t kLargeSegmentGranularity = size_t{2} << 20;
  static constexpr size_t kMaxOversize = size_t{1} << 20;
  // Requests of varied sizes rarely find a free block of their exact size: each would split a
  // larger one, and its free would merge the pieces again. Handing the block out whole when the
  // remainder is at most 1/kSmallSlackDivisor of the request lets freed blocks serve the requests
  // near their size whole, each holding at most an eighth more than its request while it lives
  // (the bound PyTorch's roundup_power2_divisions:8 and jemalloc's size classes keep, without
  // rounding every request: a size that repeats still gets its exact block). Requests and the
  // bytes charged stay the rounded request.
  static constexpr size_t kSmallSlackDivisor = 8;
  // Larger requests are not rounded or pooled; no device has that much memory.
  static constexpr size_t kMaxRequest = size_t{1} << 48;

  explicit SizePolicy(bool split_blocks = true) : split_blocks_(split_blocks) {}

  static size_t round(size_t bytes) { return (bytes + kGranularity - 1) & ~(kGranularity - 1); }

  bool split_blocks() const { return split_blocks_; }
  bool is_small(size_t rounded) const { return split_blocks_ && rounded <= kSmallRequestMax; }
  // Bytes to ask the driver for when no cached block serves `rounded`.
  size_t segment_size(size_t rounded) const;
  // Whether a free block of `block_size` may serve `rounded` (best fit still prefers the smallest).
  bool can_serve(size_t block_size, size_t rounded) const;
  // Whether serving `rounded` from a block of `block_size` leaves a remainder worth a block of its
  // own, the block fitting as `fit` asks.
  bool should_split(bool small, size_t block_size, size_t rounded, Fit fit) const;

 private:
  bool split_blocks_;
};

}  // namespace vramshim::pool
