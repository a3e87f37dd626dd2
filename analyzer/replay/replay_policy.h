// The pool configurations a trace is replayed with, by name.
#pragma once

#include <string>
#include <vector>

#include "shim/pool/pool_options.h"

namespace vramshim::analyzer {

struct ReplayPolicy {
  std::string name;
  pool::PoolOptions options;
};

// The policies `vramshim replay` shows when none is asked for.
std::vector<std::string> default_replay_policies();

// "default" (the shim's own options), "no-split" (split_blocks off: every segment one block of
// its request), "driver-only" (the pool off: every allocate and free goes to the driver) or
// "max-cached=SIZE" (VRAMSHIM_MAX_CACHED). Throws std::runtime_error for any other name.
ReplayPolicy parse_replay_policy(const std::string& name);

}  // namespace vramshim::analyzer
