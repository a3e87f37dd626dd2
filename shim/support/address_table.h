// A hash table of entries keyed by a nonzero 64-bit key (a device pointer, a VMM handle, a site's
// id), for the allocation and free hot paths: open addressing with linear probing, a power-of-two
// capacity, a load factor of at most 3/4 and backward-shift deletion (no tombstones), so a lookup
// is one multiply and a short scan of adjacent slots. Not thread-safe; the owner locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "shim/support/huge_pages.h"

namespace vramshim::support {

// Spreads a key's bits: device pointers share their high bits and are 512-byte aligned.
inline uint64_t mix_key(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return key;
}

// Entry: a copyable struct whose `key` member (uint64_t) is 0 exactly when the entry is empty.
template <typename Entry>
class AddressTable {
 public:
  // The entry of `key` (nonzero), or nullptr.
  const Entry* find(uint64_t key) const {
    const size_t i = index_of(key);
    return i == slots_.size() ? nullptr : &slots_[i];
  }

  // Stores `entry` (key nonzero); returns the entry it replaced, if the key was present. Grows the
  // table (allocating) when it would pass the load factor.
  std::optional<Entry> insert(const Entry& entry) {
    if ((count_ + 1) * 4 > slots_.size() * 3) grow();
    const size_t mask = slots_.size() - 1;
    size_t i = home_of(entry.key);
    while (slots_[i].key != 0 && slots_[i].key != entry.key) i = (i + 1) & mask;
    std::optional<Entry> replaced;
    if (slots_[i].key == entry.key) {
      replaced = slots_[i];
    } else {
      ++count_;
    }
    slots_[i] = entry;
    return replaced;
  }

  // Grows the table now if one more insert would (allocating), so that the next insert cannot fail.
  void make_room_for_one() {
    if ((count_ + 1) * 4 > slots_.size() * 3) grow();
  }
  // Removes and returns the entry of `key`; nullopt when absent.
  std::optional<Entry> erase(uint64_t key) {
    size_t hole = index_of(key);
    if (hole == slots_.size()) return std::nullopt;
    const Entry erased = slots_[hole];
    // Pull later members of the probe run into the hole, so no tombstone is left behind.
    const size_t mask = slots_.size() - 1;
    for (size_t next = (hole + 1) & mask; slots_[next].key != 0; next = (next + 1) & mask) {
      const size_t home = home_of(slots_[next].key);
      // The entry may move into the hole only if its home is not inside (hole, next].
      const bool home_after_hole = ((next - home) & mask) < ((next - hole) & mask);
      if (home_after_hole) continue;
      slots_[hole] = slots_[next];
      hole = next;
    }
    slots_[hole] = Entry{};
    --count_;
    return erased;
  }

  void clear() {
    slots_.assign(slots_.size(), Entry{});
    count_ = 0;
  }

  size_t size() const { return count_; }
  size_t memory_bytes() const { return slots_.capacity() * sizeof(Entry); }

 private:
  static constexpr size_t kInitialSlots = 16;

  size_t home_of(uint64_t key) const { return home_of_in(key, slots_.size() - 1); }
  static size_t home_of_in(uint64_t key, size_t mask) {
    return (mix_key(key) * 0x9e3779b97f4a7c15ULL) & mask;
  }

  // The slot holding `key`, or slots_.size().
  size_t index_of(uint64_t key) const {
    if (slots_.empty()) return 0;
    const size_t mask = slots_.size() - 1;
    for (size_t i = home_of(key);; i = (i + 1) & mask) {
      if (slots_[i].key == key) return i;
      if (slots_[i].key == 0) return slots_.size();
    }
  }

  void grow() {
    // Built aside, so that a failed allocation leaves the table as it was.
    Slots grown(slots_.empty() ? kInitialSlots : slots_.size() * 2, Entry{});
    const size_t mask = grown.size() - 1;
    for (const Entry& entry : slots_) {
      if (entry.key == 0) continue;
      size_t i = home_of_in(entry.key, mask);
      while (grown[i].key != 0) i = (i + 1) & mask;
      grown[i] = entry;
    }
    slots_.swap(grown);
  }

  // In huge pages once large (a million entries: 16 to 32 MiB).
  using Slots = std::vector<Entry, HugePageAllocator<Entry>>;
  Slots slots_;
  size_t count_ = 0;
};

}  // namespace vramshim::support
