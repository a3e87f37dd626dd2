#include "analyzer/render/folded.h"

#include <algorithm>
#include <map>
#include <string>

#include "analyzer/model/call_tree.h"
#include "analyzer/model/figure_sum.h"

namespace vramshim::analyzer {

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
    lines[line] = saturating_add(lines[line], value);
  }
  for (const auto& [stack, value] : lines) out << stack << ' ' << value << '\n';
}

}  // namespace vramshim::analyzer
