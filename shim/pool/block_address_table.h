// The pool's Blocks by device address, in 8 bytes a slot: with a million live allocations a table
// of 16-byte slots was 40 % of the host memory they cost (docs/design.md, "Working sets"). Open
// addressing with linear probing, a power-of-two capacity, a load factor of at most 3/4 and
// backward-shift deletion, as support::AddressTable; but a slot holds no key. It holds the Block's
// pointer (the key is the Block's `ptr`), the slot's distance from the key's home slot (so that
// deletion needs no key) and 12 bits of the key's hash (so that a lookup reads a Block only when
// they match, a false match once in 4096 slots passed). Not thread-safe; the pool's lock guards it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shim/pool/block.h"
#include "shim/support/address_table.h"
#include "shim/support/huge_pages.h"

namespace vramshim::pool {

class BlockAddressTable {
 public:
  // Whether a Block at `block` can be in the table: 16-byte aligned and below 2^48, as every heap
  // and mmap address of a process that asks for no higher one (Linux on x86-64 and arm64).
  static bool can_hold(const void* block) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(block);
    return (address & 15) == 0 && address >> 48 == 0;
  }

  // The Block at `ptr`, or nullptr.
  Block* find(CUdeviceptr ptr) const {
    const size_t i = index_of(ptr);
    return i == slots_.size() ? nullptr : block_of(slots_[i]);
  }

  // Adds `block` by its `ptr`, which must not be in the table; `can_hold(block)`. Grows the table
  // (allocating; throws std::bad_alloc) when it would pass the load factor.
  void insert(Block* block) {
    make_room_for_one();
    place(slots_, block, support::mix_key(block->ptr));
    ++count_;
  }

  // Grows the table now if one more insert would (allocating), so that the next cannot fail.
  void make_room_for_one() {
    if ((count_ + 1) * 4 > slots_.size() * 3) grow();
  }

  // Removes the Block at `ptr`, if any.
  void erase(CUdeviceptr ptr);

  size_t size() const { return count_; }
  size_t memory_bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  // 0 for an empty slot; else the Block's address (its low 4 bits zero) shifted left by 16, the
  // distance from home (saturated at kFarDistance) in bits 12-19, the hash's low 12 bits below.
  using Slot = uint64_t;
  using Slots = std::vector<Slot, support::HugePageAllocator<Slot>>;
  static constexpr uint64_t kHashBits = 0xfff;
  static constexpr int kDistanceShift = 12;
  static constexpr uint64_t kFarDistance = 0xff;  // this far or farther: computed from the Block
  static constexpr size_t kInitialSlots = 16;

  static Block* block_of(Slot slot) { return reinterpret_cast<Block*>((slot >> 16) & ~Slot{15}); }
  static uint64_t stored_distance(Slot slot) { return (slot >> kDistanceShift) & kFarDistance; }
  static Slot with_distance(Slot slot, uint64_t distance) {
    const uint64_t saturated = distance < kFarDistance ? distance : kFarDistance;
    return (slot & ~(kFarDistance << kDistanceShift)) | saturated << kDistanceShift;
  }
  // The home slot of a key's hash in a table of `slots` (a power of two, at least 16): the hash's
  // top bits, which the stored low bits do not repeat.
  static size_t home_of(uint64_t hash, size_t slots) {
    return static_cast<size_t>(hash >> (64 - __builtin_ctzll(slots)));
  }

  // The slot holding `ptr`, or slots_.size().
  size_t index_of(CUdeviceptr ptr) const {
    if (slots_.empty()) return 0;
    const uint64_t hash = support::mix_key(ptr);
    const size_t mask = slots_.size() - 1;
    for (size_t i = home_of(hash, slots_.size());; i = (i + 1) & mask) {
      const Slot slot = slots_[i];
      if (slot == 0) return slots_.size();
      if (((slot ^ hash) & kHashBits) == 0 && block_of(slot)->ptr == ptr) return i;
    }
  }
  // The distance of the entry in slot `i` from its home.
  size_t distance_at(size_t i) const;
  // Puts `block`, of key hash `hash`, into the first empty slot from its home.
  static void place(Slots& slots, Block* block, uint64_t hash);
  void grow();

  Slots slots_;
  size_t count_ = 0;
};

}  // namespace vramshim::pool
