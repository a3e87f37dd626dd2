#include "analyzer/model/torch_snapshot_oom.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <utility>

#include "analyzer/model/figure_sum.h"
#include "analyzer/render/units.h"

namespace vramshim::analyzer {
namespace {

constexpr int64_t kRounding = 512;
constexpr size_t kLeadingSites = 64;  // as the shim's report keeps them

struct Allocation {
  int64_t extent = 0;
  int64_t requested = 0;
  int64_t stack = -1;
};

struct Range {
  uint64_t end = 0;
  bool expandable = false;
};

using Ranges = std::map<uint64_t, Range>;  // by base

// The device's memory PyTorch reserved, as pieces of segments: a segment_alloc or segment_map
// undone takes its range out of the piece that holds it.
void take_out(Ranges& ranges, uint64_t base, uint64_t size) {
  auto it = ranges.upper_bound(base);
  if (it == ranges.begin()) return;
  --it;
  const uint64_t start = it->first;
  const Range range = it->second;
  const uint64_t end = base + size;
  if (base >= range.end || end > range.end) return;  // a trace that does not add up
  ranges.erase(it);
  if (start < base) ranges.emplace(start, Range{base, range.expandable});
  if (end < range.end) ranges.emplace(end, Range{range.end, range.expandable});
}

int64_t rounded(int64_t bytes) { return (bytes + kRounding - 1) / kRounding * kRounding; }

}  // namespace

OutOfMemory out_of_memory_at(const TorchOutOfMemory& oom,
                             const std::vector<PoolSegment>& at_snapshot,
                             const std::vector<TraceEvent>& after) {
  Ranges ranges;
  std::map<uint64_t, Allocation> live;  // by address
  for (const PoolSegment& segment : at_snapshot) {
    if (segment.device != oom.device || segment.size <= 0) continue;
    ranges[segment.base] = {segment.base + static_cast<uint64_t>(segment.size), segment.expandable};
    for (const SegmentBlock& block : segment.blocks) {
      if (!block.allocated) continue;
      live[segment.base + static_cast<uint64_t>(block.offset)] = {block.size, block.requested,
                                                                  block.stack};
    }
  }
  for (auto e = after.rbegin(); e != after.rend(); ++e) {
    if (e->device != oom.device) continue;
    if (e->type == "alloc") {
      live.erase(e->address);
    } else if (e->type == "free") {
      live.emplace(e->address, Allocation{rounded(e->size), e->size, e->stack});
    } else if (e->type == "segment_alloc" || e->type == "segment_map") {
      take_out(ranges, e->address, static_cast<uint64_t>(e->size));
    } else if (e->type == "segment_free" || e->type == "segment_unmap") {
      ranges.emplace(e->address, Range{e->address + static_cast<uint64_t>(e->size),
                                       e->type == "segment_unmap"});
    }
  }

  OutOfMemory result;
  result.request = {oom.bytes, "device", oom.device, "cudaMalloc", "driver", oom.stack};
  result.time = oom.time;
  result.failures = oom.failures;
  result.device_free_bytes = oom.device_free;
  result.unasked.push_back(
      "a PyTorch snapshot does not say how much memory the device has, nor what other processes "
      "held");
  // The segments then, their blocks in address order, the gaps between allocations free.
  for (const auto& [base, range] : ranges) {
    PoolSegment segment;
    segment.device = oom.device;
    segment.base = base;
    segment.size = static_cast<int64_t>(range.end - base);
    segment.expandable = range.expandable;
    uint64_t cursor = base;
    for (auto it = live.lower_bound(base); it != live.end() && it->first < range.end; ++it) {
      if (it->first < cursor) continue;  // overlaps the one before: a trace that does not add up
      if (it->first > cursor) {
        segment.blocks.push_back({static_cast<int64_t>(cursor - base),
                                  static_cast<int64_t>(it->first - cursor), false, false, 0, -1});
      }
      const uint64_t end =
          std::min(range.end, it->first + static_cast<uint64_t>(it->second.extent));
      segment.blocks.push_back({static_cast<int64_t>(it->first - base),
                                static_cast<int64_t>(end - it->first), false, true,
                                it->second.requested, it->second.stack});
      cursor = end;
    }
    if (cursor < range.end) {
      segment.blocks.push_back({static_cast<int64_t>(cursor - base),
                                static_cast<int64_t>(range.end - cursor), false, false, 0, -1});
    }
    for (const SegmentBlock& block : segment.blocks) {
      if (block.allocated) continue;
      result.pool_free_bytes = saturating_add(result.pool_free_bytes, block.size);
      result.pool_largest_free_block = std::max(result.pool_largest_free_block, block.size);
    }
    result.reserved_bytes = saturating_add(result.reserved_bytes, segment.size);
    result.segments.push_back(std::move(segment));
  }
  std::map<int64_t, LeadingSite> by_stack;
  for (const auto& [address, allocation] : live) {
    result.in_use_bytes = saturating_add(result.in_use_bytes, allocation.requested);
    LeadingSite& site = by_stack[allocation.stack];
    site.stack = allocation.stack;
    site.kind = "device";
    site.live_bytes = saturating_add(site.live_bytes, allocation.requested);
    site.live_count += 1;
  }
  result.cached_bytes = std::max<int64_t>(result.reserved_bytes - result.in_use_bytes, 0);
  for (auto& [stack, site] : by_stack) result.leading_sites.push_back(site);
  std::stable_sort(
      result.leading_sites.begin(), result.leading_sites.end(),
      [](const LeadingSite& a, const LeadingSite& b) { return a.live_bytes > b.live_bytes; });
  if (result.leading_sites.size() > kLeadingSites) result.leading_sites.resize(kLeadingSites);

  // The shim's rules, with what a snapshot says: no limit; no device total, so no "too large"
  // and no "held elsewhere".
  const std::string request = format_bytes(oom.bytes);
  if (result.pool_free_bytes >= oom.bytes && result.pool_largest_free_block < oom.bytes) {
    result.verdict = "fragmentation";
    result.explanation = "fragmentation: PyTorch's segments held " +
                         format_bytes(result.pool_free_bytes) + " free, but no free block of " +
                         request + " (the largest is " +
                         format_bytes(result.pool_largest_free_block) + ")";
  } else {
    result.verdict = "exhaustion";
    result.explanation = "exhaustion: PyTorch held " + format_bytes(result.reserved_bytes) +
                         " reserved, " + format_bytes(result.in_use_bytes) + " of it allocated";
    if (oom.device_free) {
      result.explanation += ", and the device had " + format_bytes(*oom.device_free) + " free";
    }
    result.explanation += " (a snapshot does not say what else held the device)";
  }
  return result;
}

}  // namespace vramshim::analyzer
