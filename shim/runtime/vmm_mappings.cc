#include "shim/runtime/vmm_mappings.h"

#include <algorithm>

namespace vramshim::runtime {

template <typename Visit>
void VmmMappings::for_each_within(CUdeviceptr ptr, size_t size, Visit&& visit) const {
  for (auto it = mappings_.lower_bound(ptr); it != mappings_.end() && it->first - ptr < size;
       ++it) {
    if (it->second.size <= size - (it->first - ptr)) visit(it->first, it->second);
  }
}

void VmmMappings::on_mapped(CUdeviceptr ptr, size_t size,
                            CUmemGenericAllocationHandle handle) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    Handle& state = handles_[handle];
    if (!mappings_.emplace(ptr, Mapping{size, handle}).second) return;  // not mapped twice there
    ++state.mappings;
  } catch (...) {
    // Out of host memory: the handle's allocation ends at its release.
    const auto found = handles_.find(handle);
    if (found != handles_.end() && found->second.mappings == 0) handles_.erase(found);
  }
}

bool VmmMappings::is_mapped(CUmemGenericAllocationHandle handle) const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = handles_.find(handle);
  return found != handles_.end() && found->second.mappings > 0;
}

bool VmmMappings::after_release(CUmemGenericAllocationHandle handle) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = handles_.find(handle);
  if (found == handles_.end()) return true;  // unmapped meanwhile: the release freed it
  found->second.released = true;
  return false;
}

VmmMappings::Handles VmmMappings::freed_by_unmap(CUdeviceptr ptr, size_t size) const noexcept {
  Handles freed;
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    std::unordered_map<CUmemGenericAllocationHandle, uint32_t> unmapped;
    for_each_within(ptr, size,
                    [&](CUdeviceptr, const Mapping& mapping) { ++unmapped[mapping.handle]; });
    for (const auto& [handle, count] : unmapped) {
      const auto state = handles_.find(handle);
      if (state != handles_.end() && state->second.released && state->second.mappings == count) {
        freed.push_back(handle);
      }
    }
  } catch (...) {
    freed.clear();
  }
  return freed;
}

VmmMappings::Handles VmmMappings::on_unmapped(CUdeviceptr ptr, size_t size,
                                              const Handles& ended_before) noexcept {
  Handles ended;
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CUdeviceptr> starts;
  try {
    for_each_within(ptr, size, [&](CUdeviceptr start, const Mapping&) { starts.push_back(start); });
  } catch (...) {
    return ended;  // out of host memory: the mappings stay, and their handles attributed
  }
  for (CUdeviceptr start : starts) {
    const auto mapping = mappings_.find(start);
    const auto state = handles_.find(mapping->second.handle);
    if (state != handles_.end() && --state->second.mappings == 0) {
      const bool ends_now =
          state->second.released &&
          std::find(ended_before.begin(), ended_before.end(), state->first) == ended_before.end();
      if (ends_now) {
        try {
          ended.push_back(state->first);
        } catch (...) {
          // Out of host memory: it stays attributed.
        }
      }
      handles_.erase(state);
    }
    mappings_.erase(mapping);
  }
  return ended;
}

}  // namespace vramshim::runtime
