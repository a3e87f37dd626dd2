#include "shim/pool/block_address_table.h"

namespace vramshim::pool {

size_t BlockAddressTable::distance_at(size_t i) const {
  const uint64_t stored = stored_distance(slots_[i]);
  if (stored < kFarDistance) return stored;
  const size_t home = home_of(support::mix_key(block_of(slots_[i])->ptr), slots_.size());
  return (i - home) & (slots_.size() - 1);
}

void BlockAddressTable::place(Slots& slots, Block* block, uint64_t hash) {
  const size_t mask = slots.size() - 1;
  size_t i = home_of(hash, slots.size());
  uint64_t distance = 0;
  for (; slots[i] != 0; i = (i + 1) & mask) ++distance;
  const Slot slot = reinterpret_cast<uintptr_t>(block) << 16 | (hash & kHashBits);
  slots[i] = with_distance(slot, distance);
}

void BlockAddressTable::erase(CUdeviceptr ptr) {
  size_t hole = index_of(ptr);
  if (hole == slots_.size()) return;
  // Pull later members of the probe run into the hole, so no tombstone is left behind: an entry
  // may move back unless its home lies after the hole.
  const size_t mask = slots_.size() - 1;
  for (size_t next = (hole + 1) & mask; slots_[next] != 0; next = (next + 1) & mask) {
    const size_t distance = distance_at(next);
    const size_t gap = (next - hole) & mask;
    if (distance < gap) continue;
    slots_[hole] = with_distance(slots_[next], distance - gap);
    hole = next;
  }
  slots_[hole] = 0;
  --count_;
}

void BlockAddressTable::grow() {
  // Built aside, so that a failed allocation leaves the table as it was. The slots keep too few
  // of the hash's bits for the larger table: each Block's address is hashed again, the Blocks a
  // few slots ahead asked for meanwhile (a million of them are scattered over 48 MiB).
  Slots grown(slots_.empty() ? kInitialSlots : slots_.size() * 2, Slot{0});
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (i + kAhead < slots_.size() && slots_[i + kAhead] != 0) {
      __builtin_prefetch(block_of(slots_[i + kAhead]));
    }
    if (slots_[i] == 0) continue;
    Block* block = block_of(slots_[i]);
    place(grown, block, support::mix_key(block->ptr));
  }
  slots_.swap(grown);
}

}  // namespace vramshim::pool
