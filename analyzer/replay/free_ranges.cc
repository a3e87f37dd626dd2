#include "analyzer/replay/free_ranges.h"

#include <algorithm>

namespace vramshim::analyzer {

FreeRanges free_ranges(const std::map<uint64_t, uint64_t>& segments,
                       const std::map<uint64_t, uint64_t>& allocations) {
  FreeRanges result;
  const auto add_range = [&](uint64_t bytes) {
    result.free_bytes += bytes;
    result.largest_bytes = std::max(result.largest_bytes, bytes);
  };
  for (const auto& [base, size] : segments) {
    const uint64_t end = base + size;
    uint64_t cursor = base;
    for (auto it = allocations.lower_bound(base); it != allocations.end() && it->first < end;
         ++it) {
      if (it->first > cursor) add_range(it->first - cursor);
      cursor = std::max(cursor, std::min(end, it->first + it->second));
    }
    if (end > cursor) add_range(end - cursor);
  }
  return result;
}

}  // namespace vramshim::analyzer
