// Sites arranged as a call tree by function (outermost caller at the root).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/model/frame_table.h"
#include "analyzer/model/site_view.h"
#include "shim/support/system_libraries.h"

namespace vramshim::analyzer {

struct CallTreeNode {
  uint32_t label = 0;                 // index into CallTree::labels
  std::array<int64_t, 4> values{};    // indexed by Metric
  bool between_python_lines = false;  // a native frame of the interpreter or libffi
  std::vector<CallTreeNode> children;

  int64_t value(Metric metric) const { return values[static_cast<size_t>(metric)]; }
};

// The root's label: labels[kRootLabel] is "all".
inline constexpr uint32_t kRootLabel = 0;

struct CallTree {
  // Each distinct label once, nodes naming theirs by index: a long name repeated at every level of
  // deep stacks took a copy per node (a report of 453 KB made a tree of 3.4 GB).
  std::vector<std::string> labels;  // function (Python: "function (file)")
  CallTreeNode root;

  const std::string& name(const CallTreeNode& node) const { return labels[node.label]; }
};

// The label of a frame in trees and folded stacks: its function, or module+offset when unknown.
std::string tree_label(const DisplayFrame& frame);

// How deep a tree goes: what its builders, readers and renderers (the text tree, the page's JSON)
// recurse through, a few KiB of stack per level under a sanitizer. Deeper than any stack the shim
// writes (256 frames) with a few inlined frames each; frames below it count at the bottom node.
inline constexpr size_t kMaxTreeDepth = 1024;

// Builds the tree; a node is kept only if, for some metric, it holds at least `min_fraction` of the
// root's value (and more than zero). Children are ordered by name. Values saturate at
// kFigureLimit; the tree is at most kMaxTreeDepth deep (what lies deeper counts at the bottom).
CallTree build_call_tree(const std::vector<SiteView>& sites, const FrameTable& table,
                         double min_fraction);

// The nodes of the tree under `root` (`root` not counted); with `metric`, those with some of it:
// what a view by `metric` shows. Comparing a tree built with a min_fraction with one built with 0
// says how many nodes the first left out.
size_t count_nodes(const CallTreeNode& root);
size_t count_nodes(const CallTreeNode& root, Metric metric);

}  // namespace vramshim::analyzer
