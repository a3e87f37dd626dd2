#include "shim/attribution/live_table.h"

namespace vramshim::attribution {
namespace {

constexpr size_t kInitialShardSlots = 16;

uint64_t mix(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return key;
}

}  // namespace

LiveTable::Shard& LiveTable::shard_of(uint64_t key) { return shards_[mix(key) >> 58]; }

const LiveTable::Shard& LiveTable::shard_of(uint64_t key) const { return shards_[mix(key) >> 58]; }

size_t LiveTable::Shard::home_of(uint64_t key) const {
  return (mix(key) * 0x9e3779b97f4a7c15ULL) & (slots.size() - 1);
}

size_t LiveTable::Shard::index_of(uint64_t key) const {
  if (slots.empty()) return 0;
  const size_t mask = slots.size() - 1;
  for (size_t i = home_of(key);; i = (i + 1) & mask) {
    if (slots[i].key == key) return i;
    if (slots[i].key == 0) return slots.size();
  }
}

void LiveTable::Shard::grow() {
  std::vector<LiveAllocation> old = std::move(slots);
  slots.assign(old.empty() ? kInitialShardSlots : old.size() * 2, LiveAllocation{});
  const size_t mask = slots.size() - 1;
  for (const LiveAllocation& entry : old) {
    if (entry.key == 0) continue;
    size_t i = home_of(entry.key);
    while (slots[i].key != 0) i = (i + 1) & mask;
    slots[i] = entry;
  }
}

std::optional<LiveAllocation> LiveTable::insert(const LiveAllocation& allocation) {
  Shard& shard = shard_of(allocation.key);
  std::lock_guard<std::mutex> lock(shard.mutex);
  // Keep the load factor at or below 3/4 so probe sequences stay short.
  if ((shard.count + 1) * 4 > shard.slots.size() * 3) shard.grow();
  const size_t mask = shard.slots.size() - 1;
  size_t i = shard.home_of(allocation.key);
  while (shard.slots[i].key != 0 && shard.slots[i].key != allocation.key) i = (i + 1) & mask;
  std::optional<LiveAllocation> replaced;
  if (shard.slots[i].key == allocation.key) {
    replaced = shard.slots[i];
  } else {
    ++shard.count;
  }
  shard.slots[i] = allocation;
  return replaced;
}

std::optional<LiveAllocation> LiveTable::erase(uint64_t key) {
  Shard& shard = shard_of(key);
  std::lock_guard<std::mutex> lock(shard.mutex);
  size_t hole = shard.index_of(key);
  if (hole == shard.slots.size()) return std::nullopt;
  const LiveAllocation erased = shard.slots[hole];
  // Backward-shift deletion: pull later members of the probe run into the hole, no tombstones.
  const size_t mask = shard.slots.size() - 1;
  for (size_t next = (hole + 1) & mask; shard.slots[next].key != 0; next = (next + 1) & mask) {
    const size_t home = shard.home_of(shard.slots[next].key);
    // The entry may move into the hole only if its home is not inside (hole, next].
    const bool home_after_hole = ((next - home) & mask) < ((next - hole) & mask);
    if (home_after_hole) continue;
    shard.slots[hole] = shard.slots[next];
    hole = next;
  }
  shard.slots[hole] = LiveAllocation{};
  --shard.count;
  return erased;
}

std::optional<LiveAllocation> LiveTable::find(uint64_t key) const {
  const Shard& shard = shard_of(key);
  std::lock_guard<std::mutex> lock(shard.mutex);
  const size_t i = shard.index_of(key);
  if (i == shard.slots.size()) return std::nullopt;
  return shard.slots[i];
}

size_t LiveTable::size() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    total += shard.count;
  }
  return total;
}

size_t LiveTable::memory_bytes() const {
  size_t total = sizeof(*this);
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    total += shard.slots.capacity() * sizeof(LiveAllocation);
  }
  return total;
}

}  // namespace vramshim::attribution
