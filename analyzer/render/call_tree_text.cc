#include "analyzer/render/call_tree_text.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "analyzer/render/units.h"

namespace vramshim::analyzer {
namespace {

std::string format_value(int64_t value, Metric metric) {
  return metric_is_bytes(metric) ? format_bytes(value) : format_count(value);
}

void render_node(std::ostream& out, const CallTreeNode& node, Metric metric, int64_t total,
                 const std::string& prefix, bool last, bool root) {
  const int64_t value = node.value(metric);
  char share[16];
  std::snprintf(share, sizeof share, "%5.1f%%",
                total > 0 ? 100.0 * static_cast<double>(value) / static_cast<double>(total) : 0.0);
  std::string figure = format_value(value, metric);
  if (figure.size() < 10) figure.insert(0, 10 - figure.size(), ' ');
  out << figure << ' ' << share << "  " << prefix
      << (root   ? ""
          : last ? "└─ "
                 : "├─ ")
      << node.name << '\n';
  std::vector<const CallTreeNode*> children;
  for (const CallTreeNode& child : node.children) {
    if (child.value(metric) > 0) children.push_back(&child);
  }
  std::stable_sort(children.begin(), children.end(),
                   [&](const CallTreeNode* a, const CallTreeNode* b) {
                     return a->value(metric) > b->value(metric);
                   });
  const std::string child_prefix = root ? "" : prefix + (last ? "   " : "│  ");
  for (size_t i = 0; i < children.size(); ++i) {
    render_node(out, *children[i], metric, total, child_prefix, i + 1 == children.size(), false);
  }
}

}  // namespace

void render_call_tree(std::ostream& out, const CallTreeNode& root, Metric metric) {
  render_node(out, root, metric, root.value(metric), "", true, true);
}

}  // namespace vramshim::analyzer
