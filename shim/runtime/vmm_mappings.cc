#include "shim/runtime/vmm_mappings.h"

namespace vramshim::runtime {

void VmmMappings::on_mapped(CUdeviceptr ptr, CUmemGenericAllocationHandle handle) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    Handle& state = handles_[handle];
    if (!mappings_.emplace(ptr, handle).second) return;  // the driver mapped nothing twice
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

std::vector<CUmemGenericAllocationHandle> VmmMappings::freed_by_unmap(CUdeviceptr ptr,
                                                                      size_t size) const noexcept {
  std::vector<CUmemGenericAllocationHandle> freed;
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    std::unordered_map<CUmemGenericAllocationHandle, uint32_t> unmapped;
    for (auto it = mappings_.lower_bound(ptr); it != mappings_.end() && it->first - ptr < size;
         ++it) {
      ++unmapped[it->second];
    }
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

void VmmMappings::on_unmapped(CUdeviceptr ptr, size_t size) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = mappings_.lower_bound(ptr);
  while (it != mappings_.end() && it->first - ptr < size) {
    const auto state = handles_.find(it->second);
    if (state != handles_.end() && --state->second.mappings == 0) handles_.erase(state);
    it = mappings_.erase(it);
  }
}

}  // namespace vramshim::runtime
