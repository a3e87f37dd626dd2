#include "analyzer/replay/recorded_figures.h"

#include <algorithm>
#include <map>

namespace vramshim::analyzer {

MemoryFigures recorded_figures(const DeviceTrace& trace) {
  MemoryFigures figures;
  std::map<uint64_t, uint64_t> segments;
  std::map<uint64_t, uint64_t> allocations;
  uint64_t in_use = 0;
  uint64_t reserved = 0;
  uint64_t reserved_at_snapshot = 0;
  for (const AllocationEvent& event : trace.events) {
    switch (event.action) {
      case AllocationEvent::Action::kAllocate: {
        const uint64_t bytes = rounded_request(event.bytes);
        allocations[event.address] = bytes;
        in_use += bytes;
        figures.peak_in_use_bytes = std::max(figures.peak_in_use_bytes, in_use);
        if (reserved > reserved_at_snapshot) {
          reserved_at_snapshot = reserved;
          if (trace.whole_segments) figures.at_peak = free_ranges(segments, allocations);
        }
        break;
      }
      case AllocationEvent::Action::kFree: {
        const auto it = allocations.find(event.address);
        in_use -= it->second;
        allocations.erase(it);
        break;
      }
      case AllocationEvent::Action::kReserve:
        reserved += event.bytes;
        figures.peak_reserved_bytes = std::max(figures.peak_reserved_bytes, reserved);
        ++figures.driver_alloc_calls;
        segments[event.address] = event.bytes;
        break;
      case AllocationEvent::Action::kRelease:
        reserved -= event.bytes;
        ++figures.driver_free_calls;
        segments.erase(event.address);
        break;
    }
  }
  return figures;
}

}  // namespace vramshim::analyzer
