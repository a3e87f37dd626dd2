#include "shim/attribution/module_history.h"

#include <functional>
#include <string>

namespace vramshim::attribution {
namespace {

// A hash of what LoadedModule::same_load compares.
size_t identity_hash(const report::LoadedModule& module) {
  size_t hash = std::hash<std::string>()(module.loader_name);
  for (const uint64_t part : {module.base, module.begin, module.end}) {
    hash = (hash ^ std::hash<uint64_t>()(part)) * 0x9E3779B97F4A7C15ull;
  }
  return hash ^ std::hash<std::string>()(module.build_id);
}

// What a load holds beyond its vector slot, and its index entry (a node of the hash, its bucket).
size_t load_bytes(const report::LoadedModule& module) {
  return sizeof(report::LoadedModule) + module.path.capacity() + module.build_id.capacity() +
         module.loader_name.capacity() + module.segments.capacity() * sizeof(report::LoadSegment) +
         sizeof(size_t) + sizeof(uint32_t) + 3 * sizeof(void*);
}

}  // namespace

void ModuleHistory::refresh() {
  if (map_.counts().same_as(report::LoaderCounts::now())) return;
  forget_mapped();
  last_refresh_comparisons_ = 0;
  try {
    map_ = report::ModuleMap::of_this_process();
    for (const report::LoadedModule& module : map_.modules()) {
      const uint32_t load = load_index(module);
      load_of_mapped_.push_back(load);
      loaded_[load] = true;
    }
  } catch (...) {
    // Out of host memory: no object is mapped as far as module_of knows, and the next refresh
    // reads the map again.
    forget_mapped();
    map_ = report::ModuleMap();
    throw;
  }
}

void ModuleHistory::forget_mapped() {
  for (const uint32_t load : load_of_mapped_) loaded_[load] = false;
  load_of_mapped_.clear();
}

uint32_t ModuleHistory::load_index(const report::LoadedModule& module) {
  const size_t hash = identity_hash(module);
  const auto [first, last] = load_by_identity_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    ++last_refresh_comparisons_;
    if (loads_[it->second].same_load(module)) return it->second;
  }
  const auto load = static_cast<uint32_t>(loads_.size());
  loads_.push_back(module);
  loaded_.resize(loads_.size());  // catches up after a failed resize too
  load_by_identity_.emplace(hash, load);
  memory_bytes_ += load_bytes(module);
  return load;
}

int32_t ModuleHistory::module_of(uint64_t address) const {
  const int mapped = map_.module_of(address);
  return mapped >= 0 ? static_cast<int32_t>(load_of_mapped_[mapped]) : -1;
}

}  // namespace vramshim::attribution
