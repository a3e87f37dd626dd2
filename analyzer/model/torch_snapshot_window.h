// What a device's allocator held when the trace of a PyTorch memory snapshot begins. PyTorch's
// history keeps the last max_entries events (100,000 in its guide), starts when
// _record_memory_history is called (often after the model is loaded), and keeps one event with
// enabled='state': a trace seldom starts from an empty allocator.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "analyzer/model/pickle_value.h"

namespace vramshim::analyzer::torch_snapshot {

struct WindowStart {
  std::map<uint64_t, uint64_t> segments;     // whole segments: address → bytes
  uint64_t mapped_bytes = 0;                 // mapped pieces of expandable segments
  std::map<uint64_t, uint64_t> allocations;  // address → bytes requested
};

// The segments' blocks and segments, listed by device: the state at the snapshot.
class SnapshotSegments {
 public:
  // `segments`: the snapshot's "segments" list, or null when it has none. Throws naming the field
  // when an entry is not a segment, and counts what it lists against kMaxEntries.
  explicit SnapshotSegments(const PickleValue* segments);
  // The segments of `device`, in the snapshot's order.
  const std::vector<const PickleValue*>& of_device(int64_t device) const;

 private:
  std::map<int64_t, std::vector<const PickleValue*>> by_device_;
};

// The allocations, segments and mapped bytes live before the first event of `events` (the trace
// of `device`, named `where` in messages): those the trace frees, unmaps or finds at the snapshot
// without allocating them first. Throws naming the field when an entry it reads is malformed.
WindowStart window_start(const PickleValue& events, const SnapshotSegments& segments,
                         int64_t device, const std::string& where);

}  // namespace vramshim::analyzer::torch_snapshot
