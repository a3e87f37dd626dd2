// The labels of the sites the control thread names (the `sites` request of stats --sites, watch,
// top and the exporter), kept by stack: a label reads the symbols of every library its frames lie
// in (oom::FrameNames), which every scrape would do again. A stack's label does not change: its
// frames are the code that ran, and naming them again after their library is unloaded would name
// whatever took its place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace vramshim::runtime {

class SiteLabelCache {
 public:
  // More than the sites any request asks for; past it the cache starts again.
  static constexpr size_t kMaxLabels = 65536;

  bool contains(int32_t stack) const { return labels_.count(stack) != 0; }
  // The label of `stack`, made by make() (a std::string) the first time it is asked for.
  template <typename Make>
  const std::string& label(int32_t stack, Make&& make) {
    const auto it = labels_.find(stack);
    if (it != labels_.end()) return it->second;
    if (labels_.size() >= kMaxLabels) labels_.clear();
    return labels_.emplace(stack, make()).first->second;
  }

 private:
  std::unordered_map<int32_t, std::string> labels_;
};

}  // namespace vramshim::runtime
