#include "analyzer/model/call_tree.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "analyzer/model/figure_sum.h"

namespace vramshim::analyzer {
namespace {

constexpr size_t kMetrics = 4;
constexpr Metric kAllMetrics[kMetrics] = {Metric::kBytesAtPeak, Metric::kLiveBytes,
                                          Metric::kAllocations, Metric::kTotalBytes};

// Sites as label-id sequences, outermost first, sorted so that every subtree is a contiguous range.
class TreeBuilder {
 public:
  TreeBuilder(const std::vector<SiteView>& sites, const FrameTable& table, double min_fraction)
      : sites_(sites), min_fraction_(min_fraction) {
    labels_.push_back("all");  // kRootLabel
    between_python_lines_.push_back(false);
    std::unordered_map<std::string, uint32_t> ids;
    std::vector<uint32_t> label_of_frame(table.size(), UINT32_MAX);
    paths_.resize(sites.size());
    for (size_t s = 0; s < sites.size(); ++s) {
      const auto& frames = sites[s].frames;
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
        uint32_t& label = label_of_frame[*it];
        if (label == UINT32_MAX) {
          auto [pos, inserted] = ids.emplace(tree_label(table.frame(*it)), labels_.size());
          if (inserted) {
            labels_.push_back(pos->first);
            // The interpreter's native frames, not its standard library's Python lines.
            between_python_lines_.push_back(
                !table.frame(*it).python &&
                support::between_python_lines(table.frame(*it).library));
          }
          label = pos->second;
        }
        paths_[s].push_back(label);
      }
      // The tree's builders, readers and renderers recurse once per level: the frames deeper
      // than kMaxTreeDepth are summed into the node at the bottom.
      if (paths_[s].size() > kMaxTreeDepth) paths_[s].resize(kMaxTreeDepth);
    }
    order_.resize(sites.size());
    std::iota(order_.begin(), order_.end(), 0);
    std::sort(order_.begin(), order_.end(),
              [&](uint32_t a, uint32_t b) { return paths_[a] < paths_[b]; });
  }

  CallTree build() {
    CallTreeNode root;
    root.label = kRootLabel;
    root.values = sum(0, order_.size());
    for (size_t m = 0; m < kMetrics; ++m) {
      thresholds_[m] = static_cast<int64_t>(static_cast<double>(root.values[m]) * min_fraction_);
    }
    add_children(root, 0, order_.size(), 0);
    return {std::move(labels_), std::move(root)};
  }

 private:
  std::array<int64_t, 4> sum(size_t begin, size_t end) const {
    std::array<int64_t, 4> values{};
    for (size_t i = begin; i < end; ++i) {
      for (Metric m : kAllMetrics) {
        int64_t& value = values[static_cast<size_t>(m)];
        value = saturating_add(value, sites_[order_[i]].figures.value(m));
      }
    }
    return values;
  }

  bool significant(const std::array<int64_t, 4>& values) const {
    for (size_t m = 0; m < kMetrics; ++m) {
      if (values[m] > 0 && values[m] >= thresholds_[m]) return true;
    }
    return false;
  }

  // Children of `node` from the sites in order_[begin, end), whose paths share their first `depth`.
  void add_children(CallTreeNode& node, size_t begin, size_t end, size_t depth) {
    size_t i = begin;
    while (i < end && paths_[order_[i]].size() <= depth) ++i;  // sites that end at this node
    while (i < end) {
      const uint32_t label = paths_[order_[i]][depth];
      size_t j = i + 1;
      while (j < end && paths_[order_[j]][depth] == label) ++j;
      std::array<int64_t, 4> values = sum(i, j);
      if (significant(values)) {
        CallTreeNode child;
        child.label = label;
        child.between_python_lines = between_python_lines_[label];
        child.values = values;
        add_children(child, i, j, depth + 1);
        node.children.push_back(std::move(child));
      }
      i = j;
    }
    std::sort(node.children.begin(), node.children.end(),
              [&](const CallTreeNode& a, const CallTreeNode& b) {
                return labels_[a.label] < labels_[b.label];
              });
  }

  const std::vector<SiteView>& sites_;
  double min_fraction_;
  std::vector<std::string> labels_;
  std::vector<bool> between_python_lines_;  // of each label
  std::vector<std::vector<uint32_t>> paths_;
  std::vector<uint32_t> order_;
  std::array<int64_t, 4> thresholds_{};
};

}  // namespace

std::string tree_label(const DisplayFrame& frame) {
  if (frame.python) return frame.function + " (" + frame.file + ")";
  return frame.name();
}

CallTree build_call_tree(const std::vector<SiteView>& sites, const FrameTable& table,
                         double min_fraction) {
  return TreeBuilder(sites, table, min_fraction).build();
}

size_t count_nodes(const CallTreeNode& root) {
  size_t count = 0;
  for (const CallTreeNode& child : root.children) count += 1 + count_nodes(child);
  return count;
}

size_t count_nodes(const CallTreeNode& root, Metric metric) {
  size_t count = 0;
  for (const CallTreeNode& child : root.children) {
    if (child.value(metric) > 0) count += 1 + count_nodes(child, metric);
  }
  return count;
}

}  // namespace vramshim::analyzer
