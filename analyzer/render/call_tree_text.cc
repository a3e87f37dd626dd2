#include "analyzer/render/call_tree_text.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "analyzer/render/listed_stacks.h"
#include "analyzer/render/units.h"

namespace vramshim::analyzer {
namespace {

std::string format_value(int64_t value, Metric metric) {
  return metric_is_bytes(metric) ? format_bytes(value) : format_count(value);
}

class TreeText {
 public:
  TreeText(std::ostream& out, const CallTree& tree, Metric metric, size_t budget_bytes)
      : out_(out), tree_(tree), metric_(metric), left_(budget_bytes) {}

  void render() {
    if (render_node(tree_.root, tree_.root.value(metric_), "", true, true)) return;
    const size_t nodes = count_nodes(tree_.root, metric_) + 1;  // the root too
    out_ << "\n… "
         << format_count_of(static_cast<int64_t>(nodes - written_), "more node", "more nodes")
         << " left out: the tree's text is bounded\n";
  }

 private:
  // Returns false once the budget is spent.
  bool render_node(const CallTreeNode& node, int64_t total, const std::string& prefix, bool last,
                   bool root) {
    const int64_t value = node.value(metric_);
    char share[16];
    std::snprintf(
        share, sizeof share, "%5.1f%%",
        total > 0 ? 100.0 * static_cast<double>(value) / static_cast<double>(total) : 0.0);
    std::string figure = format_value(value, metric_);
    if (figure.size() < 10) figure.insert(0, 10 - figure.size(), ' ');
    const std::string line = figure + ' ' + share + "  " + prefix +
                             (root   ? ""
                              : last ? "└─ "
                                     : "├─ ") +
                             listed_line(tree_.name(node)) + '\n';
    if (line.size() > left_) return false;
    left_ -= line.size();
    out_ << line;
    ++written_;
    std::vector<const CallTreeNode*> children;
    for (const CallTreeNode& child : node.children) {
      if (child.value(metric_) > 0) children.push_back(&child);
    }
    std::stable_sort(children.begin(), children.end(),
                     [&](const CallTreeNode* a, const CallTreeNode* b) {
                       return a->value(metric_) > b->value(metric_);
                     });
    const std::string child_prefix = root ? "" : prefix + (last ? "   " : "│  ");
    for (size_t i = 0; i < children.size(); ++i) {
      if (!render_node(*children[i], total, child_prefix, i + 1 == children.size(), false)) {
        return false;
      }
    }
    return true;
  }

  std::ostream& out_;
  const CallTree& tree_;
  Metric metric_;
  size_t left_;
  size_t written_ = 0;  // nodes, the root included
};

}  // namespace

void render_call_tree(std::ostream& out, const CallTree& tree, Metric metric, size_t budget_bytes) {
  TreeText(out, tree, metric, budget_bytes).render();
}

}  // namespace vramshim::analyzer
