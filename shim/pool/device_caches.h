// The thread caches of every pool of one device, so that whoever holds the device lock can reach
// all of them: to fold their credits back before a new peak or a refused charge, to drain them
// before a flush.
#pragma once

#include <memory>
#include <vector>

#include "shim/pool/thread_cache.h"

namespace vramshim::pool {

// Every method requires the device lock of the device's pools. Caches are never destroyed (a
// thread may still hold a pointer to its own); one given back is handed to the next claim.
class DeviceCaches {
 public:
  static constexpr size_t kMaxCaches = 4096;

  // A cache for a thread of `pool`, with the attribution's `ledger` (optional); null when
  // kMaxCaches are taken or host memory runs out.
  ThreadCache* claim(CachingPool* pool, AllocationLedger* ledger) noexcept;
  void release(ThreadCache& cache) { cache.assign(nullptr, nullptr); }
  // The cache numbered `number` (Block::holder).
  ThreadCache& at(uint16_t number) { return *caches_[number - 1]; }

  // visit(ThreadCache&) for every cache taken by a thread of `pool`; null: of any pool.
  template <typename Visit>
  void for_each(const CachingPool* pool, Visit&& visit) {
    for (const auto& cache : caches_) {
      if (cache->pool() != nullptr && (pool == nullptr || cache->pool() == pool)) visit(*cache);
    }
  }

 private:
  std::vector<std::unique_ptr<ThreadCache>> caches_;
};

}  // namespace vramshim::pool
