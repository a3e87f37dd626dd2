#include "shim/pool/direct_charges.h"

#include <new>
#include <utility>

namespace vramshim::pool {

bool DirectCharges::charge(DeviceLimit& limit, uint64_t bytes, Charge* charge) {
  std::lock_guard<support::AdaptiveMutex> lock(limit.device_lock());
  if (!limit.try_charge_direct(bytes)) return false;
  *charge = {&limit, bytes};
  return true;
}

void DirectCharges::give_back(const Charge& charge) {
  std::lock_guard<support::AdaptiveMutex> lock(charge.limit->device_lock());
  charge.limit->uncharge_direct(charge.bytes);
}

void DirectCharges::settle(const Charge& charge, bool served, uint64_t key) noexcept {
  if (charge.limit == nullptr) return;
  if (!served) {
    give_back(charge);
    return;
  }
  Charge replaced;
  bool kept = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      const auto [entry, inserted] = charges_.try_emplace(key, charge);
      if (!inserted) replaced = std::exchange(entry->second, charge);
      kept = true;
    } catch (const std::bad_alloc&) {
    }
    kept_.store(charges_.size(), std::memory_order_relaxed);
  }
  if (replaced.limit != nullptr) give_back(replaced);
  if (!kept) give_back(charge);
}

void DirectCharges::release(uint64_t key) noexcept {
  if (kept_.load(std::memory_order_relaxed) == 0) return;
  Charge released;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto entry = charges_.find(key);
    if (entry == charges_.end()) return;
    released = entry->second;
    charges_.erase(entry);
    kept_.store(charges_.size(), std::memory_order_relaxed);
  }
  give_back(released);
}

}  // namespace vramshim::pool
