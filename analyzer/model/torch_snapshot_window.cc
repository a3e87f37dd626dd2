#include "analyzer/model/torch_snapshot_window.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "analyzer/model/torch_snapshot_fields.h"

namespace vramshim::analyzer::torch_snapshot {
namespace {

using Kind = PickleValue::Kind;

constexpr int64_t kMostBytes = int64_t{1} << 60;

// The bytes an allocated block's allocation asked for: its "requested_size", in PyTorch before 2.1
// the "real_size" of its history's first entry, else its size.
uint64_t requested_bytes(const PickleValue& block, uint64_t size, const std::string& where) {
  if (block.find("requested_size") != nullptr) return field(block, "requested_size", where);
  const PickleValue* history = block.find("history");
  if (history != nullptr && history->is(Kind::kList) && !history->items().empty()) {
    const PickleValue& first = *history->items()[0];
    if (first.is(Kind::kDict) && first.find("real_size") != nullptr) {
      return field(first, "real_size", where + ".history[0]");
    }
  }
  return size;
}

}  // namespace

SnapshotSegments::SnapshotSegments(const PickleValue* segments) {
  if (segments == nullptr) return;
  if (!segments->is(Kind::kList)) fail("segments", "is not a list");
  EntryCount count("segments and blocks");
  count.add(segments->items().size());
  for (size_t i = 0; i < segments->items().size(); ++i) {
    const std::string where = "segments[" + std::to_string(i) + "]";
    const PickleValue& segment = *segments->items()[i];
    check_dict(segment, where, "a segment");
    count.add(list_field(segment, "blocks", where).items().size());
    by_device_[static_cast<int64_t>(field(segment, "device", where))].push_back(&segment);
  }
}

const std::vector<const PickleValue*>& SnapshotSegments::of_device(int64_t device) const {
  static const std::vector<const PickleValue*> kNone;
  const auto it = by_device_.find(device);
  return it == by_device_.end() ? kNone : it->second;
}

WindowStart window_start(const PickleValue& events, const SnapshotSegments& segments,
                         int64_t device, const std::string& where) {
  WindowStart start;
  // The trace walked forward: an address whose first event frees it held an allocation (or a
  // segment) made before the trace began. A later free of an address no longer live is the trace's
  // own inconsistency, for the reading to refuse.
  std::unordered_set<uint64_t> seen;           // addresses of allocation events so far
  std::unordered_set<uint64_t> segments_seen;  // addresses of segment events so far
  int64_t mapped = 0;  // mapped less unmapped by the trace; below 0 when it unmaps older pieces
  int64_t lowest_mapped = 0;
  for (size_t i = 0; i < events.items().size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const PickleValue& entry = *events.items()[i];
    check_dict(entry, at, "an event");
    const Action action = action_of(entry, at);
    if (action == Action::kOom || action == Action::kSnapshot || action == Action::kAnnotate) {
      continue;
    }
    const uint64_t address = field(entry, "addr", at);
    const uint64_t bytes = field(entry, "size", at);
    switch (action) {
      case Action::kAlloc:
        seen.insert(address);
        break;
      case Action::kFreeRequested:
      case Action::kFreeCompleted:
        if (seen.insert(address).second) start.allocations[address] = bytes;
        break;
      case Action::kSegmentAlloc:
        segments_seen.insert(address);
        break;
      case Action::kSegmentFree:
        if (segments_seen.insert(address).second) start.segments[address] = bytes;
        break;
      case Action::kSegmentMap:
      case Action::kSegmentUnmap: {
        // Kept within +-2^60 (no device maps 2^50 bytes; a trace that says so is refused when it
        // is read), so that sums do not wrap.
        const auto change = static_cast<int64_t>(std::min<uint64_t>(bytes, kMostBytes));
        mapped = std::clamp<int64_t>(mapped + (action == Action::kSegmentMap ? change : -change),
                                     -kMostBytes, kMostBytes);
        lowest_mapped = std::min(lowest_mapped, mapped);
        break;
      }
      case Action::kOom:
      case Action::kSnapshot:
      case Action::kAnnotate:
        break;
    }
  }
  // The snapshot's state: segments and allocated blocks at addresses the trace never names were
  // there before it began; the expandable segments' mapped bytes, less what the trace mapped, too.
  int64_t mapped_at_snapshot = 0;
  const auto& listed = segments.of_device(device);
  for (size_t i = 0; i < listed.size(); ++i) {
    const PickleValue& segment = *listed[i];
    const std::string at =
        "segments of device " + std::to_string(device) + "[" + std::to_string(i) + "]";
    const uint64_t base = field(segment, "address", at);
    const uint64_t size = field(segment, "total_size", at);
    if (flag_field(segment, "is_expandable")) {
      mapped_at_snapshot = std::min<int64_t>(
          mapped_at_snapshot + static_cast<int64_t>(std::min<uint64_t>(size, kMostBytes)),
          kMostBytes);
    } else if (segments_seen.count(base) == 0) {
      start.segments[base] = size;
    }
    uint64_t offset = 0;  // PyTorch before 2.1 names no block's address: they follow each other
    const PickleValue& blocks = list_field(segment, "blocks", at);
    for (size_t j = 0; j < blocks.items().size(); ++j) {
      const std::string block_at = at + ".blocks[" + std::to_string(j) + "]";
      const PickleValue& block = *blocks.items()[j];
      check_dict(block, block_at, "a block");
      const uint64_t block_size = field(block, "size", block_at);
      const uint64_t address =
          block.find("address") != nullptr ? field(block, "address", block_at) : base + offset;
      offset = address - base + block_size;
      const std::string& state = text_field(block, "state", block_at);
      if (state == "inactive" || seen.count(address) > 0) continue;
      const uint64_t requested = requested_bytes(block, block_size, block_at);
      start.allocations[address] = requested > 0 ? requested : block_size;
    }
  }
  start.mapped_bytes = static_cast<uint64_t>(std::max(-lowest_mapped, mapped_at_snapshot - mapped));
  return start;
}

}  // namespace vramshim::analyzer::torch_snapshot
