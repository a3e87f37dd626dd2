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

void DirectCharges::give_back(const Charge& charge) noexcept {
  if (charge.limit == nullptr) return;
  std::lock_guard<support::AdaptiveMutex> lock(charge.limit->device_lock());
  charge.limit->uncharge_direct(charge.bytes);
}

DirectCharges::Shard& DirectCharges::shard_of(uint64_t key) {
  // Addresses and handles differ in their middle bits; their lowest are often all zero.
  return shards_[(key ^ (key >> 12) ^ (key >> 21)) % kShards];
}

void DirectCharges::settle(const Charge& charge, bool served, uint64_t key) noexcept {
  if (charge.limit == nullptr) return;
  if (!served) {
    give_back(charge);
    return;
  }
  Charge replaced;
  bool kept = false;
  Shard& shard = shard_of(key);
  {
    std::lock_guard<std::mutex> lock(shard.mutex);
    try {
      const auto [entry, inserted] = shard.charges.try_emplace(key, charge);
      if (!inserted) replaced = std::exchange(entry->second, charge);
      kept = true;
    } catch (const std::bad_alloc&) {
    }
    shard.size.store(shard.charges.size(), std::memory_order_relaxed);
  }
  give_back(replaced);
  if (!kept) give_back(charge);
}

DirectCharges::Charge DirectCharges::take(uint64_t key) noexcept {
  Shard& shard = shard_of(key);
  // A key another thread settles now is no allocation of the caller's yet.
  if (shard.size.load(std::memory_order_relaxed) == 0) return {};
  std::lock_guard<std::mutex> lock(shard.mutex);
  const auto entry = shard.charges.find(key);
  if (entry == shard.charges.end()) return {};
  const Charge taken = entry->second;
  shard.charges.erase(entry);
  shard.size.store(shard.charges.size(), std::memory_order_relaxed);
  return taken;
}

size_t DirectCharges::size() const {
  size_t total = 0;
  for (const Shard& shard : shards_) total += shard.size.load(std::memory_order_relaxed);
  return total;
}

}  // namespace vramshim::pool
