#include "shim/attribution/module_history.h"

#include <algorithm>

namespace vramshim::attribution {

void ModuleHistory::refresh() {
  if (map_.counts().same_as(report::LoaderCounts::now())) return;
  map_ = report::ModuleMap::of_this_process();
  load_of_mapped_.clear();
  for (const report::LoadedModule& module : map_.modules()) {
    const auto seen =
        std::find_if(loads_.rbegin(), loads_.rend(),
                     [&](const report::LoadedModule& load) { return load.same_load(module); });
    if (seen != loads_.rend()) {
      load_of_mapped_.push_back(static_cast<uint32_t>(loads_.rend() - seen - 1));
    } else {
      load_of_mapped_.push_back(static_cast<uint32_t>(loads_.size()));
      loads_.push_back(module);
    }
  }
}

int32_t ModuleHistory::module_of(uint64_t address) const {
  const int mapped = map_.module_of(address);
  return mapped >= 0 ? static_cast<int32_t>(load_of_mapped_[mapped]) : -1;
}

bool ModuleHistory::is_loaded(uint32_t index) const {
  return std::find(load_of_mapped_.begin(), load_of_mapped_.end(), index) != load_of_mapped_.end();
}

}  // namespace vramshim::attribution
