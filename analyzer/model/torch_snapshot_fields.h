// The fields of a PyTorch memory snapshot (torch.cuda.memory._snapshot(); torch/cuda/memory.py
// documents them) as the readers of snapshots check them: trace entries' actions, and ints that
// must be there.
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

}  // namespace vramshim::analyzer::torch_snapshot
