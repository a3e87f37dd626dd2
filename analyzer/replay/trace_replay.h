// A trace replayed with each of a list of pool policies, next to what its own allocator did.
#pragma once

#include <string>
#include <vector>

#include "analyzer/model/allocation_trace.h"
#include "analyzer/replay/memory_figures.h"
#include "analyzer/replay/replay_policy.h"

namespace vramshim::analyzer {

struct PolicyReplay {
  std::string policy;
  MemoryFigures figures;
};

struct DeviceReplay {
  int device = 0;
  size_t allocations = 0;
  size_t allocations_before_trace = 0;  // of `allocations` (DeviceTrace)
  size_t frees = 0;
  size_t out_of_memory_events = 0;
  // The recording allocator's figures; only peak_in_use_bytes unless records_reservations.
  MemoryFigures recorded;
  bool records_reservations = false;
  std::vector<PolicyReplay> policies;
};

struct TraceReplay {
  std::string source;     // the file
  std::string format;     // AllocationTrace::format
  std::string allocator;  // AllocationTrace::allocator
  int timed_runs = 0;
  std::vector<DeviceReplay> devices;
};

// Replays every device of `trace` with every policy (pool_replay.h).
TraceReplay replay_trace(const AllocationTrace& trace, const std::string& source,
                         const std::vector<ReplayPolicy>& policies, int timed_runs);

}  // namespace vramshim::analyzer
