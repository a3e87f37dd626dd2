// One log line with the calls every hook has seen, e.g. "calls cuMemAlloc_v2=3 cuMemFree_v2=3".
#pragma once

#include <string>

namespace vramshim::runtime {

std::string call_summary();

}  // namespace vramshim::runtime
