#include "analyzer/replay/recorded_figures.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

namespace vramshim::analyzer {

namespace {

// Figures of a hostile trace stop at the largest a figure is printed as (an int64_t) rather than
// wrap around.
uint64_t saturating_add(uint64_t a, uint64_t b) {
  constexpr auto kTop = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return a >= kTop || b >= kTop - a ? kTop : a + b;
}

// The driver's allocations (segments) and the program's live allocations after an event.
struct RecordedState {
  std::map<uint64_t, uint64_t> segments;
  std::map<uint64_t, uint64_t> allocations;

  void apply(const AllocationEvent& event) {
    switch (event.action) {
      case AllocationEvent::Action::kAllocate:
        allocations[event.address] = rounded_request(event.bytes);
        break;
      case AllocationEvent::Action::kFree:
        allocations.erase(event.address);
        break;
      case AllocationEvent::Action::kReserve:
        segments[event.address] = event.bytes;
        break;
      case AllocationEvent::Action::kRelease:
        segments.erase(event.address);
        break;
    }
  }
};

}  // namespace

MemoryFigures recorded_figures(const DeviceTrace& trace) {
  MemoryFigures figures;
  RecordedState state;
  uint64_t in_use = 0;
  uint64_t reserved = 0;
  uint64_t reserved_at_snapshot = 0;
  // The allocation at which reserved memory was last at a new high: the free ranges are those of
  // that moment, found by a second pass (finding them at every new high was quadratic).
  std::optional<size_t> snapshot_event;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const AllocationEvent& event = trace.events[i];
    switch (event.action) {
      case AllocationEvent::Action::kAllocate: {
        in_use = saturating_add(in_use, rounded_request(event.bytes));
        figures.peak_in_use_bytes = std::max(figures.peak_in_use_bytes, in_use);
        if (reserved > reserved_at_snapshot) {
          reserved_at_snapshot = reserved;
          snapshot_event = i;
        }
        break;
      }
      case AllocationEvent::Action::kFree: {
        const auto it = state.allocations.find(event.address);
        if (it != state.allocations.end()) in_use -= std::min(in_use, it->second);
        break;
      }
      case AllocationEvent::Action::kReserve:
        reserved = saturating_add(reserved, event.bytes);
        figures.peak_reserved_bytes = std::max(figures.peak_reserved_bytes, reserved);
        ++figures.driver_alloc_calls;
        break;
      case AllocationEvent::Action::kRelease:
        reserved -= std::min(reserved, event.bytes);
        ++figures.driver_free_calls;
        break;
    }
    state.apply(event);
  }
  if (trace.whole_segments && snapshot_event) {
    RecordedState at_peak;
    for (size_t i = 0; i <= *snapshot_event; ++i) at_peak.apply(trace.events[i]);
    figures.at_peak = free_ranges(at_peak.segments, at_peak.allocations);
  }
  return figures;
}

}  // namespace vramshim::analyzer
