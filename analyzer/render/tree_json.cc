#include "analyzer/render/tree_json.h"

namespace vramshim::analyzer {

nlohmann::json tree_json(const CallTreeNode& node) {
  nlohmann::json children = nlohmann::json::array();
  for (const CallTreeNode& child : node.children) children.push_back(tree_json(child));
  nlohmann::json j = {{"name", node.name},
                      {"bytes_at_peak", node.value(Metric::kBytesAtPeak)},
                      {"live_bytes", node.value(Metric::kLiveBytes)},
                      {"total_count", node.value(Metric::kAllocations)},
                      {"total_bytes", node.value(Metric::kTotalBytes)},
                      {"children", std::move(children)}};
  if (node.between_python_lines) j["interpreter"] = true;
  return j;
}

}  // namespace vramshim::analyzer
