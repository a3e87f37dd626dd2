// The out-of-memory moment of an imported PyTorch snapshot: its last "oom" trace entry, with
// PyTorch's segments and blocks at that moment and the verdict the shim gives with what a snapshot
// says (docs/exports.md, "import").
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// A trace entry {"action": "oom", "size", "device_free", "frames", "time_us"}.
struct TorchOutOfMemory {
  int64_t device = 0;
  int64_t bytes = 0;                   // what the allocation asked for
  std::optional<int64_t> device_free;  // the device's free memory, as PyTorch read it then
  int64_t stack = -1;
  double time = 0;
  int64_t failures = 1;  // the snapshot's "oom" entries
};

// `at_snapshot`: the segments at the snapshot (every device's); `after`: the trace's events after
// the entry, oldest first. The segments at the failure are those at the snapshot with what came
// after undone: a block freed since (the exception's unwinding frees tensors) comes back at its
// address, its extent its request rounded up to 512 B as PyTorch rounds it.
OutOfMemory out_of_memory_at(const TorchOutOfMemory& oom,
                             const std::vector<PoolSegment>& at_snapshot,
                             const std::vector<TraceEvent>& after);

}  // namespace vramshim::analyzer
