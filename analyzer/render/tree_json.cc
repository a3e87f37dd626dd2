#include "analyzer/render/tree_json.h"

#include <algorithm>
#include <string>
#include <vector>

#include "analyzer/render/listed_stacks.h"

namespace vramshim::analyzer {
namespace {

using nlohmann::json;

// A node's members but its name, at most: four figures of up to 20 characters, keys, brackets.
constexpr size_t kNodeBytes = 160;

// The nodes of a tree that fit a budget, taken breadth-first: the children a node keeps are the
// first of its children, those of order_[i] at [first_child_[i], first_child_[i + 1]).
class BreadthFirstCut {
 public:
  // `name_bytes(label)`: what naming a node costs, asked when the node is about to be taken.
  template <typename NameBytes>
  BreadthFirstCut(const CallTree& tree, size_t budget_bytes, NameBytes name_bytes) {
    order_.push_back(&tree.root);
    size_t left = budget_bytes;
    bool full = false;
    for (size_t i = 0; i < order_.size(); ++i) {
      first_child_.push_back(order_.size());
      for (const CallTreeNode& child : order_[i]->children) {
        if (full) break;
        const size_t cost = kNodeBytes + name_bytes(child.label);
        full = cost > left;
        if (full) break;
        left -= cost;
        order_.push_back(&child);
      }
    }
    first_child_.push_back(order_.size());
    omitted_ = count_nodes(tree.root) - (order_.size() - 1);
  }

  size_t omitted() const { return omitted_; }

  // The kept tree from order_[at] down, `name(label)` naming each node.
  template <typename Name>
  json write(Name& name, size_t at = 0) const {
    const CallTreeNode& node = *order_[at];
    json children = json::array();
    for (size_t i = first_child_[at]; i < first_child_[at + 1]; ++i) {
      children.push_back(write(name, i));
    }
    json j = {{"name", name(node.label)},
              {"bytes_at_peak", node.value(Metric::kBytesAtPeak)},
              {"live_bytes", node.value(Metric::kLiveBytes)},
              {"total_count", node.value(Metric::kAllocations)},
              {"total_bytes", node.value(Metric::kTotalBytes)},
              {"children", std::move(children)}};
    if (node.between_python_lines) j["interpreter"] = true;
    return j;
  }

 private:
  std::vector<const CallTreeNode*> order_;
  std::vector<size_t> first_child_;
  size_t omitted_ = 0;
};

}  // namespace

TreeJson tree_json(const CallTree& tree, size_t budget_bytes) {
  const BreadthFirstCut cut(tree, budget_bytes,
                            [&](uint32_t label) { return tree.labels[label].size(); });
  auto name = [&](uint32_t label) -> const std::string& { return tree.labels[label]; };
  return {cut.write(name), cut.omitted()};
}

TreeJson page_tree_json(const CallTree& tree, size_t budget_bytes, json& names) {
  // A label costs its bytes once, where a node first names it.
  std::vector<bool> costed(tree.labels.size(), false);
  const BreadthFirstCut cut(tree, budget_bytes, [&](uint32_t label) -> size_t {
    if (costed[label]) return 0;
    costed[label] = true;
    return std::min(tree.labels[label].size(), kListedLineBytes + 3);  // "…" is 3 bytes
  });
  names = json::array();
  std::vector<int64_t> index(tree.labels.size(), -1);
  auto name = [&](uint32_t label) {
    if (index[label] < 0) {
      index[label] = static_cast<int64_t>(names.size());
      names.push_back(listed_line(tree.labels[label]));
    }
    return index[label];
  };
  return {cut.write(name), cut.omitted()};
}

}  // namespace vramshim::analyzer
