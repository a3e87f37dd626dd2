// A call tree as JSON: the `tree` of `report --format json --tree` and the HTML page's flame graph,
// bounded: deep stacks of long names made a page of 837 MB from a report of 453 KB.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

#include "analyzer/model/call_tree.h"

namespace vramshim::analyzer {

struct TreeJson {
  // {"name", "bytes_at_peak", "live_bytes", "total_count", "total_bytes", "children": [...]}, and
  // "interpreter": true on the native frames of the interpreter and libffi.
  nlohmann::json root;
  // The nodes of the tree not written: past the budget.
  size_t omitted_nodes = 0;
};

// The nodes of `tree` breadth-first (every caller before its callees) while about `budget_bytes`
// of JSON hold them: a cut tree keeps its upper levels whole.
TreeJson tree_json(const CallTree& tree, size_t budget_bytes);

// The same for the page, each node's "name" an index into `names`, which gets each label the
// written nodes use once, cut to kListedLineBytes.
TreeJson page_tree_json(const CallTree& tree, size_t budget_bytes, nlohmann::json& names);

}  // namespace vramshim::analyzer
