// A call tree as indented text.
#pragma once

#include <ostream>

#include "analyzer/model/call_tree.h"

namespace vramshim::analyzer {

// Indented tree with box-drawing branches, children largest first, values in `metric`.
void render_call_tree(std::ostream& out, const CallTreeNode& root, Metric metric);

}  // namespace vramshim::analyzer
