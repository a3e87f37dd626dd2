// The allocation history of a PyTorch memory snapshot, as `torch.cuda.memory._dump_snapshot()`
// writes it after `torch.cuda.memory._record_memory_history()`.
#pragma once

#include "analyzer/model/allocation_trace.h"
#include "analyzer/model/pickle_value.h"

namespace vramshim::analyzer {

// Reads the snapshot's "device_traces": a list per device of event dicts with "action", "addr"
// (for "oom": "device_free"), "size", "stream", "time_us" and "frames". alloc and free_completed
// (when PyTorch may reuse the memory, after the streams that used it are done) become kAllocate
// and kFree; free_requested is checked and otherwise left out; segment_alloc / segment_map and
// segment_free / segment_unmap become kReserve and kRelease; oom is counted; snapshot and annotate
// are ignored.
// Throws std::runtime_error naming the event ("device_traces[0][17]: …") for an unknown action, a
// missing or mistyped field, a free of an address that is not allocated, an allocation at a live
// address, a segment freed that was never allocated, or allocations (or segments) live at once
// that hold more than 2^50 bytes; and, before reading any event, for more
// than torch_snapshot::kMaxEntries events in all.
AllocationTrace trace_from_torch_snapshot(const PickleValue& snapshot);

}  // namespace vramshim::analyzer
