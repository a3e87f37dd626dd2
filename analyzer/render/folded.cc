#include "analyzer/render/folded.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>

#include "analyzer/model/call_tree.h"
#include "analyzer/model/figure_sum.h"
#include "analyzer/render/listed_stacks.h"

namespace vramshim::analyzer {

void render_folded(std::ostream& out, const std::vector<SiteView>& sites, const FrameTable& table,
                   Metric metric, size_t budget_bytes) {
  // Labels made once per display frame: stacks repeat the same frames many times.
  std::vector<std::string> labels(table.size());
  std::vector<bool> made(table.size(), false);
  auto label_of = [&](uint32_t id) -> const std::string& {
    if (!made[id]) {
      std::string label = listed_line(tree_label(table.frame(id)));
      std::replace(label.begin(), label.end(), ';', ':');  // ';' separates frames
      std::replace(label.begin(), label.end(), '\n', ' ');
      labels[id] = std::move(label);
      made[id] = true;
    }
    return labels[id];
  };
  std::vector<size_t> order(sites.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return sites[a].figures.value(metric) > sites[b].figures.value(metric);
  });
  std::map<std::string, int64_t> lines;
  size_t left = budget_bytes;
  size_t omitted = 0;
  int64_t omitted_value = 0;
  std::string line;
  for (size_t s : order) {
    const SiteView& site = sites[s];
    const int64_t value = site.figures.value(metric);
    if (value <= 0) break;
    // What the line costs is known before it is made: a stack past the budget is never built.
    size_t bytes = 0;
    for (uint32_t id : site.frames) bytes += label_of(id).size() + 1;
    if (bytes > left) {
      ++omitted;
      omitted_value = saturating_add(omitted_value, value);
      continue;
    }
    line.clear();
    for (auto it = site.frames.rbegin(); it != site.frames.rend(); ++it) {
      if (!line.empty()) line += ';';
      line += label_of(*it);
    }
    if (line.empty()) line = "[unknown]";
    auto [entry, added] = lines.emplace(line, 0);
    if (added) left -= std::min(left, bytes);
    entry->second = saturating_add(entry->second, value);
  }
  for (const auto& [stack, value] : lines) out << stack << ' ' << value << '\n';
  if (omitted > 0) {
    out << '[' << omitted << (omitted == 1 ? " more stack" : " more stacks")
        << " left out: the output is bounded] " << omitted_value << '\n';
  }
}

}  // namespace vramshim::analyzer
