// A call tree as JSON: the `tree` of `report --format json --tree` and the HTML page's flame graph.
#pragma once

#include <nlohmann/json.hpp>

#include "analyzer/model/call_tree.h"

namespace vramshim::analyzer {

// {"name", "bytes_at_peak", "live_bytes", "total_count", "total_bytes", "children": [...]}, and
// "interpreter": true on the native frames of the interpreter and libffi.
nlohmann::json tree_json(const CallTreeNode& node);

}  // namespace vramshim::analyzer
