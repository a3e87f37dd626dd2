// The calls every hook has seen, as "NAME=N" items (hooks never called are left out), for the
// debug log's "calls cuMemAlloc_v2=3 cuMemFree_v2=3 …" lines.
#pragma once

#include <string>
#include <vector>

namespace vramshim::runtime {

std::vector<std::string> call_summary();

}  // namespace vramshim::runtime
