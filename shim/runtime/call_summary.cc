#include "shim/runtime/call_summary.h"

#include "shim/intercept/hook_table.h"

namespace vramshim::runtime {

std::vector<std::string> call_summary() {
  std::vector<std::string> items;
  for (int i = 0; i < intercept::kHookCount; ++i) {
    const auto id = static_cast<intercept::HookId>(i);
    const uint64_t calls = intercept::call_count(id);
    if (calls == 0) continue;
    items.push_back(std::string(intercept::hook_name(id)) + '=' + std::to_string(calls));
  }
  return items;
}

}  // namespace vramshim::runtime
