// How the free bytes of the pool lay in its segments at an out-of-memory failure, summed up: the
// picture behind a "fragmentation" verdict.
#pragma once

#include <cstdint>
#include <vector>

#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// Free blocks of 2^log2 bytes up to, not including, 2^(log2 + 1).
struct FreeBlockSizeClass {
  int log2 = 0;
  int64_t blocks = 0;
  int64_t bytes = 0;
};

struct FragmentationSummary {
  int64_t segments = 0;
  int64_t segment_bytes = 0;
  int64_t free_blocks = 0;
  int64_t free_bytes = 0;
  int64_t largest_free_block = 0;
  // Freed blocks waiting for a fence: not yet reusable, so not in the free figures.
  int64_t pending_blocks = 0;
  int64_t pending_bytes = 0;
  std::vector<FreeBlockSizeClass> size_classes;  // the classes that have blocks, smallest first
};

FragmentationSummary summarize_fragmentation(const std::vector<PoolSegment>& segments);

}  // namespace vramshim::analyzer
