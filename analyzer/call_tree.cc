#include "analyzer/call_tree.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <unordered_map>

#include "analyzer/units.h"

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
    std::unordered_map<std::string, uint32_t> ids;
    std::vector<uint32_t> label_of_frame(table.size(), UINT32_MAX);
    paths_.resize(sites.size());
    for (size_t s = 0; s < sites.size(); ++s) {
      const auto& frames = sites[s].frames;
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
        uint32_t& label = label_of_frame[*it];
        if (label == UINT32_MAX) {
          auto [pos, inserted] = ids.emplace(tree_label(table.frame(*it)), labels_.size());
          if (inserted) labels_.push_back(pos->first);
          label = pos->second;
        }
        paths_[s].push_back(label);
      }
    }
    order_.resize(sites.size());
    std::iota(order_.begin(), order_.end(), 0);
    std::sort(order_.begin(), order_.end(),
              [&](uint32_t a, uint32_t b) { return paths_[a] < paths_[b]; });
  }

  CallTreeNode build() {
    CallTreeNode root;
    root.name = "all";
    root.values = sum(0, order_.size());
    for (size_t m = 0; m < kMetrics; ++m) {
      thresholds_[m] = static_cast<int64_t>(static_cast<double>(root.values[m]) * min_fraction_);
    }
    add_children(root, 0, order_.size(), 0);
    return root;
  }

 private:
  std::array<int64_t, 4> sum(size_t begin, size_t end) const {
    std::array<int64_t, 4> values{};
    for (size_t i = begin; i < end; ++i) {
      for (Metric m : kAllMetrics) {
        values[static_cast<size_t>(m)] += sites_[order_[i]].figures.value(m);
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
        child.name = labels_[label];
        child.values = values;
        add_children(child, i, j, depth + 1);
        node.children.push_back(std::move(child));
      }
      i = j;
    }
    std::sort(node.children.begin(), node.children.end(),
              [](const CallTreeNode& a, const CallTreeNode& b) { return a.name < b.name; });
  }

  const std::vector<SiteView>& sites_;
  double min_fraction_;
  std::vector<std::string> labels_;
  std::vector<std::vector<uint32_t>> paths_;
  std::vector<uint32_t> order_;
  std::array<int64_t, 4> thresholds_{};
};

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

std::string tree_label(const DisplayFrame& frame) {
  if (frame.python) return frame.function + " (" + frame.file + ")";
  return frame.name();
}

CallTreeNode build_call_tree(const std::vector<SiteView>& sites, const FrameTable& table,
                             double min_fraction) {
  return TreeBuilder(sites, table, min_fraction).build();
}

void render_call_tree(std::ostream& out, const CallTreeNode& root, Metric metric) {
  render_node(out, root, metric, root.value(metric), "", true, true);
}

void render_folded(std::ostream& out, const std::vector<SiteView>& sites, const FrameTable& table,
                   Metric metric) {
  // Labels made once per display frame: stacks repeat the same frames many times.
  std::vector<std::string> labels(table.size());
  std::vector<bool> made(table.size(), false);
  auto label_of = [&](uint32_t id) -> const std::string& {
    if (!made[id]) {
      std::string label = tree_label(table.frame(id));
      std::replace(label.begin(), label.end(), ';', ':');  // ';' separates frames
      std::replace(label.begin(), label.end(), '\n', ' ');
      labels[id] = std::move(label);
      made[id] = true;
    }
    return labels[id];
  };
  std::map<std::string, int64_t> lines;
  std::string line;
  for (const SiteView& site : sites) {
    const int64_t value = site.figures.value(metric);
    if (value <= 0) continue;
    line.clear();
    for (auto it = site.frames.rbegin(); it != site.frames.rend(); ++it) {
      if (!line.empty()) line += ';';
      line += label_of(*it);
    }
    if (line.empty()) line = "[unknown]";
    lines[line] += value;
  }
  for (const auto& [stack, value] : lines) out << stack << ' ' << value << '\n';
}

}  // namespace vramshim::analyzer
