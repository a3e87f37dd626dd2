// Where VMM allocations (cuMemCreate handles) are mapped: the driver keeps a released handle's
// memory while any mapping of it lasts, so the allocation ends at its last cuMemUnmap, not at
// cuMemRelease (releasing right after cuMemMap is the pattern NVIDIA's VMM samples show).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace vramshim::runtime {

// Mappings and releases of the handles the program maps; hooks call it around the driver's calls.
// What it cannot keep (out of host memory) it forgets, and that handle's allocation ends at its
// release, as if it were never mapped.
class VmmMappings {
 public:
  using Handles = std::vector<CUmemGenericAllocationHandle>;

  // cuMemMap of `size` bytes of `handle` at `ptr` succeeded.
  void on_mapped(CUdeviceptr ptr, size_t size, CUmemGenericAllocationHandle handle) noexcept;
  // Before cuMemRelease(handle): whether a mapping keeps its memory (its allocation then ends at
  // the last unmap, if the release succeeds: after_release).
  bool is_mapped(CUmemGenericAllocationHandle handle) const noexcept;
  // cuMemRelease of a mapped handle succeeded: false while a mapping keeps its memory, true when
  // its last mapping went meanwhile (its allocation ends now).
  bool after_release(CUmemGenericAllocationHandle handle) noexcept;
  // Before cuMemUnmap(ptr, size): the released handles whose memory that unmap would free (every
  // mapping left of them lies within the range); their allocations end before the driver can hand
  // the handles out again. Out of host memory: none.
  Handles freed_by_unmap(CUdeviceptr ptr, size_t size) const noexcept;
  // cuMemUnmap(ptr, size) succeeded: the mappings within the range are gone. Returns the released
  // handles whose last mapping that was and that `ended_before` does not list: released by another
  // thread since freed_by_unmap looked (their allocations end now).
  Handles on_unmapped(CUdeviceptr ptr, size_t size, const Handles& ended_before) noexcept;

 private:
  struct Mapping {
    size_t size;
    CUmemGenericAllocationHandle handle;
  };
  struct Handle {
    uint32_t mappings = 0;
    bool released = false;
  };
  // Calls visit(start, mapping) for each mapping lying wholly within [ptr, ptr + size).
  template <typename Visit>
  void for_each_within(CUdeviceptr ptr, size_t size, Visit&& visit) const;

  mutable std::mutex mutex_;
  std::map<CUdeviceptr, Mapping> mappings_;                           // by the mapping's start
  std::unordered_map<CUmemGenericAllocationHandle, Handle> handles_;  // mapped ones only
};

}  // namespace vramshim::runtime
