// What one allocator did with one trace: the row of the replay's table.
#pragma once

#include <cstdint>
#include <optional>

#include "analyzer/replay/free_ranges.h"

namespace vramshim::analyzer {

struct MemoryFigures {
  uint64_t peak_reserved_bytes = 0;
  // Requests rounded up to 512 B (rounded_request), the most live at once.
  uint64_t peak_in_use_bytes = 0;
  uint64_t driver_alloc_calls = 0;
  uint64_t driver_free_calls = 0;
  // Right after the allocation that first took reserved memory to its highest; none where the
  // trace cannot tell (segments mapped piecewise).
  std::optional<FreeRanges> at_peak;
  // Measured for a pool's replay: wall time per allocate or free call.
  std::optional<double> ns_per_operation;
};

// What "in use" counts for a request: its size rounded up to 512 B, as PyTorch's caching allocator
// (round_size) and vramshim's pool round requests.
inline uint64_t rounded_request(uint64_t bytes) { return (bytes + 511) / 512 * 512; }

}  // namespace vramshim::analyzer
