#include "analyzer/replay/replay_policy.h"

#include <stdexcept>

#include "shim/control/size.h"

namespace vramshim::analyzer {

std::vector<std::string> default_replay_policies() {
  return {"default", "no-split", "driver-only"};
}

ReplayPolicy parse_replay_policy(const std::string& name) {
  static const std::string kMaxCached = "max-cached=";
  ReplayPolicy policy{name, {}};
  if (name == "default") return policy;
  if (name == "no-split") {
    policy.options.split_blocks = false;
    return policy;
  }
  if (name == "driver-only") {
    policy.options.enabled = false;
    return policy;
  }
  if (name.compare(0, kMaxCached.size(), kMaxCached) == 0) {
    policy.options.max_cached_bytes = control::parse_size(name.substr(kMaxCached.size()));
    if (policy.options.max_cached_bytes) return policy;
  }
  throw std::runtime_error("unknown policy '" + name +
                           "' (default, no-split, driver-only or max-cached=SIZE)");
}

}  // namespace vramshim::analyzer
