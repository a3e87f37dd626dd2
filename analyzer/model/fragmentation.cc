#include "analyzer/model/fragmentation.h"

#include <algorithm>
#include <map>

#include "analyzer/model/figure_sum.h"

namespace vramshim::analyzer {
namespace {

int floor_log2(int64_t value) {
  int log2 = 0;
  while (value >>= 1) ++log2;
  return log2;
}

}  // namespace

FragmentationSummary summarize_fragmentation(const std::vector<PoolSegment>& segments) {
  FragmentationSummary summary;
  std::map<int, FreeBlockSizeClass> classes;
  for (const PoolSegment& segment : segments) {
    ++summary.segments;
    summary.segment_bytes = saturating_add(summary.segment_bytes, segment.size);
    for (const SegmentBlock& block : segment.blocks) {
      if (block.allocated) continue;
      if (block.pending) {
        ++summary.pending_blocks;
        summary.pending_bytes = saturating_add(summary.pending_bytes, block.size);
        continue;
      }
      ++summary.free_blocks;
      summary.free_bytes = saturating_add(summary.free_bytes, block.size);
      summary.largest_free_block = std::max(summary.largest_free_block, block.size);
      FreeBlockSizeClass& size_class = classes[floor_log2(block.size)];
      ++size_class.blocks;
      size_class.bytes = saturating_add(size_class.bytes, block.size);
    }
  }
  for (auto& [log2, size_class] : classes) {
    size_class.log2 = log2;
    summary.size_classes.push_back(size_class);
  }
  return summary;
}

}  // namespace vramshim::analyzer
