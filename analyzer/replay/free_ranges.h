// Free memory by address range: how fragmented what an allocator reserved is.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace vramshim::analyzer {

struct FreeRanges {
  uint64_t free_bytes = 0;
  uint64_t largest_bytes = 0;  // the largest range no allocation covers, within one segment

  // 1 − largest / free: 0 when the free memory is one range, near 1 when it is scattered in small
  // ones; none without free memory.
  std::optional<double> fragmentation() const {
    if (free_bytes == 0) return std::nullopt;
    return 1.0 - static_cast<double>(largest_bytes) / static_cast<double>(free_bytes);
  }
};

// The ranges of `segments` (base → bytes) that no allocation of `allocations` (address → bytes)
// covers. Slack at the end of a block handed out larger than its request counts as free.
FreeRanges free_ranges(const std::map<uint64_t, uint64_t>& segments,
                       const std::map<uint64_t, uint64_t>& allocations);

}  // namespace vramshim::analyzer
