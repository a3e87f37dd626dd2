// The fields of a PyTorch memory snapshot (torch.cuda.memory._snapshot(); torch/cuda/memory.py
// documents them) as the readers of snapshots check them: trace entries' actions, ints that must be
// there, and how many entries the snapshot lists.
#pragma once

#include <cstdint>
#include <string>

#include "analyzer/model/pickle_value.h"

namespace vramshim::analyzer::torch_snapshot {

// The actions of PyTorch's TraceEntry (c10/cuda/CUDACachingAllocator.h), as
// torch/csrc/cuda/memory_snapshot.cpp names them in a snapshot.
enum class Action {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kOom,
  kSnapshot,
  kAnnotate,  // metadata attached to a live allocation; no memory changes hands
};

// PyTorch writes 6 to 8 fields per event and 5 to 12 per segment and block; a field is looked up
// by a scan, so a hostile dict with millions of fields, referenced millions of times, would take
// for ever.
inline constexpr size_t kMaxFields = 32;

// The most segments, blocks and trace events one reading of a snapshot goes through, a shared one
// counted each time it is listed. A pickle shares a repeated value (its memo) and the readers walk
// every reference as a copy, so a file under 1 MB can list one segment 10^5 times, each listing
// one block 10^5 times. Snapshots of real runs list thousands of segments, tens of thousands of
// blocks and the trace events PyTorch's history keeps (max_entries per device: 100,000 in
// PyTorch's guide to memory snapshots), far fewer; an import of this many trace events still ends
// in about a minute, in under 8 GiB.
inline constexpr uint64_t kMaxEntries = 20'000'000;

// Counts the entries a reading is about to go through, before it does.
class EntryCount {
 public:
  // `what` names the entries counted in the message ("trace events").
  explicit EntryCount(const char* what) : what_(what) {}

  // Fails once the count is more than kMaxEntries.
  void add(size_t entries);
  // The events of the lists of "device_traces"; what is not a list counts none (the reading
  // refuses it).
  void add_trace_events(const PickleValue& traces);

 private:
  const char* what_;
  uint64_t listed_ = 0;
};

[[noreturn]] void fail(const std::string& where, const std::string& why);
// Text from the file, made printable and short enough for a one-line message.
std::string shown(const std::string& text);
std::string hex(uint64_t value);

// `entry` as a dict of at most kMaxFields fields; fails naming `where` and what it should be
// ("an event") otherwise.
void check_dict(const PickleValue& entry, const std::string& where, const char* what);
// The "action" of a trace entry.
Action action_of(const PickleValue& entry, const std::string& where);
// The int `key` of a dict, which must be there and not negative.
uint64_t field(const PickleValue& entry, const char* key, const std::string& where);
// The str `key` of a dict, which must be there.
const std::string& text_field(const PickleValue& entry, const char* key, const std::string& where);
// The list `key` of a dict, which must be there.
const PickleValue& list_field(const PickleValue& entry, const char* key, const std::string& where);
// The bool `key` of a dict ("is_expandable"): false when absent or not a bool.
bool flag_field(const PickleValue& entry, const char* key);

}  // namespace vramshim::analyzer::torch_snapshot
