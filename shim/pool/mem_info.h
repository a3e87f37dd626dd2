// What cuMemGetInfo and cuDeviceTotalMem report under the pool and the limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace vramshim::pool {

struct MemInfo {
  size_t free = 0;
  size_t total = 0;
};

// What cuMemGetInfo should report for a device, given what the driver reported. The pool's free and
// pending bytes count as free (they are reclaimable). Under a limit the total is the limit and free
// is the limit minus the bytes in use, never more than the device could actually provide; a limit
// above the device's memory leaves the total the device's (frameworks size themselves by it).
MemInfo adjust_mem_info(MemInfo driver, uint64_t reclaimable_bytes, uint64_t in_use_bytes,
                        std::optional<uint64_t> limit);

// What cuDeviceTotalMem should report: the limit when one is set, at most the device's memory.
size_t adjust_total_mem(size_t driver_total, std::optional<uint64_t> limit);

}  // namespace vramshim::pool
