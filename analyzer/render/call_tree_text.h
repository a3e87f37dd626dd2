// A call tree as indented text.
#pragma once

#include <cstddef>
#include <ostream>

#include "analyzer/model/call_tree.h"

namespace vramshim::analyzer {

// Deep stacks of long names made 1.1 GB of text from a report of 453 KB: the tree's text stops
// at this many bytes.
inline constexpr size_t kCallTreeTextBytes = size_t{32} << 20;

// Indented tree with box-drawing branches, children largest first, values in `metric`, names cut
// to kListedLineBytes; once `budget_bytes` are written, a line saying how many nodes were left out.
void render_call_tree(std::ostream& out, const CallTree& tree, Metric metric,
                      size_t budget_bytes = kCallTreeTextBytes);

}  // namespace vramshim::analyzer
