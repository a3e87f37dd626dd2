#include "shim/runtime/call_summary.h"

#include "shim/intercept/hook_table.h"

namespace vramshim::runtime {

std::string call_summary() {
  std::string line = "calls";
  for (int i = 0; i < intercept::kHookCount; ++i) {
    const auto id = static_cast<intercept::HookId>(i);
    const uint64_t calls = intercept::call_count(id);
    if (calls == 0) continue;
    line += ' ';
    line += intercept::hook_name(id);
    line += '=';
    line += std::to_string(calls);
  }
  return line;
}

}  // namespace vramshim::runtime
