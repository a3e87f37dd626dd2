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

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kRounding = 512;
constexpr size_t kLeadingSites = 64;  // as the shim's report keeps them
// PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp, default settings): requests up
// to 1 MiB come from 2 MiB segments, split to the request rounded to 512 B; larger ones from
// 20 MiB segments (under 10 MiB) or segments of their own rounded to 2 MiB, split only when more
// than 1 MiB would be left: a block there may be up to 1 MiB larger than its request.
constexpr int64_t kSmallSegment = 2 * kMiB;
constexpr int64_t kLargeSplitRemainder = kMiB;

struct Allocation {
  int64_t extent = 0;
  int64_t requested = 0;
  int64_t stack = -1;
  bool put_back = false;  // freed after the failure: its extent is its request, rounded
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

// A segment_free or segment_unmap undone: the range is PyTorch's again. The pieces of an expandable
// segment mapped next to each other are one segment, as PyTorch's snapshot lists them.
void put_back(Ranges& ranges, uint64_t base, uint64_t size, bool expandable) {
  Range range{base + size, expandable};
  auto next = ranges.upper_bound(base);
  if (next != ranges.begin()) {
    const auto before = std::prev(next);
    if (before->second.end > base) return;  // over a range held already: does not add up
    if (expandable && before->second.expandable && before->second.end == base) {
      base = before->first;
      ranges.erase(before);
    }
  }
  if (next != ranges.end() && next->first < range.end) return;
  if (expandable && next != ranges.end() && next->second.expandable && next->first == range.end) {
    range.end = next->second.end;
    ranges.erase(next);
  }
  ranges.emplace(base, range);
}

int64_t rounded(int64_t bytes) { return (bytes + kRounding - 1) / kRounding * kRounding; }

// What PyTorch asks the driver for when no cached block serves a request of `bytes`.
int64_t segment_for(int64_t bytes) {
  if (bytes <= kMiB) return kSmallSegment;
  if (bytes < 10 * kMiB) return 20 * kMiB;
  return (bytes + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
}

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
                                                                  block.stack, false};
    }
  }
  for (auto e = after.rbegin(); e != after.rend(); ++e) {
    if (e->device != oom.device) continue;
    const auto size = static_cast<uint64_t>(e->size);
    if (e->type == "alloc") {
      live.erase(e->address);
    } else if (e->type == "free") {
      live.emplace(e->address, Allocation{rounded(e->size), e->size, e->stack, true});
    } else if (e->type == "segment_alloc" || e->type == "segment_map") {
      take_out(ranges, e->address, size);
    } else if (e->type == "segment_free" || e->type == "segment_unmap") {
      put_back(ranges, e->address, size, e->type == "segment_unmap");
    }
  }

  OutOfMemory result;
  result.request = {oom.bytes, "device", oom.device, "PyTorch's allocation", "driver", oom.stack};
  result.time = oom.time;
  result.failures = oom.failures;
  result.device_free_bytes = oom.device_free;
  result.unasked.push_back(
      "a PyTorch snapshot does not say how much memory the device has, nor what other processes "
      "held");
  // The segments then, their blocks in address order, the gaps between allocations free.
  std::map<int64_t, LeadingSite> by_stack;
  int64_t put_back_count = 0;
  for (const auto& [base, range] : ranges) {
    PoolSegment segment;
    segment.device = oom.device;
    segment.base = base;
    segment.size = static_cast<int64_t>(range.end - base);
    segment.expandable = range.expandable;
    // A gap of at most 1 MiB after a block put back in a large segment is that block's: PyTorch
    // leaves none so small there.
    const bool large = !range.expandable && segment.size > kSmallSegment;
    bool after_put_back = false;  // the last block is an allocation put back
    const auto add_gap = [&](uint64_t from, uint64_t to) {
      const auto gap = static_cast<int64_t>(to - from);
      if (large && after_put_back && gap <= kLargeSplitRemainder) {
        segment.blocks.back().size += gap;
      } else {
        segment.blocks.push_back({static_cast<int64_t>(from - base), gap, false, false, 0, -1});
        after_put_back = false;
      }
    };
    uint64_t cursor = base;
    for (auto it = live.lower_bound(base); it != live.end() && it->first < range.end; ++it) {
      if (it->first < cursor) continue;  // over the one before: a trace that does not add up
      if (it->first > cursor) add_gap(cursor, it->first);
      const Allocation& allocation = it->second;
      const uint64_t end =
          std::min(range.end, it->first + static_cast<uint64_t>(allocation.extent));
      const auto extent = static_cast<int64_t>(end - it->first);
      segment.blocks.push_back({static_cast<int64_t>(it->first - base), extent, false, true,
                                std::min(allocation.requested, extent), allocation.stack});
      put_back_count += allocation.put_back ? 1 : 0;
      after_put_back = allocation.put_back;
      result.in_use_bytes = saturating_add(result.in_use_bytes, segment.blocks.back().requested);
      LeadingSite& site = by_stack[allocation.stack];
      site.stack = allocation.stack;
      site.kind = "device";
      site.live_bytes = saturating_add(site.live_bytes, segment.blocks.back().requested);
      site.live_count += 1;
      cursor = end;
    }
    if (cursor < range.end) add_gap(cursor, range.end);
    for (const SegmentBlock& block : segment.blocks) {
      if (block.allocated) continue;
      result.pool_free_bytes = saturating_add(result.pool_free_bytes, block.size);
      result.pool_largest_free_block = std::max(result.pool_largest_free_block, block.size);
    }
    result.reserved_bytes = saturating_add(result.reserved_bytes, segment.size);
    result.segments.push_back(std::move(segment));
  }
  result.cached_bytes = result.pool_free_bytes;
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
      if (*oom.device_free >= oom.bytes) {
        result.explanation += " (a request of " + request + " takes a segment of " +
                              format_bytes(segment_for(oom.bytes)) + " from the driver)";
      }
    }
    result.explanation += "; a snapshot does not say what else held the device";
  }
  if (put_back_count > 0) {
    result.explanation += " (" + std::to_string(put_back_count) +
                          (put_back_count == 1 ? " allocation" : " allocations") +
                          " freed after the failure put back with the sizes PyTorch rounds "
                          "requests to: the free space around them is an estimate)";
  }
  return result;
}

}  // namespace vramshim::analyzer
