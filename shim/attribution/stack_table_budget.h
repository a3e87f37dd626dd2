// VRAMSHIM_STACK_TABLE: the host memory the interned stacks, their frames and the Python frames may
// take, each table its own share. A header alone: the configuration and the Python frame table read
// it without depending on the tracker.
#pragma once

#include <cstdint>

namespace vramshim::attribution {

inline constexpr uint64_t kDefaultStackTableBytes = uint64_t{256} << 20;

// The name a report gives what was left out past the budget: the overflow stack's one frame, and
// the Python frame that stands for the Python frames not interned.
inline constexpr const char* kPastStackTableName = "stacks past VRAMSHIM_STACK_TABLE";

}  // namespace vramshim::attribution
