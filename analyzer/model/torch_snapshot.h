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
// are ignored. Each device's events start with what it held before its trace's first event
// (torch_snapshot_window.h: what the trace frees without allocating it, and what "segments" holds
// at the snapshot that the trace did not make), segments then allocations, in address order.
// Throws std::runtime_error naming the event ("device_traces[0][17]: …") for an unknown action, a
// missing or mistyped field, an allocation at a live address, a free of one that is not live
// then, a segment over another, or allocations (or segments) live at once that hold more than
// 2^50 bytes; and, before reading any event, for more devices than kMaxDeviceNumber or more than
// torch_snapshot::kMaxEntries events (or segments and blocks) in all.
AllocationTrace trace_from_torch_snapshot(const PickleValue& snapshot);

}  // namespace vramshim::analyzer
