#include "shim/attribution/live_table.h"

namespace vramshim::attribution {

// The top bits of the mixed key pick the shard; the table's home slot uses its low bits.
LiveTable::Shard& LiveTable::shard_of(uint64_t key) { return shards_[support::mix_key(key) >> 58]; }

const LiveTable::Shard& LiveTable::shard_of(uint64_t key) const {
  return shards_[support::mix_key(key) >> 58];
}

std::optional<LiveAllocation> LiveTable::insert(const LiveAllocation& allocation) {
  Shard& shard = shard_of(allocation.key);
  std::lock_guard<std::mutex> lock(shard.mutex);
  return shard.table.insert(allocation);
}

std::optional<LiveAllocation> LiveTable::erase(uint64_t key) {
  Shard& shard = shard_of(key);
  std::lock_guard<std::mutex> lock(shard.mutex);
  return shard.table.erase(key);
}

std::optional<LiveAllocation> LiveTable::find(uint64_t key) const {
  const Shard& shard = shard_of(key);
  std::lock_guard<std::mutex> lock(shard.mutex);
  const LiveAllocation* found = shard.table.find(key);
  if (found == nullptr) return std::nullopt;
  return *found;
}

size_t LiveTable::size() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    total += shard.table.size();
  }
  return total;
}

size_t LiveTable::memory_bytes() const {
  size_t total = sizeof(*this);
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    total += shard.table.memory_bytes();
  }
  return total;
}

}  // namespace vramshim::attribution
