// VRAMSHIM_STACKS: a stack for every allocation, none, or byte-sampled allocations only. The
// configuration reads it, the tracker obeys it and the report names it.
#pragma once

#include <cstdint>

namespace vramshim::attribution {

enum class StackMode : uint8_t { kAll, kOff, kSample };

}  // namespace vramshim::attribution
