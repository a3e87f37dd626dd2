// The kinds of GPU-visible memory the shim attributes, one per family of driver allocation calls.
#pragma once

#include <cstdint>

namespace vramshim::attribution {

enum class AllocationKind : uint8_t {
  kDevice,   // cuMemAlloc
  kPitched,  // cuMemAllocPitch
  kAsync,    // cuMemAllocAsync, cuMemAllocFromPoolAsync (stream-ordered)
  kManaged,  // cuMemAllocManaged
  kHost,     // cuMemAllocHost, cuMemHostAlloc (pinned host memory)
  kVmm,      // cuMemCreate (keyed by the handle, retired at cuMemRelease or its last cuMemUnmap)
};

inline constexpr int kAllocationKindCount = 6;

// The report's name of a kind: "device", "pitched", "async", "managed", "host" or "vmm".
const char* allocation_kind_name(AllocationKind kind);

}  // namespace vramshim::attribution
