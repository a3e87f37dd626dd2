// How a pool behaves; the runtime fills it from the environment (README.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace vramshim::pool {

struct PoolOptions {
  // VRAMSHIM_POOL: false sends every allocate and free straight to the driver (statistics still
  // kept).
  bool enabled = true;
  // VRAMSHIM_LIMIT: per-device cap on bytes in use.
  std::optional<uint64_t> limit_bytes;
  // VRAMSHIM_MAX_CACHED: free bytes kept; past it, wholly free segments go back to the driver.
  std::optional<uint64_t> max_cached_bytes;
  // VRAMSHIM_IDLE_RELEASE: release free memory after this long with no allocation.
  std::optional<std::chrono::steady_clock::duration> idle_release;
  // Freed bytes waiting for their fence may grow to min(this, max(64 MiB, reserved / 4)); past that
  // an allocation that finds no ready block waits for the oldest fence instead of growing the pool.
  uint64_t max_pending_bytes = uint64_t{1} << 30;
  // VRAMSHIM_THREAD_CACHE: a thread that allocates gets a cache of its own (ThreadCache), through
  // which it allocates and frees without the device lock while it reuses its own freed sizes.
  bool thread_caches = true;
  // Split cached blocks to serve smaller requests. Only the pool benchmark and `vramshim replay
  // --policy no-split` turn it off, to show what splitting saves; with it off every segment is one
  // block of the rounded request size.
  bool split_blocks = true;
};

}  // namespace vramshim::pool
