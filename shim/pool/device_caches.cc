#include "shim/pool/device_caches.h"

#include <new>

#include "shim/support/room_for_one_more.h"

namespace vramshim::pool {

ThreadCache* DeviceCaches::claim(CachingPool* pool, AllocationLedger* ledger) noexcept {
  ThreadCache* chosen = nullptr;
  for (const auto& cache : caches_) {
    if (cache->pool() == nullptr) {
      chosen = cache.get();
      break;
    }
  }
  if (chosen == nullptr) {
    if (caches_.size() >= kMaxCaches) return nullptr;
    try {
      support::make_room_for_one_more(caches_);
      caches_.push_back(std::make_unique<ThreadCache>(static_cast<uint16_t>(caches_.size() + 1)));
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
    chosen = caches_.back().get();
  }
  chosen->assign(pool, ledger);
  return chosen;
}

}  // namespace vramshim::pool
