#pragma once

#include <cstdint>
#include <optional>

namespace vramshim::pool {

// Figures of one pool, or the sum over the pools of one device. Names match the report's and the
// `stats` command's "devices" fields (shim/report/FORMAT.md).
struct PoolStats {
  uint64_t in_use_bytes = 0;    // bytes handed out (requests rounded to 512 B)
  uint64_t cached_bytes = 0;    // reserved and not in use: free, pending a fence, or slack
  uint64_t reserved_bytes = 0;  // held from the driver
  uint64_t peak_in_use_bytes = 0;
  uint64_t peak_reserved_bytes = 0;
  uint64_t driver_alloc_calls = 0;
  uint64_t driver_free_calls = 0;
  uint64_t pool_hits = 0;    // allocations served without a driver allocation
  uint64_t pool_misses = 0;  // allocations that needed one
  uint64_t fences_issued = 0;
  uint64_t synchronizations = 0;  // blocking waits: event or context synchronize
  uint64_t released_by_flush_bytes = 0;
  uint64_t released_by_oom_bytes = 0;
  uint64_t released_by_idle_bytes = 0;
  std::optional<uint64_t> limit_bytes;

  // Adds another pool's figures. Peaks add up, so a device's peak is an upper bound when it has
  // more than one context; the limit is the device's, the same in every pool.
  PoolStats& operator+=(const PoolStats& other);
};

}  // namespace vramshim::pool
